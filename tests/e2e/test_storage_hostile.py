"""Hostile input for the Storage API (issue 3).

Malformed JSON, wrong types in every WBO field, bodies over the limits, bad
ids, collections and numbers, encoded slashes, dot segments, other users'
paths, overlong headers and unknown methods. Each request gets its status
and Weave error code (docs/protocol.md, Status codes, Weave error codes
and Limits; docs/admin.md), and after each one the server still answers and
nothing was written: the account's info/collections,
info/collection_counts and full records are compared before and after
every refused request.

Answers marked APACHE come from Apache itself (the request never reaches
weave.fcgi), so they carry Apache's HTML body and no Weave code.
"""

import json

import weave
from weave import basic_auth, new_user, request

APACHE = None  # expected "code" of an answer Apache gives by itself
MAX_REQUEST = 2097152       # max_request_bytes default
FCGID_MAX = 4194304         # FcgidMaxRequestLen in apache/weave.conf


class Account:
    def __init__(self, prefix="hostile"):
        self.user, self.password = new_user(prefix)
        r = self.call("POST", "storage/c", [
            {"id": "keep", "payload": "keep", "sortindex": 1, "parentid": "p"},
            {"id": "other", "payload": "other"}])
        assert r.status == 200 and r.json()["failed"] == {}, r
        r = self.call("PUT", "storage/meta/global", {"payload": "{}"})
        assert r.status == 200, r

    def call(self, method, path, body=None, headers=None, user=None, password=None):
        who = self.user if user is None else user
        return request(method, f"1.0/{who}/{path}" if not path.startswith("/") else path,
                       body=body, user=self.user,
                       password=self.password if password is None else password,
                       headers=headers)

    def snapshot(self):
        """What the account holds; each look-up must itself succeed."""
        out = []
        for path in ("info/collections", "info/collection_counts", "storage/c?full=1",
                     "storage/meta?full=1"):
            r = self.call("GET", path)
            assert r.status == 200, ("the server stopped answering", path, r)
            out.append(r.json())
        return out


def expect(acct, label, status, code, send, others=()):
    """send() must be answered `status` with body `code` (APACHE: any
    body), and must change nothing in acct or in the other accounts."""
    before = [a.snapshot() for a in (acct, *others)]
    r = send()
    assert r.status == status, (label, r)
    if code is not APACHE:
        assert r.body == str(code).encode(), (label, r)
        assert r.headers.get("Content-Type") == "application/json", (label, r)
        assert "X-Weave-Timestamp" in r.headers.names(), (label, r)
    after = [a.snapshot() for a in (acct, *others)]
    assert after == before, (label, "a refused request changed stored data")
    return r


def raw_head(acct, method, path, extra=b""):
    return (method.encode() + b" " + weave.BASE_PATH.encode() + b"1.0/" + acct.user.encode()
            + b"/" + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            + b"Authorization: " + basic_auth(acct.user, acct.password).encode() + b"\r\n"
            + extra)


# ---- malformed JSON ---------------------------------------------------------

BAD_JSON = [
    b'{"id":"keep","payload":"x"',            # truncated object
    b'[{"id":"keep","payload":"x"}',          # truncated array
    b'{"payload":"x"} trailing',              # garbage after the document
    b'{"payload":"x"}{"payload":"y"}',        # two documents
    b'[{"id":"keep","payload":"x"},]',        # trailing comma
    b"{'payload':'x'}",                       # single quotes
    b'{payload:"x"}',                         # unquoted key
    b'{"payload":"x",}',
    b'{"payload":"x"} /* comment */',
    b'{"payload":"unterminated}',
    b'{"payload":"a\x00b"}',                  # raw NUL inside a string
    b'{"payload":"x"}\x00',                   # NUL after the document
    b'\x00',
    b'{"payload":"\\x41"}',                   # invalid escape
    b'{"payload":"\\u12"}',                   # short \\u escape
    b'',                                      # empty body
    b' \r\n\t ',
    b'[' * 100000,                            # deep nesting, unterminated
    b'[' * 100 + b']' * 100,                  # deep nesting, complete
    b'{"id":"keep","payload":"x","a":' + b'{"a":' * 80 + b'1' + b'}' * 81,
    b'}',
    b'\xef\xbb\xbf{"payload":"x"}',           # UTF-8 byte order mark
]


