"""Answers as Mozilla's own servers gave them (issue 13).

One test per rule, so that our own suite holds each one without Mozilla's
functional suites: a single object on a collection URL, numeric ids,
decimal-string sortindex, when modified moves, ids= with ids that cannot
exist, the POST limits, failed keys, UTF-8 bodies, 405 under /1.1/,
doubled slashes after the mount point, negative limit/offset and
DELETE storage without confirmation.
"""

import weave
from weave import new_user, request


def _u(version="1.0"):
    user, pw = new_user("mc")

    def call(method, path, body=None, headers=None, ver=version):
        return request(method, f"{ver}/{user}/{path}", body=body, user=user,
                       password=pw, headers=headers)
    return user, pw, call


def _record(call, path):
    r = call("GET", path)
    assert r.status == 200, r
    return r.json()


def test_one_object_on_a_collection_url_is_an_item_put():
    _, _, call = _u()
    for method, rid in (("PUT", "viaput"), ("POST", "viapost")):
        r = call(method, "storage/c", {"id": rid, "payload": "x", "sortindex": 2})
        assert r.status == 200, (method, r)
        # Answered like PUT storage/c/<id>: the bare timestamp.
        assert r.body.decode() == r.headers.get("X-Weave-Timestamp"), (method, r)
        got = _record(call, f"storage/c/{rid}")
        assert got["payload"] == "x" and got["sortindex"] == 2, got
        assert "%.2f" % got["modified"] == r.body.decode(), (got, r)
    # An invalid record: 400 8 and nothing stored.
    for method in ("PUT", "POST"):
        for body in ({"payload": "no id"}, {"id": "a/b", "payload": "x"},
                     {"id": "ok", "payload": 5}, {"id": "ok", "ttl": -1}):
            r = call(method, "storage/c", body)
            assert r.status == 400 and r.body == b"8", (method, body, r)
    assert sorted(_record(call, "storage/c")) == ["viapost", "viaput"]
    # A JSON array on that URL, PUT or POST, stays a batch.
    for method in ("PUT", "POST"):
        r = call(method, "storage/d", [{"id": method, "payload": "y"}])
        assert r.status == 200, r
        answer = r.json()
        assert answer["success"] == [method] and answer["failed"] == {}, answer
        assert "%.2f" % answer["modified"] == r.headers.get("X-Weave-Timestamp")


def test_numeric_ids_are_their_decimal_text():
    _, _, call = _u()
    r = call("POST", "storage/c", [{"id": 12, "parentid": 3, "predecessorid": -4,
                                    "payload": "x"},
                                   {"id": True, "payload": "x"},
                                   {"id": "t", "parentid": {}, "payload": "x"},
                                   {"id": "u", "predecessorid": [1], "payload": "x"}])
    assert r.status == 200, r
    assert r.json()["success"] == ["12"], r
    assert r.json()["failed"] == {"": ["invalid id"], "t": ["invalid parentid"],
                                  "u": ["invalid predecessorid"]}, r
    got = _record(call, "storage/c/12")
    assert (got["id"], got["parentid"], got["predecessorid"]) == ("12", "3", "-4"), got
    # PUT on an item URL: the number matches the URL id.
    assert call("PUT", "storage/c/7", {"id": 7, "payload": "seven"}).status == 200
    assert _record(call, "storage/c/7")["payload"] == "seven"
    r = call("PUT", "storage/c/8", {"id": 7, "payload": "x"})
    assert r.status == 400 and r.body == b"8", r
    # And a single object on the collection URL.
    assert call("PUT", "storage/c", {"id": 99, "payload": "n"}).status == 200
    assert _record(call, "storage/c/99")["id"] == "99"
    assert sorted(_record(call, "storage/c?parentid=3")) == ["12"]


def test_sortindex_as_a_decimal_string_is_cut_to_an_integer():
    _, _, call = _u()
    for n, (value, want) in enumerate([("5.5", 5), ("-2.7", -2), ("7", 7), ("3.", 3),
                                       ("999999999.9", 999999999)]):
        r = call("PUT", f"storage/s/r{n}", {"payload": "p", "sortindex": value})
        assert r.status == 200, (value, r)
        assert _record(call, f"storage/s/r{n}")["sortindex"] == want, value
    # Not a number, or out of range once cut: still 400 8, nothing stored.
    for value in ("abc", "1e3", "5.5.5", " 5", "1000000000.5", "-1000000000.1"):
        r = call("PUT", "storage/s/bad", {"payload": "p", "sortindex": value})
        assert r.status == 400 and r.body == b"8", (value, r)
    assert call("GET", "storage/s/bad").status == 404


