"""Uploads that lock their account after writing (late_write_lock = on,
src/write_lock.h), on a second Apache over the stack's database.

What must hold as with the lock taken at the login (docs/protocol.md,
Timestamps): a reader that follows newer= with its last X-Weave-Timestamp
never misses a record; an answer's modified is what is stored; a password
change or a disable racing an upload leaves it refused and rolled back, or
fully before the change; uploads sharing ids all land, the newest stamp
wins."""

import atexit
import json
import threading

import loadkit
from weave import admin, new_user, request, sql

_port = []


def late_port():
    if not _port:
        port, apache = loadkit.second_apache("late-lock", {"late_write_lock": "on"})
        atexit.register(loadkit.stack_lib_run, 'stack_apache_stop "$1"', apache)
        _port.append(port)
    return _port[0]


def post(user, pw, coll, recs, port=None):
    return request("POST", f"1.1/{user}/storage/{coll}", body=recs, user=user,
                   password=pw, port=port)


def stored(user, pw, coll):
    """id -> (modified, payload) of everything in coll."""
    r = request("GET", f"1.1/{user}/storage/{coll}?full=1", user=user, password=pw)
    assert r.status == 200, (r.status, r.body)
    return {o["id"]: (o["modified"], o["payload"]) for o in r.json()}


def centis(text):
    whole, _, frac = str(text).partition(".")
    return int(whole) * 100 + int((frac + "00")[:2])


def uploader(user, pw, coll, port, records, answers, errors):
    """A writers() body: each round uploads records(k, n); the stamp
    answered (centiseconds) and the round's name "k<k>n<n>" go to
    answers, refusals to errors."""
    def write(k, rounds):
        for n in range(rounds):
            r = post(user, pw, coll, records(k, n), port=port)
            if r.status == 200:
                answers.append((centis(r.json()["modified"]), f"k{k}n{n}"))
            else:
                errors.append((r.status, r.body))
    return write


def writers(n, rounds, fn):
    threads = [threading.Thread(target=fn, args=(k, rounds), daemon=True) for k in range(n)]
    for t in threads:
        t.start()
    return threads


def test_a_reader_following_newer_never_misses_a_record():
    user, pw = new_user("late")
    port = late_port()
    answers, errors = [], []
    done = threading.Event()

    def write(k, rounds):
        for n in range(rounds):
            recs = [{"id": f"w{k}r{n}i{i}", "payload": f"p{k}.{n}.{i}"} for i in range(10)]
            r = post(user, pw, "race", recs, port=port)
            if r.status != 200:
                errors.append((r.status, r.body))
                continue
            body = r.json()
            answers.append((body["modified"], r.headers.get("X-Weave-Timestamp"),
                            [x["id"] for x in recs], body["success"]))

    seen, since = {}, "0"

    def read_once():
        nonlocal since
        r = request("GET", f"1.1/{user}/storage/race?full=1&newer={since}",
                    user=user, password=pw)
        assert r.status == 200, (r.status, r.body)
        for o in r.json():
            seen[o["id"]] = o["modified"]
        since = r.headers.get("X-Weave-Timestamp")

    threads = writers(6, 12, write)
    polls = 0
    while any(t.is_alive() for t in threads):
        read_once()
        polls += 1
    for t in threads:
        t.join()
    done.set()
    read_once()
    assert not errors, errors[:3]
    assert len(answers) == 6 * 12 and polls > 1
    written = {}
    for modified, header, ids, success in answers:
        assert centis(modified) == centis(header), (modified, header)
        assert sorted(success) == sorted(ids)
        for i in ids:
            written[i] = centis(modified)
    # Every upload has its own stamp (one account's writes are ordered).
    assert len({a[0] for a in answers}) == len(answers)
    missed = sorted(set(written) - set(seen))
    assert not missed, (len(missed), missed[:5])
    # What the answers said is what is stored.
    now = stored(user, pw, "race")
    assert {i: centis(m) for i, (m, _) in now.items()} == written
    # And the write log holds each upload once, under its final stamp.
    uid = sql(f"SELECT id FROM users WHERE username = '{user}'")[0][0]
    logged = sorted(int(r[0]) for r in sql(f"SELECT stamp FROM write_log WHERE user_id = {uid}"))
    assert logged == sorted(centis(a[0]) for a in answers), (len(logged), len(answers))


def test_uploads_sharing_ids_all_land_and_the_newest_wins():
    user, pw = new_user("late")
    port = late_port()
    answers, errors = [], []

    write = uploader(user, pw, "shared", port,
                     lambda k, n: [{"id": f"shared{i}", "payload": f"k{k}n{n}"} for i in range(20)],
                     answers, errors)
    for t in writers(6, 8, write):
        t.join()
    assert not errors, errors[:3]
    assert len(answers) == 48 and len({a[0] for a in answers}) == 48
    newest, payload = max(answers)
    now = stored(user, pw, "shared")
    assert len(now) == 20
    for i, (modified, text) in now.items():
        assert (centis(modified), text) == (newest, payload), (i, modified, text)
    # Replaced versions are kept under the stamp of a write that was
    # answered (history is on in the stack): none under a provisional
    # stamp that was moved, none split between two stamps.
    uid = sql(f"SELECT id FROM users WHERE username = '{user}'")[0][0]
    kept = sql(f"SELECT replaced, COUNT(*) FROM wbo_history WHERE user_id = {uid} "
               f"AND collection = 'shared' GROUP BY replaced")
    stamps = sorted(a[0] for a in answers)
    assert kept and {int(r[0]) for r in kept} <= set(stamps[1:]), (kept, stamps)
    assert all(r[1] == "20" for r in kept)
    # The version a write replaced is the one written just before it in
    # stamp order: its modified and payload.
    order = sorted(answers)
    before = {order[k][0]: order[k - 1] for k in range(1, len(order))}
    rows = sql(f"SELECT replaced, modified, payload FROM wbo_history WHERE user_id = {uid} "
               f"AND collection = 'shared'")
    for replaced, modified, text in rows:
        assert (int(modified), text) == before[int(replaced)], (replaced, modified, text)