def test_malformed_json_is_400_6_and_nothing_written():
    acct = Account()
    for body in BAD_JSON:
        label = repr(body[:40])
        expect(acct, "PUT " + label, 400, 6,
               lambda: acct.call("PUT", "storage/c/keep", body))
        expect(acct, "POST " + label, 400, 6,
               lambda: acct.call("POST", "storage/c", body))
    # Content-Type does not matter: JSON is parsed (or refused) whatever it says.
    for ctype in ("text/plain", "application/x-www-form-urlencoded", "image/png"):
        expect(acct, "PUT as " + ctype, 400, 6, lambda: acct.call(
            "PUT", "storage/c/keep", b'{"payload":', headers={"Content-Type": ctype}))


def test_non_utf8_bodies_are_400_6_and_nul_escapes_round_trip():
    """A JSON body that is not UTF-8 is refused, 400 6, as both Mozilla
    servers did (issue 13); escapes and valid UTF-8 are stored exactly."""
    acct = Account()
    for body in (b'{"payload":"caf\xe9"}',
                 b'{"payload":"\xc0\xaf"}',             # overlong UTF-8
                 b'{"payload":"\xed\xa0\x80"}',         # UTF-16 surrogate
                 b'{"payload":"\xf4\x90\x80\x80"}'):    # > U+10FFFF
        expect(acct, repr(body), 400, 6, lambda: acct.call("PUT", "storage/c/keep", body))
    cases = [(b'{"payload":"a\\u0000b"}', "a\u0000b"),              # escaped NUL
             (b'{"payload":"a\x01\tb"}', "a\u0001\tb"),  # raw controls: json-c takes them
             (b'{"payload":"\xe2\x98\x83 ok"}', "\u2603 ok")]       # valid UTF-8 stays
    for n, (body, want) in enumerate(cases):
        r = acct.call("PUT", f"storage/u/r{n}", body)
        assert r.status == 200, (body, r)
        r = acct.call("GET", f"storage/u/r{n}")
        assert r.status == 200 and r.json()["payload"] == want, (body, r)
    r = acct.call("GET", "storage/u/r0")
    assert b'"payload":"a\\u0000b"' in r.body, r  # escaped on output, never raw
    r = acct.call("GET", "storage/u/r1")
    assert b'"payload":"a\\u0001\\tb"' in r.body, r


# ---- wrong types --------------------------------------------------------------

WRONG = {
    "id": ([1.5, [], {}, True, False, "", "x" * 65, "a/b", "a,b", "a b",
            "\u00e9", "tab\t", "\u0000"], "invalid id"),
    "parentid": ([1.5, [], {}, True, "", "x" * 65, "a/b", "a,b"], "invalid parentid"),
    "predecessorid": ([1.5, [], {}, False, "", "x" * 65, "a b"], "invalid predecessorid"),
    "sortindex": (["abc", "", "1e3", "0x10", [], {}, True, 1000000000, -1000000000,
                   "1000000000", 1e300, 99999999999999999999], "invalid sortindex"),
    "payload": ([1, 1.5, [], {}, {"ciphertext": "x"}, True, ["a"]],
                "payload needs to be json-encoded"),
    "ttl": (["10", -1, 1.5, 31536001, 2 ** 63, True, [], {}, "x"], "invalid ttl"),
}