def test_modified_moves_only_when_payload_or_parentid_is_written():
    _, _, call = _u()
    first = call("PUT", "storage/c/a", {"payload": "x", "parentid": "p"}).body.decode()

    def modified():
        return "%.2f" % _record(call, "storage/c/a")["modified"]

    for change in ({"predecessorid": "b"}, {"sortindex": 4}, {"ttl": 3600},
                   {"predecessorid": "c", "sortindex": 5}):
        r = call("PUT", "storage/c/a", change)
        assert r.status == 200, (change, r)
        assert modified() == first, change
    got = _record(call, "storage/c/a")
    assert (got["predecessorid"], got["sortindex"]) == ("c", 5), got
    # The same through a POST batch.
    r = call("POST", "storage/c", [{"id": "a", "predecessorid": "d"}])
    assert r.status == 200 and modified() == first, r
    # parentid or payload: a new modified, the request's timestamp.
    for change in ({"parentid": "q"}, {"payload": "y"}):
        r = call("PUT", "storage/c/a", change)
        assert r.status == 200 and modified() == r.body.decode(), (change, r)
        assert modified() != first


def test_ids_that_cannot_exist_match_nothing():
    _, _, call = _u()
    call("POST", "storage/c", [{"id": i, "payload": "x"} for i in ("a", "b", "c")])
    long_id = "x" * 65
    r = call("GET", f"storage/c?ids=a,nope,{long_id},a%2Fb,%C3%A9,c")
    assert r.status == 200 and sorted(r.json()) == ["a", "c"], r
    assert r.headers.get("X-Weave-Records") == "2", r
    r = call("GET", f"storage/c?ids={long_id}")
    assert r.status == 200 and r.json() == [], r
    r = call("DELETE", f"storage/c?ids=b,{long_id}")
    assert r.status == 200, r
    assert sorted(_record(call, "storage/c")) == ["a", "c"]
    # Only ids that cannot exist: nothing is deleted.
    r = call("DELETE", f"storage/c?ids={long_id},a%20b")
    assert r.status == 200 and sorted(_record(call, "storage/c")) == ["a", "c"], r
    # The count limit (max_ids) stays.
    r = call("GET", "storage/c?ids=" + ",".join(["a"] * 1001))
    assert r.status == 400 and r.body == b"17", r


def test_post_over_the_record_limit_stores_the_first_and_defers_the_rest():
    _, _, call = _u()
    items = [{"id": f"i{i}", "payload": "x"} for i in range(103)]
    items[101] = {"id": "i101", "payload": 5}  # invalid: keeps its own reason
    r = call("POST", "storage/c", items)
    assert r.status == 200, r
    answer = r.json()
    assert answer["success"] == [f"i{i}" for i in range(100)], answer
    assert answer["failed"] == {"i100": ["retry wbo"],
                                "i101": ["payload needs to be json-encoded"],
                                "i102": ["retry wbo"]}, answer
    assert len(_record(call, "storage/c")) == 100
    assert call("GET", "storage/c/i100").status == 404


def test_post_over_the_byte_budget_defers_the_rest():
    _, _, call = _u()
    # max_post_bytes is 1048576 (the default): four payloads of 250000
    # bytes fit, the fifth would go over, and the small sixth comes after
    # the budget ran out.
    items = [{"id": f"b{i}", "payload": "p" * 250000} for i in range(5)]
    items.append({"id": "small", "payload": "s"})
    r = call("POST", "storage/c", items)
    assert r.status == 200, r
    answer = r.json()
    assert answer["success"] == ["b0", "b1", "b2", "b3"], answer
    assert answer["failed"] == {"b4": ["retry bytes"], "small": ["retry bytes"]}, answer
    assert sorted(_record(call, "storage/c")) == ["b0", "b1", "b2", "b3"]
    # A body over max_request_bytes is still refused whole.
    big = [{"id": f"g{i}", "payload": "p" * 250000} for i in range(9)]
    r = call("POST", "storage/c", big)
    assert r.status == 413 and r.body == b"17", r


