"""Storage API (issue 3): records, queries, formats, writes, limits."""

import json
import struct
import time

from weave import admin, new_user, request


def _u():
    user, pw = new_user("st")
    def call(method, path, body=None, headers=None):
        return request(method, f"1.0/{user}/{path}", body=body, user=user,
                       password=pw, headers=headers)
    return user, call


def test_put_get_roundtrip_and_timestamps():
    _, call = _u()
    r = call("PUT", "storage/meta/global", {"payload": '{"syncID":"x"}'})
    assert r.status == 200, r
    ts = r.headers.get("X-Weave-Timestamp")
    assert r.body.decode() == ts
    g = call("GET", "storage/meta/global")
    assert g.status == 200 and g.json()["payload"] == '{"syncID":"x"}'
    assert "%.2f" % g.json()["modified"] == ts
    assert b'"sortindex"' not in g.body and b"null" not in g.body
    info = call("GET", "info/collections").json()
    assert "%.2f" % info["meta"] == ts


def test_missing_record_404_and_empty_collection():
    _, call = _u()
    assert call("GET", "storage/keys/pubkey").status == 404
    r = call("GET", "storage/nothing")
    assert r.status == 200 and r.json() == []


def test_body_id_mismatch_is_400_8_and_bad_json_400_6():
    _, call = _u()
    r = call("PUT", "storage/c/a", {"id": "b", "payload": "x"})
    assert r.status == 400 and r.body == b"8", r
    r = call("PUT", "storage/c/a", "{not json")
    assert r.status == 400 and r.body == b"6", r
    r = call("PUT", "storage/c/a", {"payload": {"nested": 1}})
    assert r.status == 400 and r.body == b"8", r


def test_post_batch_with_invalid_items_and_strict_timestamps():
    _, call = _u()
    items = [{"id": f"id{i}", "payload": "p" * 600, "sortindex": i} for i in range(100)]
    items[5] = {"id": "bad/id", "payload": "x"}
    items[7] = {"id": "ok7", "payload": 3}
    r = call("POST", "storage/history", items)
    assert r.status == 200, r
    res = r.json()
    assert len(res["success"]) == 98 and set(res["failed"]) == {"bad/id", "ok7"}
    t1 = r.headers.get("X-Weave-Timestamp")
    assert "%.2f" % res["modified"] == t1
    r2 = call("POST", "storage/history", [{"id": "z", "payload": "y"}])
    assert float(r2.headers.get("X-Weave-Timestamp")) > float(t1)
    counts = call("GET", "info/collection_counts").json()
    assert counts == {"history": 99}


def test_queries_and_paging_are_stable():
    _, call = _u()
    items = [{"id": "r%03d" % i, "payload": "x", "sortindex": i % 7} for i in range(120)]
    assert call("POST", "storage/h", items[:100]).status == 200
    assert call("POST", "storage/h", items[100:]).status == 200
    for sort in ("index", "oldest", "newest"):
        seen = []
        for off in range(0, 120, 25):
            r = call("GET", f"storage/h?sort={sort}&limit=25&offset={off}")
            assert r.status == 200, r
            seen += r.json()
        assert sorted(seen) == sorted(i["id"] for i in items), sort
    r = call("GET", "storage/h?index_above=4&full=1").json()
    assert r and all(w["sortindex"] > 4 for w in r)
    r = call("GET", "storage/h?index_below=1").json()
    assert len(r) == len([i for i in items if i["sortindex"] < 1])
    r = call("GET", "storage/h?ids=r001,r002,nope")
    assert sorted(r.json()) == ["r001", "r002"] and r.headers.get("X-Weave-Records") == "2"
    for bad in ("newer=abc", "limit=x", "sort=bogus", "index_above=x"):
        r = call("GET", f"storage/h?{bad}")
        assert r.status == 400 and r.body == b"1", (bad, r)
    # An id no record can have matches nothing (issue 13).
    r = call("GET", "storage/h?ids=a/b")
    assert r.status == 200 and r.json() == [], r


def test_newer_and_older_together():
    _, call = _u()
    t = []
    for i in range(3):
        t.append(float(call("PUT", f"storage/c/x{i}", {"payload": "p"}).body))
    r = call("GET", f"storage/c?newer={t[0]:.2f}&older={t[2]:.2f}")
    assert r.json() == ["x1"], r