def test_wrong_types_for_every_field():
    acct = Account()
    for field, (values, reason) in WRONG.items():
        for value in values:
            label = f"{field}={json.dumps(value)[:30]}"
            item = {"id": "keep", "payload": "changed"}
            item[field] = value
            expect(acct, "PUT " + label, 400, 8,
                   lambda: acct.call("PUT", "storage/c/keep", item))
            r = expect(acct, "POST " + label, 200, APACHE,
                       lambda: acct.call("POST", "storage/c", [item]))
            answer = r.json()
            # failed is keyed by the item's id as sent, "" when it has no
            # usable one. A NUL ends the key: ids are C strings inside the server.
            key = "keep" if field != "id" else \
                value.split("\0")[0] if isinstance(value, str) else ""
            assert answer["success"] == [] and answer["failed"] == {key: [reason]}, (label, answer)
    # Bodies of the wrong JSON type.
    for body in ([], [{"payload": "x"}], "s", 1, -2.5, True):
        expect(acct, f"PUT body {body!r}", 400, 8,
               lambda: acct.call("PUT", "storage/c/keep", json.dumps(body)))
    for body in ("s", 1, -2.5, True):
        expect(acct, f"POST body {body!r}", 400, 8,
               lambda: acct.call("POST", "storage/c", json.dumps(body)))
    # A bare null is read as no value at all: a JSON failure.
    expect(acct, "PUT body null", 400, 6, lambda: acct.call("PUT", "storage/c/keep", b"null"))
    expect(acct, "POST body null", 400, 6, lambda: acct.call("POST", "storage/c", b"null"))
    # Items that are not objects are failed, one reason each, keyed "".
    r = expect(acct, "POST of non-objects", 200, APACHE, lambda: acct.call(
        "POST", "storage/c", json.dumps([1, "s", None, [], True])))
    assert r.json()["failed"] == {"": ["invalid wbo"] * 5} and r.json()["success"] == [], r
    # A valid item next to invalid ones is written; the invalid ones are not.
    r = acct.call("POST", "storage/c", [{"id": "fine", "payload": "ok"},
                                        {"id": "keep", "payload": 5},
                                        {"id": "bad/id", "payload": "x"}])
    assert r.status == 200 and r.json()["success"] == ["fine"], r
    assert set(r.json()["failed"]) == {"keep", "bad/id"}, r
    assert acct.call("GET", "storage/c/keep").json()["payload"] == "keep"


def test_lenient_but_documented_conversions():
    """docs/protocol.md, Records: numeric strings and floats are sortindex
    values (truncated, as PY did); null is an absent member; "modified"
    from the client is ignored."""
    acct = Account()
    for n, (value, want) in enumerate([("12", 12), (1.5, 1), (-7.9, -7), (999999999, 999999999)]):
        r = acct.call("PUT", f"storage/v/s{n}", {"payload": "p", "sortindex": value})
        assert r.status == 200, (value, r)
        assert acct.call("GET", f"storage/v/s{n}").json()["sortindex"] == want, value
    r = acct.call("PUT", "storage/c/keep", {"payload": None, "parentid": None,
                                            "sortindex": None, "modified": "garbage"})
    assert r.status == 200, r
    got = acct.call("GET", "storage/c/keep").json()
    assert (got["payload"], got["parentid"], got["sortindex"]) == ("keep", "p", 1), got
    r = acct.call("PUT", "storage/c/keep", {"payload": "new", "modified": 1.0})
    assert "%.2f" % acct.call("GET", "storage/c/keep").json()["modified"] == r.text


# ---- sizes ----------------------------------------------------------------------

def _body_of(size):
    """A valid one-record JSON body of exactly `size` bytes."""
    head, tail = b'{"payload":"', b'"}'
    return head + b"x" * (size - len(head) - len(tail)) + tail


def _chunked(body, size=65536):
    return b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + size]), body[i:i + size])
                    for i in range(0, len(body), size)) + b"0\r\n\r\n"