def _race_a_change(change):
    """Uploads from 4 threads while `change` runs once: uploads answered
    200 are stored whole, refused ones left nothing, and every upload
    sent after the change was answered is refused."""
    user, pw = new_user("late")
    port = late_port()
    results, lock = [], threading.Lock()
    changed = threading.Event()

    def write(k, rounds):
        # Until each thread has sent 3 uploads after the change (however
        # long the change takes on a busy machine), at most `rounds`.
        sent_after = 0
        for n in range(rounds):
            after = changed.is_set()
            if sent_after >= 3:
                break
            sent_after += after
            recs = [{"id": f"c{k}n{n}i{i}", "payload": "x"} for i in range(10)]
            r = post(user, pw, "chg", recs, port=port)
            with lock:
                results.append((after, r.status, [x["id"] for x in recs]))

    threads = writers(4, 2000, write)
    while len(results) < 8:
        threading.Event().wait(0.01)
    new_pw = change(user, pw)
    changed.set()
    for t in threads:
        t.join()
    r = request("GET", f"1.1/{user}/storage/chg?full=1", user=user, password=new_pw)
    if r.status == 401:  # disabled: read behind the server's back
        uid = sql(f"SELECT id FROM users WHERE username = '{user}'")[0][0]
        have = {row[0] for row in sql(f"SELECT id FROM wbo WHERE user_id = {uid} "
                                      f"AND collection = 'chg'")}
    else:
        assert r.status == 200, (r.status, r.body)
        have = {o["id"] for o in r.json()}
    statuses = {s for _, s, _ in results}
    assert statuses <= {200, 401}, statuses
    assert 401 in statuses and 200 in statuses
    for after, status, ids in results:
        if status == 200:
            assert set(ids) <= have, ids
            assert not after, "an upload sent after the change was accepted"
        else:
            assert not set(ids) & have, ids


def test_a_password_change_racing_uploads_refuses_or_precedes_them():
    def change(user, pw):
        new = pw + "-new"
        r = request("POST", f"user/1.0/{user}/password", body=new, user=user, password=pw)
        assert r.status == 200, (r.status, r.body)
        return new

    _race_a_change(change)


def test_a_disable_racing_uploads_refuses_or_precedes_them():
    def change(user, pw):
        admin("user", "disable", user)
        return pw

    _race_a_change(change)


def test_a_conditional_upload_still_checks_under_the_lock():
    user, pw = new_user("late")
    port = late_port()
    r = post(user, pw, "cond", [{"id": "a", "payload": "1"}], port=port)
    assert r.status == 200
    first = r.json()["modified"]
    r = post(user, pw, "cond", [{"id": "b", "payload": "2"}], port=port)
    assert r.status == 200
    r = request("POST", f"1.1/{user}/storage/cond", body=[{"id": "c", "payload": "3"}],
                user=user, password=pw, port=port,
                headers={"X-If-Unmodified-Since": json.dumps(first)})
    assert r.status == 412, (r.status, r.body)
    assert "c" not in stored(user, pw, "cond")


def board_counts():
    """The host's cache counters (the second Apache shares the board)."""
    return json.loads(admin("cache", "--json").stdout)


def test_overlapping_uploads_lock_in_login_order_and_keep_their_stamps():
    """src/upload_order.h: uploads of one account in flight at once take
    their provisional stamps in the order they logged in and lock in that
    order, so none finds last_write past its stamp. A restamp can happen
    only once an upload stopped waiting for the one before it (the bounded
    wait). Before the order, nearly every overlapping upload restamped."""
    user, pw = new_user("late")
    port = late_port()
    answers, errors = [], []

    write = uploader(user, pw, "order", port,
                     lambda k, n: [{"id": f"o{k}n{n}i{i}", "payload": f"p{k}.{n}.{i}"}
                                   for i in range(20)],
                     answers, errors)
    c0 = board_counts()
    for t in writers(8, 8, write):
        t.join()
    c1 = board_counts()
    assert not errors, errors[:3]
    stamps = [stamp for stamp, _ in answers]
    assert len(stamps) == 64 and len(set(stamps)) == 64
    restamps = c1["restamps"] - c0["restamps"]
    timeouts = c1["turn_timeouts"] - c0["turn_timeouts"]
    assert restamps == 0 or timeouts > 0, (restamps, timeouts)
    # The account's last write is the newest stamp answered.
    uid = sql(f"SELECT id FROM users WHERE username = '{user}'")[0][0]
    assert int(sql(f"SELECT last_write FROM users WHERE id = {uid}")[0][0]) == max(stamps)