def test_output_formats_exact_bytes():
    _, call = _u()
    call("POST", "storage/f", [{"id": "a", "payload": "1"}, {"id": "b", "payload": "2"}])
    r = call("GET", "storage/f?full=1&sort=oldest", headers={"Accept": "application/newlines"})
    assert r.headers.get("Content-Type") == "application/newlines"
    lines = r.body.split(b"\n")
    assert lines[-1] == b"" and len(lines) == 3 and all(lines[:2])
    assert [json.loads(x)["id"] for x in lines[:2]] == ["a", "b"]
    r = call("GET", "storage/f?sort=oldest", headers={"Accept": "application/whoisi"})
    body, out = r.body, []
    while body:
        (n,) = struct.unpack(">I", body[:4])
        out.append(json.loads(body[4:4 + n]))
        body = body[4 + n:]
    assert out == ["a", "b"]
    r = call("GET", "storage/f", headers={"Accept": "text/html,*/*;q=0.8"})
    assert r.headers.get("Content-Type") == "application/json"


def test_ids_with_special_characters_and_plus():
    _, call = _u()
    for rid in ("{GXS58IDC}12", "a+b", "x!(y)*~.-_"):
        enc = rid.replace("{", "%7B").replace("}", "%7D")
        assert call("PUT", f"storage/b/{enc}", {"payload": "p"}).status == 200, rid
        assert call("GET", f"storage/b/{enc}").json()["id"] == rid
    r = call("GET", "storage/b?ids=a+b")
    assert r.json() == ["a+b"], r
    assert call("GET", "storage/b/a%2Fb").status in (400, 404)


def test_metadata_only_update_tombstone_and_ttl():
    _, call = _u()
    t1 = call("PUT", "storage/c/m", {"payload": "data", "sortindex": 1}).body
    call("PUT", "storage/c/m", {"sortindex": 9})
    g = call("GET", "storage/c/m").json()
    assert g["sortindex"] == 9 and g["payload"] == "data" and "%.2f" % g["modified"] == t1.decode()
    call("PUT", "storage/c/m", {"payload": ""})
    assert call("GET", "storage/c/m").json()["payload"] == ""
    call("PUT", "storage/c/gone", {"payload": "x", "ttl": 0})
    time.sleep(1.1)  # ttl 0: gone within the second
    assert call("GET", "storage/c/gone").status == 404
    assert "gone" not in call("GET", "storage/c").json()


def test_info_collections_skips_expired_records():
    _, call = _u()
    t_live = call("PUT", "storage/a/live", {"payload": "x"}).body.decode()
    call("PUT", "storage/a/dead", {"payload": "x", "ttl": 0})  # newer, expired
    call("PUT", "storage/b/dead", {"payload": "x", "ttl": 0})  # only expired
    time.sleep(1.1)
    info = call("GET", "info/collections").json()
    assert "%.2f" % info["a"] == t_live and "b" not in info, info


def test_info_collections_follows_expiry_and_admin_changes_without_a_write():
    # Each process keeps recent info/collections answers until the user
    # writes or a collection's newest record expires (account_cache.h): poll
    # often enough to fill several processes' copies, then check they let go.
    user, call = _u()
    t_live = call("PUT", "storage/a/live", {"payload": "x"}).body.decode()
    t_soon = call("PUT", "storage/a/soon", {"payload": "x", "ttl": 2}).body.decode()
    call("PUT", "storage/b/soon", {"payload": "x", "ttl": 2})
    deadline = time.time() + 1.5
    while time.time() < deadline:
        info = call("GET", "info/collections").json()
        assert "%.2f" % info["a"] == t_soon and "b" in info, info
    time.sleep(2.6 - 1.5)
    for _ in range(20):
        info = call("GET", "info/collections").json()
        assert "%.2f" % info["a"] == t_live and "b" not in info, info
    # A change made by weave-admin, not by a request, is seen too.
    admin("import", user, "-", "--replace", input="")
    for _ in range(20):
        r = call("GET", "info/collections")
        assert r.json() == {} and r.headers.get("X-Weave-Records") == "0", r


