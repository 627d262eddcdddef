"""Record history (issue 19): writes keep what they replace or delete,
`weave-admin user history` shows who wrote what, `weave-admin user
restore` undoes a stale device's overwrite, history_days / purge and
history_max_kb bound what is kept.

The main stack keeps history (history_days is 14 by default). Second
Apaches (loadkit.second_apache) on the same database serve with history
off and with a small history_max_kb; they are stopped at exit.
"""

import atexit
import json
import secrets

import loadkit
from weave import admin, new_user, read_config, request, sql

STALE_AGENT = "StaleFox/1.0 (a device back from a long trip)"
_servers = {}


def server(name, settings):
    if name not in _servers:
        port, apache = loadkit.second_apache(name, settings)
        atexit.register(loadkit.stack_lib_run, 'stack_apache_stop "$1"', apache)
        _servers[name] = port
    return _servers[name]


def call(method, path, user, pw, body=None, agent=None, port=None):
    headers = {"User-Agent": agent} if agent else None
    return request(method, f"1.1/{user}/{path}", body=body, user=user, password=pw,
                   headers=headers, port=port)


def stamp_of(r):
    assert r.status == 200, (r.status, r.body)
    return r.headers.get("X-Weave-Timestamp")


def payload(tag):
    # Encrypted-looking text with a non-ASCII character and escapes, so
    # byte-identical means byte-identical.
    return json.dumps({"ciphertext": secrets.token_urlsafe(48), "tag": tag,
                       "note": "caf\u00e9 \"q\" \\ /"})


def records(user, pw, coll, newer=None):
    q = f"storage/{coll}?full=1" + (f"&newer={newer}" if newer else "")
    r = call("GET", q, user, pw)
    assert r.status == 200, r.body
    return {w["id"]: w for w in r.json()}


def history(user, *extra):
    return json.loads(admin("user", "history", user, *extra, "--json").stdout)


def restore(user, *args, check=True):
    return admin("user", "restore", user, *args, check=check)


def test_restore_undoes_a_stale_device():
    user, pw = new_user("hist")
    ids = [f"bm{i:03d}{secrets.token_hex(3)}" for i in range(200)]
    good = [{"id": i, "payload": payload(f"good {i}"), "sortindex": n,
             "parentid": "menu" if n % 2 else None} for n, i in enumerate(ids)]
    for w in good:
        if w["parentid"] is None:
            del w["parentid"]
    first = None
    for k in range(0, 200, 100):
        r = call("POST", "storage/bookmarks", user, pw, good[k:k + 100],
                 agent="GoodFox/4.0")
        first = stamp_of(r)
        assert len(r.json()["success"]) == 100
    before = records(user, pw, "bookmarks")
    assert len(before) == 200

    # The stale device: overwrites 50, deletes 10 others, adds 5 new.
    overwritten, deleted = ids[:50], ids[100:110]
    stale = [{"id": i, "payload": payload(f"stale {i}"), "sortindex": -1}
             for i in overwritten]
    stamp_of(call("POST", "storage/bookmarks", user, pw, stale, agent=STALE_AGENT))
    stamp_of(call("POST", "storage/bookmarks", user, pw,
                  [{"id": f"new{n}", "payload": payload("new")} for n in range(5)],
                  agent=STALE_AGENT))
    last_stale = stamp_of(call("DELETE", "storage/bookmarks?ids=" + ",".join(deleted),
                               user, pw, agent=STALE_AGENT))
    now = records(user, pw, "bookmarks")
    assert len(now) == 195 and now[ids[0]]["payload"] != before[ids[0]]["payload"]

    # The admin sees the stale writes, with their client.
    h = history(user, "--collection", "bookmarks")
    stale_writes = [w for w in h["writes"] if w["client"] == STALE_AGENT]
    assert [(w["written"], w["replaced"], w["deleted"]) for w in stale_writes] == [
        (50, 50, 0), (5, 0, 0), (0, 0, 10)], h
    assert all(w["kept_bytes"] > 0 for w in stale_writes if w["replaced"] + w["deleted"])
    good_writes = [w for w in h["writes"] if w["client"] == "GoodFox/4.0"]
    assert [(w["written"], w["replaced"]) for w in good_writes] == [(100, 0), (100, 0)]
    assert h["whole_since"] is not None and h["whole_since"] <= float(first)

    # A dry run says what would happen and changes nothing.
    dry = restore(user, "--collection", "bookmarks", "--as-of", first, "--dry-run")
    assert "bookmarks: 50 replaced records to put back, 10 deleted records to bring " \
        "back, 5 newer records to delete\n" in dry.stdout, dry.stdout
    assert records(user, pw, "bookmarks") == now

    out = restore(user, "--collection", "bookmarks", "--as-of", first, "--yes").stdout
    after = records(user, pw, "bookmarks")
    assert sorted(after) == sorted(ids)
    for i in ids:
        for field in ("payload", "sortindex", "parentid"):
            assert after[i].get(field) == before[i].get(field), (i, field)
    # Exactly the 60 changed records are newer than the stale device's last write.
    changed = records(user, pw, "bookmarks", newer=last_stale)
    assert sorted(changed) == sorted(overwritten + deleted)
    restored_at = changed[ids[0]]["modified"]
    # info/collections (cached per process until last_write moves) sees it.
    r = call("GET", "info/collections", user, pw)
    assert r.json()["bookmarks"] == restored_at, (r.json(), restored_at)

    # The restore is a logged write, and undoable: as of just before it
    # the stale state comes back.
    h = history(user, "--collection", "bookmarks")
    last = h["writes"][-1]
    assert last["client"].startswith("weave-admin user restore") and \
        (last["written"], last["replaced"], last["deleted"]) == (60, 50, 5), last
    assert "bookmarks: 50 replaced records put back, 10 deleted records brought back, " \
        "5 newer records deleted\n" in out and "undoes it" in out, out
    restore(user, "--collection", "bookmarks", "--as-of", f"{restored_at - 0.01:.2f}",
            "--yes")
    again = records(user, pw, "bookmarks")
    assert sorted(again) == sorted(now)
    assert all(again[i]["payload"] == now[i]["payload"] for i in now)