def test_failed_keys_are_the_ids_as_sent():
    _, _, call = _u()
    long_id = "L" * 300
    spaced = "has space" + "y" * 80
    r = call("POST", "storage/c", [{"id": long_id, "payload": "x"},
                                   {"id": spaced, "payload": "x"},
                                   {"id": "ok", "payload": "x"}])
    assert r.status == 200, r
    assert r.json()["failed"] == {long_id: ["invalid id"], spaced: ["invalid id"]}, r
    assert r.json()["success"] == ["ok"], r


def test_a_body_that_is_not_utf8_is_400_6_and_nothing_is_stored():
    _, _, call = _u()
    latin1 = b'{"id":"a","payload":"caf\xe9"}'
    for method, path, body in (("PUT", "storage/c/a", latin1),
                               ("PUT", "storage/c", latin1),
                               ("POST", "storage/c", b"[" + latin1 + b"]"),
                               ("POST", "storage/c", b'[{"id":"b","payload":"ok"},'
                                                     b'{"id":"\xff","payload":"x"}]')):
        r = call(method, path, body)
        assert r.status == 400 and r.body == b"6", (method, path, r)
    assert _record(call, "storage/c") == []
    assert call("GET", "info/collections").json() == {}
    # The same characters sent as UTF-8 are stored exactly.
    r = call("PUT", "storage/c/a", '{"payload":"caf\u00e9"}')
    assert r.status == 200 and _record(call, "storage/c/a")["payload"] == "caf\u00e9", r


def test_a_method_a_resource_lacks_is_405_under_1_1():
    _, _, call = _u("1.1")
    call("PUT", "storage/c/x", {"payload": "x"})
    for method, path, allow in (("PUT", "info/collections", "GET"),
                                ("POST", "info/collections", "GET"),
                                ("DELETE", "info/quota", "GET"),
                                ("POST", "storage/c/x", "GET, PUT, DELETE"),
                                ("HEAD", "storage/c", "GET, PUT, POST, DELETE"),
                                ("PUT", "storage", "DELETE")):
        r = call(method, path, {"payload": "y"} if method in ("PUT", "POST") else None)
        assert r.status == 405, (method, path, r)
        assert r.headers.get("Allow") == allow, (method, path, r)
        if method != "HEAD":
            assert r.body == b"0", (method, path, r)
    assert _record(call, "storage/c/x")["payload"] == "x"
    assert call("GET", "info/collections").status == 200
    # /1.0/ and /1/ keep the PHP server's 400 1.
    for ver in ("1.0", "1"):
        for method, path in (("PUT", "info/collections"), ("POST", "storage/c/x")):
            r = call(method, path, {"payload": "y"}, ver=ver)
            assert r.status == 400 and r.body == b"1", (ver, method, path, r)


def test_a_doubled_slash_after_the_mount_point_is_served():
    user, pw, call = _u()
    call("PUT", "storage/c/x", {"payload": "x"})
    r = request("GET", weave.BASE_PATH + f"/1.0/{user}/storage/c/x", user=user, password=pw)
    assert r.status == 200 and r.json()["payload"] == "x", r
    r = request("PUT", weave.BASE_PATH + f"/1.0/{user}/storage/c/y", body={"payload": "y"},
                user=user, password=pw)
    assert r.status == 200 and _record(call, "storage/c/y")["payload"] == "y", r
    r = request("GET", weave.BASE_PATH + f"//user/1.0/{user}")
    assert r.status == 200 and r.body == b"1", r
    # Further down an empty segment still names nothing.
    r = request("GET", f"1.0/{user}/storage//x", user=user, password=pw)
    assert r.status == 404, r


def test_a_negative_limit_or_offset_means_none():
    _, _, call = _u()
    call("POST", "storage/c", [{"id": f"r{i}", "payload": "x", "sortindex": i}
                               for i in range(4)])
    r = call("GET", "storage/c?sort=index&limit=-5")
    assert r.status == 200 and r.json() == ["r3", "r2", "r1", "r0"], r
    r = call("GET", "storage/c?sort=index&limit=2&offset=-5")
    assert r.status == 200 and r.json() == ["r3", "r2"], r
    r = call("GET", "storage/c?limit=x")
    assert r.status == 400 and r.body == b"1", r


def test_delete_storage_without_confirmation_is_400_4():
    _, _, call = _u()
    call("PUT", "storage/c/x", {"payload": "x"})
    r = call("DELETE", "storage")
    assert r.status == 400 and r.body == b"4", r
    assert _record(call, "storage/c") == ["x"]
    r = call("DELETE", "storage", headers={"X-Confirm-Delete": "1"})
    assert r.status == 200 and call("GET", "info/collections").json() == {}, r