def test_info_collections_keeps_a_batch_stamp_while_one_of_its_records_lives():
    # A batch's records share its stamp: the collection keeps that stamp
    # until the last of them expires, whichever the server looked at.
    _, call = _u()
    t_old = call("PUT", "storage/a/old", {"payload": "x"}).body.decode()
    r = call("POST", "storage/a", [{"id": "short", "payload": "x", "ttl": 1},
                                   {"id": "long", "payload": "x", "ttl": 3}])
    t_batch = "%.2f" % r.json()["modified"]
    assert call("GET", "info/collections").json()["a"] == float(t_batch)
    time.sleep(1.6)
    for _ in range(10):
        assert "%.2f" % call("GET", "info/collections").json()["a"] == t_batch
    time.sleep(2.0)
    for _ in range(10):
        assert "%.2f" % call("GET", "info/collections").json()["a"] == t_old


def test_payload_limit_and_unicode():
    _, call = _u()
    big = "a" * 262144
    assert call("PUT", "storage/c/big", {"payload": big}).status == 200
    assert call("GET", "storage/c/big").json()["payload"] == big
    r = call("PUT", "storage/c/big2", {"payload": big + "a"})
    assert r.status == 400 and r.body == b"8"
    uni = "h\u00e9llo \u2603 \U0001F600"
    call("PUT", "storage/c/u", {"payload": uni})
    assert call("GET", "storage/c/u").json()["payload"] == uni


def test_too_many_records_stores_the_first_and_defers_the_rest():
    _, call = _u()
    r = call("POST", "storage/c", [{"id": f"i{i}", "payload": "x"} for i in range(101)])
    assert r.status == 200, r
    assert r.json()["failed"] == {"i100": ["retry wbo"]}, r
    assert sorted(call("GET", "storage/c").json()) == sorted(f"i{i}" for i in range(100))


def test_if_unmodified_since_and_delete_storage():
    _, call = _u()
    t = call("PUT", "storage/c/a", {"payload": "x"}).body.decode()
    r = call("PUT", "storage/c/b", {"payload": "y"},
             headers={"X-If-Unmodified-Since": "%.2f" % (float(t) - 1)})
    assert r.status == 412 and r.body == b"4", r
    r = call("PUT", "storage/c/b", {"payload": "y"}, headers={"X-If-Unmodified-Since": t})
    assert r.status == 200, r
    r = call("DELETE", "storage")
    assert r.status == 400 and r.body == b"4"
    r = call("DELETE", "storage", headers={"X-Confirm-Delete": "1"})
    assert r.status == 200
    assert call("GET", "info/collections").json() == {}


def test_delete_by_ids_and_collection():
    _, call = _u()
    call("POST", "storage/c", [{"id": f"i{i}", "payload": "x"} for i in range(10)])
    assert call("DELETE", "storage/c?ids=i1,i2").status == 200
    assert len(call("GET", "storage/c").json()) == 8
    assert call("DELETE", "storage/c/i3").status == 200
    assert call("DELETE", "storage/c?sort=oldest&limit=2").status == 200
    assert len(call("GET", "storage/c").json()) == 5
    assert call("DELETE", "storage/c").status == 200
    assert call("GET", "storage/c").json() == []


def test_quota_edge():
    user, call = _u()
    from weave import admin
    admin("user", "quota", user, "2")
    r = call("PUT", "storage/c/a", {"payload": "x" * 1500})
    assert r.status == 200 and r.headers.get("X-Weave-Quota-Remaining") is not None, r
    r = call("PUT", "storage/c/b", {"payload": "x" * 1000})
    assert r.status == 400 and r.body == b"14", r
    assert call("GET", "storage/c/b").status == 404


def test_hostile_input_keeps_server_answering():
    user, call = _u()
    for body in ("[", "null", "123", '"s"', "\x00\x01", "{" * 10000):
        r = call("POST", "storage/c", body)
        assert r.status == 400, (body[:10], r)
    r = call("POST", "storage/c", "[1,2]")
    assert r.status == 200 and r.json()["failed"] == {"": ["invalid wbo", "invalid wbo"]}, r
    assert call("PUT", "storage/c/" + "x" * 65, {"payload": "p"}).status == 400
    assert call("GET", "storage/bad%collection").status in (400, 404)
    assert call("GET", "storage/" + "c" * 33).status == 400
    assert call("GET", "info/collections").status == 200