def test_restore_every_collection_and_keep_newer():
    user, pw = new_user("hist")
    for coll in ("tabs", "forms"):
        stamp_of(call("PUT", f"storage/{coll}/a", user, pw, {"payload": f"{coll} old"}))
    t = stamp_of(call("PUT", "storage/forms/b", user, pw, {"payload": "forms b"}))
    stamp_of(call("PUT", "storage/tabs/a", user, pw, {"payload": "tabs new"}))
    stamp_of(call("DELETE", "storage/forms/a", user, pw))
    stamp_of(call("PUT", "storage/forms/c", user, pw, {"payload": "forms c, newer"}))
    # An ISO date-time works for --since as for --as-of.
    assert len(history(user, "--since", "1970-01-01T00:00:00Z")["writes"]) == 6
    restore(user, "--as-of", t, "--yes", "--keep-newer")
    forms = records(user, pw, "forms")
    assert {k: v["payload"] for k, v in forms.items()} == {
        "a": "forms old", "b": "forms b", "c": "forms c, newer"}
    assert records(user, pw, "tabs")["a"]["payload"] == "tabs old"
    # Without --keep-newer the newer record goes.
    restore(user, "--as-of", t, "--yes")
    assert sorted(records(user, pw, "forms")) == ["a", "b"]


def test_restore_refuses_what_it_cannot_rebuild():
    user, pw = new_user("hist")
    p = restore(user, "--collection", "x", "--as-of", "2020-01-01", "--yes")
    assert "nothing of " + user + " was written after 2020-01-01T00:00:00Z" in p.stdout
    # Written while history was off: nothing to rebuild from.
    off = server("history-off", {"history_days": 0})
    stamp_of(call("PUT", "storage/x/a", user, pw, {"payload": "zero"}, port=off))
    p = restore(user, "--collection", "x", "--as-of", "2020-01-01", "--yes", check=False)
    assert p.returncode == 1 and "no record history" in p.stderr, p.stderr
    t0 = stamp_of(call("PUT", "storage/x/a", user, pw, {"payload": "one"}))
    stamp_of(call("PUT", "storage/x/a", user, pw, {"payload": "two"}))
    # An import writes records without history: a restore may not cross it.
    admin("import", user, "-", input=json.dumps({
        "collection": "x", "id": "imp", "parentid": None, "predecessorid": None,
        "sortindex": None, "modified": int(float(t0) * 100) + 50, "expires": None,
        "payload": "imported"}) + "\n")
    p = restore(user, "--collection", "x", "--as-of", t0, "--yes", check=False)
    assert p.returncode == 1 and "without history" in p.stderr, p.stderr
    assert records(user, pw, "x")["a"]["payload"] == "two"
    for bad in ("yesterday", "2026-02-30", "12.5x"):
        p = restore(user, "--as-of", bad, "--yes", check=False)
        assert p.returncode == 2 and "--as-of" in p.stderr, p.stderr
    p = restore(user, "--as-of", "9999-01-01", "--yes", check=False)
    assert p.returncode == 2 and "in the future" in p.stderr