def test_huge_bodies():
    acct = Account()
    # Over max_request_bytes, under FcgidMaxRequestLen: weave-server's 413 17.
    for size in (MAX_REQUEST + 1, 3 * 1024 * 1024, FCGID_MAX):
        body = _body_of(size)
        expect(acct, f"PUT {size}", 413, 17, lambda: acct.call("PUT", "storage/c/big", body))
        array = b"[" + _body_of(size - 2) + b"]"
        expect(acct, f"POST {size}", 413, 17, lambda: acct.call("POST", "storage/c", array))
    # Chunked (no Content-Length): counted while read, same answer.
    body = _body_of(3 * 1024 * 1024)
    expect(acct, "chunked 3 MiB", 413, 17, lambda: weave.raw_request(
        raw_head(acct, "PUT", b"storage/c/big", b"Transfer-Encoding: chunked\r\n\r\n")
        + _chunked(body)))
    # Over FcgidMaxRequestLen, declared or chunked: the same 413 17, not
    # mod_fcgid's bare 500 (apache/weave.conf: LimitRequestBody stops the
    # body first, and SetEnvIf keeps the declared length for the server).
    for size in (FCGID_MAX + 1, 5 * 1024 * 1024, 64 * 1024 * 1024):
        body = _body_of(size)
        expect(acct, f"PUT {size} declared", 413, 17,
               lambda: weave.raw_request(raw_head(acct, "PUT", b"storage/c/big",
                                         b"Content-Length: %d\r\n\r\n" % len(body)) + body))
        expect(acct, f"PUT {size} chunked", 413, 17, lambda: weave.raw_request(
            raw_head(acct, "PUT", b"storage/c/big", b"Transfer-Encoding: chunked\r\n\r\n")
            + _chunked(body)))
    # A declared length that is no number: Apache refuses it.
    expect(acct, "Content-Length: abc", 400, APACHE, lambda: weave.raw_request(
        raw_head(acct, "PUT", b"storage/c/big", b"Content-Length: abc\r\n\r\n{}")))
    # Just under the limit with a payload over max_payload_bytes: 400 8.
    expect(acct, "payload 1 MiB", 400, 8, lambda: acct.call(
        "PUT", "storage/c/big", _body_of(1024 * 1024)))
    # Too many records: the first max_post_records are stored, the rest
    # deferred ("retry wbo"; tests/e2e/test_mozilla_compat.py).
    r = acct.call("POST", "storage/c", [{"id": f"n{i}", "payload": "x"} for i in range(101)])
    assert r.status == 200 and r.json()["failed"] == {"n100": ["retry wbo"]}, r


# ---- ids, collections, users in the path ------------------------------------------

