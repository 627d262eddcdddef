"""Paging through 1 000 records with limit/offset under each sort (issue 3).

Records POSTed in one request share one `modified`, and sortindex values
repeat, so only the deterministic tie-break (id, byte order) makes
limit/offset paging stable: every record must come back exactly once, in
exactly the order docs/protocol.md, Query parameters, gives (oldest =
modified ascending, newest = modified descending, index = sortindex
descending, records without a sortindex last; ties by id ascending).
"""

import json
import random

from weave import new_user, request

GUID_CHARS = "!()*-.0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~"
N = 1000
PAGE = 97  # does not divide 1000: the last page is short


def _user():
    user, pw = new_user("page")

    def call(method, path, body=None, headers=None):
        r = request(method, f"1.1/{user}/{path}", body=body, user=user,
                    password=pw, headers=headers)
        assert r.headers.get("X-Weave-Timestamp"), r
        return r
    return call


def _orders(records):
    def by_id(w):
        return w["id"].encode()
    return {
        "oldest": sorted(records, key=lambda w: (w["modified"], by_id(w))),
        "newest": sorted(records, key=lambda w: (-w["modified"], by_id(w))),
        "index": sorted(records, key=lambda w: (0, -w["sortindex"], by_id(w))
                        if "sortindex" in w else (1, 0, by_id(w))),
    }


def _upload(call, rng):
    """1 000 records in ten 100-record POSTs; returns them with modified."""
    ids = set()
    while len(ids) < N:
        # Case matters (ids are binary): "aB" and "Ab" are two records.
        ids.add("".join(rng.choice(GUID_CHARS) for _ in range(rng.choice([2, 10, 12]))))
    ids = sorted(ids)
    rng.shuffle(ids)
    records = []
    for at in range(0, N, 100):
        batch = []
        for rid in ids[at:at + 100]:
            w = {"id": rid, "payload": json.dumps({"ciphertext": "x" * rng.randint(10, 60)})}
            if rng.random() < 0.9:  # a tenth have no sortindex at all
                w["sortindex"] = rng.choice([-5, 0, 0, 7, 7, 7, 100, 999999999, -999999999])
            batch.append(w)
        r = call("POST", "storage/hist", batch)
        assert r.status == 200 and r.json()["failed"] == {}, r
        modified = round(r.json()["modified"] * 100)
        for w in batch:
            records.append(dict(w, modified=modified))
    assert len({w["modified"] for w in records}) == 10
    return records


def _page_all(call, query, limit, expect_pages):
    seen, pages, offset = [], 0, 0
    while True:
        r = call("GET", f"storage/hist?{query}&limit={limit}&offset={offset}")
        assert r.status == 200, r
        page = r.json()
        assert r.headers.get("X-Weave-Records") == str(len(page)), r
        pages += 1
        seen += page
        if len(page) < limit:
            break
        offset += limit
    assert pages == expect_pages, (query, pages)
    return seen


def test_paging_1000_records_by_each_sort():
    call = _user()
    rng = random.Random(4242)
    records = _upload(call, rng)
    orders = _orders(records)
    ties = sum(1 for a, b in zip(orders["index"], orders["index"][1:])
               if a.get("sortindex") == b.get("sortindex"))
    assert ties > 900, "the data must be full of ties for this test to mean anything"

    for sort, want in orders.items():
        seen = _page_all(call, f"sort={sort}", PAGE, N // PAGE + 1)
        assert len(seen) == N and len(set(seen)) == N, sort  # each record once
        assert seen == [w["id"] for w in want], f"sort={sort}: order differs"
        # The unpaged list agrees with the pages.
        r = call("GET", f"storage/hist?sort={sort}")
        assert r.json() == seen, sort

    # Past the end: an empty page, not an error.
    r = call("GET", f"storage/hist?sort=index&limit={PAGE}&offset={N}")
    assert r.status == 200 and r.json() == [] and r.headers.get("X-Weave-Records") == "0", r


def test_paging_full_records_newlines_and_with_newer():
    call = _user()
    records = _upload(call, random.Random(777))
    want = _orders(records)

    # Full records, newlines, 250 per page: every field as stored.
    got = []
    for offset in range(0, N, 250):
        r = call("GET", f"storage/hist?full=1&sort=index&limit=250&offset={offset}",
                 headers={"Accept": "application/newlines"})
        assert r.headers.get("Content-Type") == "application/newlines", r
        assert r.body.endswith(b"\n") and b"\n\n" not in r.body
        got += [json.loads(line) for line in r.body.split(b"\n")[:-1]]
    assert len(got) == N
    for rec, w in zip(got, want["index"]):
        assert rec["id"] == w["id"] and round(rec["modified"] * 100) == w["modified"], (rec, w)
        assert rec.get("sortindex") == w.get("sortindex") and rec["payload"] == w["payload"]

    # newer + sort + paging: only the last four batches, still in order.
    stamps = sorted({w["modified"] for w in records})
    cut = stamps[5]
    newer = "%d.%02d" % divmod(cut, 100)
    tail = [w["id"] for w in want["oldest"] if w["modified"] > cut]
    assert len(tail) == 400
    seen = _page_all(call, f"newer={newer}&sort=oldest", 64, 400 // 64 + 1)
    assert seen == tail
    seen = _page_all(call, f"newer={newer}&sort=newest", 64, 400 // 64 + 1)
    assert seen == [w["id"] for w in want["newest"] if w["modified"] > cut]

    # A DELETE with sort/limit/offset removes exactly that page.
    victims = [w["id"] for w in want["oldest"][150:300]]
    r = call("DELETE", "storage/hist?sort=oldest&limit=150&offset=150")
    assert r.status == 200, r
    r = call("GET", "storage/hist?sort=oldest")
    assert r.json() == [w["id"] for w in want["oldest"] if w["id"] not in set(victims)], r