def user_id(name):
    return int(sql(f"SELECT id FROM users WHERE username = '{name}'")[0][0])


def test_purge_obeys_history_days():
    user, pw = new_user("hist")
    uid = user_id(user)
    stamp_of(call("PUT", "storage/p/a", user, pw, {"payload": "v1"}))
    stamp_of(call("PUT", "storage/p/a", user, pw, {"payload": "v2" * 100}))
    stamp_of(call("PUT", "storage/p/a", user, pw, {"payload": "v3"}))
    # Age the first two writes 15 days (history_days here is 14).
    days = int(read_config().get("history_days", "14"))
    assert days == 14
    old = 15 * 86400 * 100
    rows = sql(f"SELECT stamp FROM write_log WHERE user_id = {uid} ORDER BY stamp")
    assert len(rows) == 3
    cut = int(rows[1][0])
    sql(f"UPDATE wbo_history SET replaced = replaced - {old} "
        f"WHERE user_id = {uid} AND replaced <= {cut}")
    sql(f"UPDATE write_log SET stamp = stamp - {old} WHERE user_id = {uid} AND stamp <= {cut}")
    dry = admin("purge", "--dry-run").stdout
    assert "logged writes older than history_days (14) would be removed" in dry, dry
    assert len(sql(f"SELECT 1 FROM write_log WHERE user_id = {uid}")) == 3
    admin("purge")
    assert len(sql(f"SELECT 1 FROM write_log WHERE user_id = {uid}")) == 1
    kept = sql(f"SELECT payload FROM wbo_history WHERE user_id = {uid}")
    assert kept == [["v2" * 100]], kept
    usage = sql(f"SELECT bytes, since FROM history_usage WHERE user_id = {uid}")
    assert usage == [["200", str(cut - old)]], usage
    h = history(user)
    assert len(h["writes"]) == 1 and h["kept_bytes"] == 200
    # Back before the purged writes is refused; after them it works.
    p = restore(user, "--as-of", f"{(cut - old - 1) / 100:.2f}", "--yes", check=False)
    assert p.returncode == 1 and "whole only from" in p.stderr, p.stderr
    restore(user, "--as-of", f"{cut / 100:.2f}", "--yes")
    assert records(user, pw, "p")["a"]["payload"] == "v2" * 100


def test_history_off_keeps_nothing():
    port = server("history-off", {"history_days": 0})
    user, pw = new_user("hist")
    uid = user_id(user)
    for text in ("one", "two", "three"):
        stamp_of(call("PUT", "storage/o/a", user, pw, {"payload": text}, port=port))
    stamp_of(call("DELETE", "storage/o", user, pw, port=port))
    assert sql(f"SELECT COUNT(*) FROM write_log WHERE user_id = {uid}") == [["0"]]
    assert sql(f"SELECT COUNT(*) FROM wbo_history WHERE user_id = {uid}") == [["0"]]