def test_bad_ids_collections_and_users():
    acct = Account()
    bad_ids = ["x" * 65, "a%20b", "a,b", "a%2Cb", "a%01b", "a%7Fb", "%C3%A9", "a%09b", "%FF"]
    for rid in bad_ids:
        for method, body in (("PUT", {"payload": "x"}), ("GET", None), ("DELETE", None)):
            expect(acct, f"{method} id {rid[:20]}", 400, 8,
                   lambda: acct.call(method, f"storage/c/{rid}", body))
    # 64 bytes is still an id (the limit itself works), and so is any other
    # printable ASCII; JSON-special characters come back escaped.
    assert acct.call("PUT", "storage/ok/" + "y" * 64, {"payload": "x"}).status == 200
    assert acct.call("PUT", "storage/ok/a%22b%5Cc", {"payload": "x"}).status == 200
    r = acct.call("GET", "storage/ok?ids=a%22b%5Cc")
    assert r.body == b'["a\\"b\\\\c"]' and r.json() == ['a"b\\c'], r
    # NUL and malformed escapes: Apache (404 for %00, 400 for %zz) or we (400 0).
    expect(acct, "id %00", 404, APACHE, lambda: acct.call("PUT", "storage/c/a%00b", {"payload": "x"}))
    expect(acct, "id %zz", 400, APACHE, lambda: acct.call("PUT", "storage/c/a%zz", {"payload": "x"}))
    expect(acct, "ids=%00", 400, 0, lambda: acct.call("DELETE", "storage/c?ids=a%00"))
    expect(acct, "empty id", 404, 0, lambda: acct.call("PUT", "storage/c//x", {"payload": "x"}))
    # ids= lists: an id no record can have matches nothing (issue 13).
    for ids in ("x" * 65, "a%2Fb", "a%20b", "nope,a/b", "nope,%C3%A9"):
        r = expect(acct, f"DELETE ids={ids[:20]}", 200, APACHE,
                   lambda: acct.call("DELETE", f"storage/c?ids={ids}"))
        r = expect(acct, f"GET ids={ids[:20]}", 200, APACHE,
                   lambda: acct.call("GET", f"storage/c?ids={ids}"))
        assert r.json() == [], (ids, r)
    expect(acct, "1001 ids", 400, 17, lambda: acct.call(
        "DELETE", "storage/c?ids=" + ",".join(["keep"] * 1001)))
    # Collections.
    for coll in ("c" * 33, "c!", "%C3%A9", "a%20b", "a%2Cb", "a~b"):
        for method, body in (("PUT", {"payload": "x"}), ("GET", None), ("POST", [])):
            path = f"storage/{coll}/x" if method == "PUT" else f"storage/{coll}"
            expect(acct, f"{method} coll {coll[:20]}", 400, 13,
                   lambda: acct.call(method, path, body))
    expect(acct, "empty collection", 404, 0, lambda: acct.call("GET", "storage//x"))
    # User names in the path: checked before authentication.
    for name in ("bad!user", "u" * 33, "a%20b", "%C3%A9"):
        expect(acct, f"user {name[:20]}", 400, 3, lambda: acct.call(
            "GET", "info/collections", user=name))


def test_encoded_slashes():
    acct = Account()
    for path, code in (("storage/c/a%2Fb", 8), ("storage/c/a%2fb", 8), ("storage/c/%2F", 8),
                       ("storage/a%2Fb/x", 13), ("storage/a%2Fb", 13),
                       ("storage/c%2F..%2F..%2Fx/y", 13), ("storage%2Fc/x", 11)):
        for method, body in (("PUT", {"payload": "x"}), ("GET", None), ("DELETE", None)):
            expect(acct, f"{method} {path}", 400, code, lambda: acct.call(method, path, body))
    expect(acct, "user a%2Fb", 400, 3, lambda: acct.call("GET", "info/collections",
                                                          user="a%2Fb"))
    # In ids= a decoded "/" is part of an id that cannot exist: nothing matches.
    expect(acct, "ids with %2F", 200, APACHE, lambda: acct.call("DELETE", "storage/c?ids=nope,a%2Fb"))
    # Decoded once only: %252F is the literal id "a%2Fb", a valid id.
    r = acct.call("PUT", "storage/lit/a%252Fb", {"payload": "x"})
    assert r.status == 200, r
    assert acct.call("GET", "storage/lit").json() == ["a%2Fb"]