def test_history_max_kb_drops_the_oldest_writes():
    port = server("history-small", {"history_max_kb": 16})
    user, pw = new_user("hist")
    uid = user_id(user)
    stamps = []
    for n in range(12):
        body = {"payload": f"{n:02d}" + "x" * 3998}
        stamps.append(stamp_of(call("PUT", "storage/big/a", user, pw, body, port=port)))
    bytes_, since = map(int, sql(f"SELECT bytes, since FROM history_usage "
                                 f"WHERE user_id = {uid}")[0])
    assert 0 < bytes_ <= 16 * 1024, bytes_
    real = sql(f"SELECT COALESCE(SUM(payload_size), 0) FROM wbo_history WHERE user_id = {uid}")
    assert int(real[0][0]) == bytes_
    kept = sorted(int(r[0]) for r in sql(f"SELECT replaced FROM wbo_history WHERE user_id = {uid}"))
    logged = sorted(int(r[0]) for r in sql(f"SELECT stamp FROM write_log WHERE user_id = {uid}"))
    # The newest replacements stay, the oldest went, and the log went with them.
    assert kept and kept[-1] == round(float(stamps[-1]) * 100)
    assert kept[0] > round(float(stamps[1]) * 100)
    assert logged[0] == kept[0] and since >= round(float(stamps[1]) * 100)


def test_user_history_text_and_deleting_an_account():
    user, pw = new_user("hist")
    uid = user_id(user)
    stamp_of(call("PUT", "storage/t/a", user, pw, {"payload": "one"}, agent="Bad\u00c9Agent"))
    stamp_of(call("PUT", "storage/t/a", user, pw, {"payload": "two"}, agent="Bad\u00c9Agent"))
    out = admin("user", "history", user).stdout
    assert "history of " + user in out and "Bad?Agent" in out, out
    assert [w["client"] for w in history(user)["writes"]] == ["Bad?Agent"] * 2
    p = admin("user", "history", user, "--collection", "no/such", check=False)
    assert p.returncode == 2 and "not a collection name" in p.stderr, p.stderr
    p = admin("user", "history", user, "--since", "soon", check=False)
    assert p.returncode == 2 and "--since soon" in p.stderr, p.stderr
    assert "t " in out
    admin("user", "delete", user, "--yes")
    for table in ("write_log", "wbo_history", "history_usage"):
        assert sql(f"SELECT COUNT(*) FROM {table} WHERE user_id = {uid}") == [["0"]], table


def test_an_expired_record_is_replaced_anew_and_not_kept():
    # An upload looks for the rows it replaces with one statement that
    # also finds expired ones (db_history_keep_replaced): an expired row
    # is deleted, not kept, and the upload writes a new record instead of
    # updating the old one in place.
    user, pw = new_user("hist")
    uid = user_id(user)
    stamp_of(call("POST", "storage/e", user, pw,
                  [{"id": "gone", "payload": "old", "sortindex": 7, "ttl": 1},
                   {"id": "live", "payload": "kept"}]))
    sql(f"UPDATE wbo SET expires = 1 WHERE user_id = {uid} AND id = 'gone'")
    r = call("POST", "storage/e", user, pw,
             [{"id": "gone", "payload": "new"}, {"id": "live", "payload": "newer"}])
    assert r.status == 200 and sorted(r.json()["success"]) == ["gone", "live"], r.body
    got = records(user, pw, "e")
    assert got["gone"]["payload"] == "new" and "sortindex" not in got["gone"], got
    kept = sql(f"SELECT id, payload FROM wbo_history WHERE user_id = {uid}")
    assert kept == [["live", "kept"]], kept
    last = history(user)["writes"][-1]
    assert (last["written"], last["replaced"], last["kept_bytes"]) == (2, 1, 4), last


def mixed_batch_upload(port=None):
    """An account with ten records, r3 expired, then one POST that mixes
    new ids with stored ones of two shapes and the expired one: the new
    records go in by an insert that passes over stored ids
    (db_storage_put), the others by the upsert after it."""
    user, pw = new_user("hist")
    uid = user_id(user)
    first = [{"id": f"r{i}", "payload": payload(f"old {i}"), "sortindex": i}
             for i in range(10)]
    before = stamp_of(call("POST", "storage/m", user, pw, first, port=port))
    sql(f"UPDATE wbo SET expires = 1 WHERE user_id = {uid} AND id = 'r3'")
    batch = [{"id": "n0", "payload": "new 0"}, {"id": "r0", "payload": "r0 again"},
             {"id": "n1", "payload": "new 1", "sortindex": 5},
             {"id": "r3", "payload": "r3 anew"}, {"id": "r5", "sortindex": 50},
             {"id": "n2", "payload": "new 2"}]
    r = call("POST", "storage/m", user, pw, batch, port=port)
    stamp = stamp_of(r)
    assert sorted(r.json()["success"]) == sorted(w["id"] for w in batch), r.body
    got = records(user, pw, "m")
    assert sorted(got) == sorted([f"r{i}" for i in range(10)] + ["n0", "n1", "n2"])
    # A stored record keeps the fields the upload leaves out ...
    assert got["r0"]["payload"] == "r0 again" and got["r0"]["sortindex"] == 0, got["r0"]
    assert got["r5"]["payload"] == first[5]["payload"] and got["r5"]["sortindex"] == 50
    assert got["r5"]["modified"] == float(before), got["r5"]  # sortindex only
    # ... an expired one is written anew, and a new one has what it was sent.
    assert got["r3"]["payload"] == "r3 anew" and "sortindex" not in got["r3"], got["r3"]
    assert got["n1"]["payload"] == "new 1" and got["n1"]["sortindex"] == 5
    for i in ("n0", "n1", "n2", "r0", "r3"):
        assert got[i]["modified"] == float(stamp), (i, got[i], stamp)
    return uid, int(round(float(stamp) * 100))


def test_a_batch_of_new_and_stored_records_keeps_what_it_replaces():
    uid, cents = mixed_batch_upload()
    kept = sql(f"SELECT id FROM wbo_history WHERE user_id = {uid} "
               f"AND replaced = {cents} ORDER BY id")
    assert kept == [["r0"], ["r5"]], kept
    log = sql(f"SELECT written, replaced FROM write_log WHERE user_id = {uid} "
              f"AND stamp = {cents}")
    assert log == [["6", "2"]], log


def test_a_batch_of_new_and_stored_records_without_history():
    uid, _ = mixed_batch_upload(server("history-off", {"history_days": 0}))
    assert sql(f"SELECT COUNT(*) FROM wbo_history WHERE user_id = {uid}") == [["0"]]


def test_stored_records_after_new_ones_and_first():
    # db_storage_put inserts a batch by a plain INSERT first, which fails
    # at its first stored id and is taken back whole: stored records after
    # new ones (written, then taken back), and a stored record first, must
    # both end up replaced (and kept) exactly once, with every new record
    # written once.
    user, pw = new_user("hist")
    uid = user_id(user)
    stamp_of(call("POST", "storage/p", user, pw,
                  [{"id": f"old{i}", "payload": f"v1 {i}", "sortindex": i}
                   for i in range(6)]))
    late = [{"id": f"new{i}", "payload": f"n {i}"} for i in range(10)] + \
        [{"id": f"old{i}", "payload": f"v2 {i}"} for i in range(3)] + \
        [{"id": f"new{i}", "payload": f"n {i}"} for i in range(10, 15)]
    early = [{"id": "old3", "payload": "v2 3"}] + \
        [{"id": f"fresh{i}", "payload": f"f {i}"} for i in range(19)]
    for batch, replaced in ((late, ["old0", "old1", "old2"]), (early, ["old3"])):
        r = call("POST", "storage/p", user, pw, batch)
        cents = int(round(float(stamp_of(r)) * 100))
        assert sorted(r.json()["success"]) == sorted(w["id"] for w in batch), r.body
        got = records(user, pw, "p")
        for w in batch:
            assert got[w["id"]]["payload"] == w["payload"], (w, got[w["id"]])
            assert int(round(got[w["id"]]["modified"] * 100)) == cents, (w["id"], got[w["id"]])
        for i in replaced:
            assert got[i]["sortindex"] == int(i[3:]), got[i]  # kept, not sent
        kept = sql(f"SELECT id, payload FROM wbo_history WHERE user_id = {uid} "
                   f"AND replaced = {cents} ORDER BY id")
        assert kept == [[i, f"v1 {i[3:]}"] for i in replaced], kept
        log = sql(f"SELECT written, replaced FROM write_log WHERE user_id = {uid} "
                  f"AND stamp = {cents}")
        assert log == [[str(len(batch)), str(len(replaced))]], log
    assert len(records(user, pw, "p")) == 6 + 15 + 19