def test_dot_segments_are_refused():
    acct = Account()
    for seg in ("..", ".", "%2E%2E", "%2e.", "%2E"):
        for method, path, body in (("PUT", f"storage/c/{seg}", {"payload": "x"}),
                                   ("GET", f"storage/c/{seg}", None),
                                   ("DELETE", f"storage/c/{seg}", None),
                                   ("POST", f"storage/{seg}", [{"id": "z", "payload": "x"}]),
                                   ("GET", f"storage/{seg}/info/collections", None)):
            # With X-Confirm-Delete, "storage/c/.." would be "DELETE storage"
            # (everything) to anyone who normalised it.
            hdrs = {"X-Confirm-Delete": "1"}
            expect(acct, f"{method} {path}", 400, 0,
                   lambda: acct.call(method, path, body, headers=hdrs))
    # Climbing out of the mount point: Apache normalises and refuses or
    # maps it elsewhere; never a write here.
    expect(acct, "climb", 400, APACHE, lambda: weave.raw_request(
        b"GET /../../weave/1.0/" + acct.user.encode() + b"/info/collections HTTP/1.1\r\n"
        b"Host: x\r\nConnection: close\r\n\r\n"))
    expect(acct, "dot segment after the mount point", 400, 0, lambda: weave.raw_request(
        b"GET " + weave.BASE_PATH.encode() + b"../weave/1.0/" + acct.user.encode()
        + b"/info/collections HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        + b"Authorization: " + basic_auth(acct.user, acct.password).encode() + b"\r\n\r\n"))


# ---- numbers ------------------------------------------------------------------------

BAD_QUERIES = [
    "newer=abc", "newer=", "newer=1e400", "newer=-1", "newer=1e3", "newer=0x10",
    "newer=99999999999999999999", "newer=1.", "newer=.5", "newer=1%2C5", "newer=%201",
    "older=abc", "older=-5", "older=1.2.3",
    "limit=1.5", "limit=abc", "limit=", "limit=99999999999", "limit=1e400",
    "offset=x", "offset=2147483648",
    "index_above=abc", "index_above=1e400", "index_above=3000000000", "index_above=1.5",
    "index_below=-3000000000", "index_below=",
    "sort=", "sort=NEWEST", "sort=random", "sort=index%00",
]


def test_bad_numbers_and_sorts_are_400_1():
    acct = Account()
    for q in BAD_QUERIES:
        for method in ("GET", "DELETE"):
            expect(acct, f"{method} ?{q}", 400, 1 if "%00" not in q else 0,
                   lambda: acct.call(method, f"storage/c?{q}"))
    for value in ("abc", "", "-1", "1e400", "1" * 7000, "1,5", "1.2.3"):
        hdrs = {"X-If-Unmodified-Since": value}
        for method, path, body in (("PUT", "storage/c/keep", {"payload": "y"}),
                                   ("POST", "storage/c", [{"id": "keep", "payload": "y"}]),
                                   ("DELETE", "storage/c/keep", None),
                                   ("DELETE", "storage/c", None)):
            expect(acct, f"{method} X-If-Unmodified-Since {value[:12]}", 400, 1,
                   lambda: acct.call(method, path, body, headers=hdrs))
    # Numbers in the body: out of range or overflowing -> 400 8 (see also WRONG).
    # json-c reads NaN and Infinity although JSON has neither; as numbers
    # they are no valid sortindex or ttl either.
    for body in (b'{"payload":"y","sortindex":1e400}', b'{"payload":"y","ttl":1e400}',
                 b'{"payload":"y","sortindex":NaN}', b'{"payload":"y","sortindex":-Infinity}',
                 b'{"payload":"y","ttl":Infinity}',
                 b'{"payload":"y","sortindex":-99999999999999999999}',
                 b'{"payload":"y","ttl":-0.5}', b'{"payload":"y","ttl":99999999999999999999}'):
        expect(acct, f"PUT {body!r}", 400, 8, lambda: acct.call("PUT", "storage/c/keep", body))


# ---- other users' paths ---------------------------------------------------------------

def test_other_users_paths_are_401_5():
    alice, bob = Account("alice"), Account("bob")
    cases = [("GET", "info/collections", None), ("GET", "info/quota", None),
             ("GET", "storage/c?full=1", None), ("GET", "storage/c/keep", None),
             ("PUT", "storage/c/keep", {"payload": "stolen"}),
             ("POST", "storage/c", [{"id": "keep", "payload": "stolen"}]),
             ("DELETE", "storage/c/keep", None), ("DELETE", "storage/c", None),
             ("DELETE", "storage", None)]
    for method, path, body in cases:
        r = expect(alice, f"alice {method} bob/{path}", 401, 5, lambda: alice.call(
            method, path, body, user=bob.user, headers={"X-Confirm-Delete": "1"}), others=[bob])
        # 5 is not a login failure: no new credentials are asked for.
        assert r.headers.get("WWW-Authenticate") is None, r
        r = expect(alice, f"alice {method} nobody/{path}", 401, 5, lambda: alice.call(
            method, path, body, user="nosuchuser" + alice.user[-8:]), others=[bob])
    # An e-mail style path user maps to another (hashed) name: still not alice.
    expect(alice, "e-mail path", 401, 5, lambda: alice.call(
        "GET", "info/collections", user=alice.user + "@example.com"), others=[bob])
    # Bob's path with a wrong password: a plain login failure.
    r = expect(alice, "wrong password", 401, 0, lambda: alice.call(
        "GET", "info/collections", user=bob.user, password="nope"), others=[bob])
    assert r.headers.get("WWW-Authenticate") == 'Basic realm="Weave"', r
    # The own name in another case is the same account (names are lower-cased).
    assert alice.call("GET", "info/collections", user=alice.user.upper()).status == 200


# ---- headers and methods ------------------------------------------------------------------

def test_overlong_headers_and_uris():
    acct = Account()
    expect(acct, "Authorization 6 KB", 401, 0, lambda: acct.call(
        "GET", "info/collections", headers={"Authorization": "Basic " + "QUFB" * 1500}))
    expect(acct, "Authorization 12 KB", 400, APACHE, lambda: acct.call(
        "GET", "info/collections", headers={"Authorization": "Basic " + "QUFB" * 3000}))
    expect(acct, "X-If-Unmodified-Since 7 KB", 400, 1, lambda: acct.call(
        "PUT", "storage/c/keep", {"payload": "y"}, headers={"X-If-Unmodified-Since": "9" * 7000}))
    r = acct.call("GET", "storage/c", headers={"Accept": "application/x-nothing;q=0.5," * 200})
    assert r.status == 200 and r.headers.get("Content-Type") == "application/json", r
    expect(acct, "header line 9 KB", 400, APACHE, lambda: acct.call(
        "PUT", "storage/c/keep", {"payload": "y"}, headers={"X-Junk": "a" * 9000}))
    expect(acct, "200 headers", 400, APACHE, lambda: acct.call(
        "PUT", "storage/c/keep", {"payload": "y"}, headers=[(f"X-H{i}", "v") for i in range(200)]))
    expect(acct, "URI 9 KB", 414, APACHE, lambda: acct.call(
        "DELETE", "storage/c?ids=" + ",".join(["keep"] * 1800)))
    expect(acct, "too many parameters", 400, 0, lambda: acct.call(
        "DELETE", "storage/c?" + "&".join(f"p{i}=1" for i in range(40))))
    expect(acct, "too many segments", 404, 0, lambda: acct.call(
        "PUT", "storage/c/a/b/c/d/e/f", {"payload": "y"}))


def test_unknown_methods_are_400_1():
    acct = Account()
    for method in ("PATCH", "OPTIONS", "PROPFIND", "MKCOL", "LOCK", "COPY", "FOO", "get", "Put"):
        for path in ("storage/c/keep", "storage/c", "storage", "info/collections", "info/bogus"):
            expect(acct, f"{method} {path}", 400, 1, lambda: acct.call(
                method, path, {"id": "keep", "payload": "y"}))
    r = expect(acct, "HEAD", 400, APACHE, lambda: acct.call("HEAD", "storage/c/keep"))
    assert r.body == b"" and r.headers.get("X-Weave-Timestamp"), r
    expect(acct, "TRACE", 405, APACHE, lambda: acct.call("TRACE", "storage/c/keep"))
    # Known paths, methods they do not take: 400 1 as well.
    for method, path in (("POST", "storage/c/keep"), ("PUT", "info/collections"),
                         ("POST", "storage"), ("PUT", "storage"), ("DELETE", "info/quota"),
                         ("GET", "storage")):
        expect(acct, f"{method} {path}", 400, 1, lambda: acct.call(
            method, path, [{"id": "keep", "payload": "y"}] if method != "GET" else None))