def test_an_id_sent_twice_in_one_batch_ends_as_its_last_copy():
    # A batch naming one id twice fails the plain INSERT on its second
    # copy (as a stored id would) and goes the upsert way: the last copy
    # wins, every other record is written, and nothing stored is kept as
    # replaced.
    user, pw = new_user("hist")
    uid = user_id(user)
    batch = [{"id": "twice", "payload": "first"}] + \
        [{"id": f"n{i}", "payload": f"n {i}"} for i in range(5)] + \
        [{"id": "twice", "payload": "last", "sortindex": 7}]
    r = call("POST", "storage/d", user, pw, batch)
    assert set(r.json()["success"]) == {w["id"] for w in batch}, r.body
    assert r.json()["failed"] == {}, r.body
    got = records(user, pw, "d")
    assert len(got) == 6, got
    assert got["twice"]["payload"] == "last", got["twice"]
    for i in range(5):
        assert got[f"n{i}"]["payload"] == f"n {i}"
    assert sql(f"SELECT COUNT(*) FROM wbo WHERE user_id = {uid} AND collection = 'd' "
               f"AND id = 'twice'") == [["1"]]
    assert sql(f"SELECT COUNT(*) FROM wbo_history WHERE user_id = {uid} "
               f"AND payload = 'last'") == [["0"]]


def test_batches_of_every_size_store_and_keep_each_record_once():
    # An upload's upsert takes up to 128 records a statement, padded to a
    # multiple of 8 by repeating the last: sizes around those edges must
    # store every record exactly once, with its own payload, and a
    # replacing upload must keep each replaced version once.
    big = server("big-posts", {"max_post_records": 300})
    user, pw = new_user("hist")
    uid = user_id(user)
    for n in (1, 7, 9, 100, 129, 257):
        port = big if n > 100 else None
        coll = f"size{n}"
        first = [{"id": f"r{i:03d}", "payload": payload(f"a{n}-{i}"), "sortindex": i}
                 for i in range(n)]
        r = call("POST", f"storage/{coll}", user, pw, first, port=port)
        assert r.status == 200 and len(r.json()["success"]) == n, (n, r.body[:300])
        second = [dict(w, payload=payload(f"b{n}-{i}")) for i, w in enumerate(first)]
        stamp = stamp_of(call("POST", f"storage/{coll}", user, pw, second, port=port))
        got = records(user, pw, coll)
        assert sorted(got) == [w["id"] for w in second], n
        for w in second:
            assert got[w["id"]]["payload"] == w["payload"], (n, w["id"])
            assert got[w["id"]]["sortindex"] == w["sortindex"], (n, w["id"])
        cents = int(round(float(stamp) * 100))
        kept = sql(f"SELECT COUNT(*), COUNT(DISTINCT id) FROM wbo_history "
                   f"WHERE user_id = {uid} AND collection = '{coll}' "
                   f"AND replaced = {cents}")
        assert kept == [[str(n), str(n)]], (n, kept)
        log = sql(f"SELECT written, replaced FROM write_log WHERE user_id = {uid} "
                  f"AND collection = '{coll}' AND stamp = {cents}")
        assert log == [[str(n), str(n)]], (n, log)


def test_a_filtered_delete_keeps_exactly_what_it_deletes():
    # The keep and the DELETE share one WHERE: a delete by ids with a
    # filter keeps the rows it removes and nothing else.
    user, pw = new_user("hist")
    uid = user_id(user)
    batch = [{"id": f"d{i}", "payload": payload(str(i)), "sortindex": i} for i in range(10)]
    stamp_of(call("POST", "storage/del", user, pw, batch))
    r = call("DELETE", "storage/del?ids=d1,d2,d3,d8&index_above=2", user, pw)
    stamp = stamp_of(r)
    assert sorted(records(user, pw, "del")) == sorted(f"d{i}" for i in range(10)
                                                      if i not in (3, 8))
    cents = int(round(float(stamp) * 100))
    kept = sql(f"SELECT id FROM wbo_history WHERE user_id = {uid} "
               f"AND replaced = {cents} ORDER BY id")
    assert kept == [["d3"], ["d8"]], kept
    log = sql(f"SELECT deleted FROM write_log WHERE user_id = {uid} AND stamp = {cents}")
    assert log == [["2"]], log
