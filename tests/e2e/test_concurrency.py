"""Concurrency (issue 7, item 3): many clients writing the same user's
collections at once.

Every write answers 200 (a deadlock is retried inside the server, never
handed to the client as a 5xx); a user's write timestamps are unique and
follow commit order; the final state of every record is the one its last
write (in timestamp order) left; and of N writers racing with the same
X-If-Unmodified-Since exactly one wins, the others get 412 "4".
"""

import http.client
import json
import os
import random
import threading
import time

import loadkit
import weave
from weave import new_user

THREADS_PER_USER = 6
OPS_PER_THREAD = 30
COLLECTIONS = ("bookmarks", "history", "forms")
POOL = [f"rec{i:02d}" for i in range(24)]  # shared ids: writers collide on rows


class Op:
    """One request and what came back."""

    def __init__(self, kind, coll, ids, sent):
        self.kind, self.coll, self.ids, self.sent = kind, coll, ids, sent
        self.done = self.status = self.ts = None
        self.error = None
        self.body = b""
        self.tag = None  # payload marker of writes

    def __repr__(self):
        what = self.error or f"HTTP {self.status} {self.body[:80]!r}"
        return f"<{self.kind} {self.coll} {len(self.ids)} ids: {what}>"


def _payload(tag, rid):
    return json.dumps({"op": tag, "id": rid})


def _one_op(client, user, rng, tag):
    """A random write the way sync clients make them; returns the Op."""
    coll = rng.choice(COLLECTIONS)
    roll = rng.random()
    if roll < 0.35:
        rid = rng.choice(POOL)
        op = Op("put", coll, [rid], time.monotonic())
        method, path = "PUT", f"1.0/{user}/storage/{coll}/{rid}"
        body = {"id": rid, "payload": _payload(tag, rid), "sortindex": rng.randint(0, 99)}
    elif roll < 0.75:
        ids = rng.sample(POOL, rng.randint(2, 20))
        op = Op("post", coll, ids, time.monotonic())
        method, path = "POST", f"1.0/{user}/storage/{coll}"
        body = [{"id": rid, "payload": _payload(tag, rid)} for rid in ids]
    elif roll < 0.88:
        ids = rng.sample(POOL, rng.randint(1, 5))
        op = Op("delete_ids", coll, ids, time.monotonic())
        method, path, body = "DELETE", f"1.0/{user}/storage/{coll}?ids={','.join(ids)}", None
    elif roll < 0.97:
        rid = rng.choice(POOL)
        op = Op("delete_one", coll, [rid], time.monotonic())
        method, path, body = "DELETE", f"1.0/{user}/storage/{coll}/{rid}", None
    else:
        op = Op("delete_coll", coll, list(POOL), time.monotonic())
        method, path, body = "DELETE", f"1.0/{user}/storage/{coll}", None
    op.tag = tag
    try:
        r = client.request(method, path, body=body)
    except (OSError, http.client.HTTPException) as exc:
        op.error = f"{type(exc).__name__}: {exc}"
        op.done = time.monotonic()
        return op
    op.done = time.monotonic()
    op.status, op.body = r.status, r.body
    ts = r.headers.get("X-Weave-Timestamp")
    op.ts = loadkit.centi(ts) if ts else None
    if r.status == 200:
        # The answer's own timestamp must be the header's (PUT/DELETE: the
        # body is the timestamp; POST: its "modified").
        answer = r.json()
        own = answer["modified"] if op.kind == "post" else answer
        if loadkit.centi(float(own)) != op.ts:
            op.error = f"answer timestamp {own} != X-Weave-Timestamp {ts}"
        if op.kind == "post" and (sorted(answer["success"]) != sorted(set(ids))
                                  or answer["failed"]):
            op.error = f"POST answer {answer}"
    return op


def _worker(user, pw, seed, ops, start):
    rng = random.Random(seed)
    client = loadkit.Client(user, pw)
    start.wait()
    try:
        for n in range(OPS_PER_THREAD):
            ops.append(_one_op(client, user, rng, f"s{seed}n{n}"))
    finally:
        client.close()


def _expected_state(ops):
    """Replays the successful writes in timestamp order: {(coll, id): (tag,
    ts)} of the records that must exist."""
    state = {}
    for op in sorted(ops, key=lambda o: o.ts):
        for rid in op.ids:
            key = (op.coll, rid)
            if op.kind in ("put", "post"):
                state[key] = (op.tag, op.ts)
            else:
                state.pop(key, None)
    return state


def _stored_state(user, pw):
    client = loadkit.Client(user, pw)
    state = {}
    for coll in COLLECTIONS:
        r = client.request("GET", f"1.0/{user}/storage/{coll}?full=1")
        assert r.status == 200, r
        for rec in r.json():
            payload = json.loads(rec["payload"])
            assert payload["id"] == rec["id"], rec
            state[(coll, rec["id"])] = (payload["op"], loadkit.centi(float(rec["modified"])))
    client.close()
    return state


def test_mixed_writers_on_the_same_users():
    users = [new_user("conc") for _ in range(2)]
    start = threading.Barrier(len(users) * THREADS_PER_USER)
    per_user = {name: [] for name, _ in users}
    threads = []
    for u, (name, pw) in enumerate(users):
        for t in range(THREADS_PER_USER):
            th = threading.Thread(target=_worker, daemon=True,
                                  args=(name, pw, u * 100 + t, per_user[name], start))
            threads.append(th)
            th.start()
    for th in threads:
        th.join(timeout=300)
        assert not th.is_alive(), "a writer thread hung"
    total = 0
    for name, pw in users:
        ops = per_user[name]
        total += len(ops)
        assert len(ops) == THREADS_PER_USER * OPS_PER_THREAD, (name, len(ops))
        bad = [op for op in ops if op.status != 200 or op.error]
        assert not bad, f"{len(bad)} of {len(ops)} writes failed, e.g. {bad[:8]}"
        problems = loadkit.order_problems(
            [(op.sent, op.done, op.ts, repr(op)) for op in ops])
        assert not problems, "\n".join(problems[:20])
        expected, stored = _expected_state(ops), _stored_state(name, pw)
        wrong = sorted(k for k in set(expected) | set(stored)
                       if expected.get(k) != stored.get(k))
        assert not wrong, "final state differs from the writes replayed in timestamp order: " + \
            "; ".join(f"{k}: expected {expected.get(k)}, stored {stored.get(k)}" for k in wrong[:10])
    print(f"    {total} concurrent writes by {len(threads)} clients on {len(users)} users: all 200")


def _race(user, pw, coll, since, n, round_no):
    """N writers with X-If-Unmodified-Since: SINCE, released at once; each
    writes a different record (PUT or POST). Returns [(rid, status, body)]."""
    barrier = threading.Barrier(n)
    out = [None] * n

    def racer(i):
        client = loadkit.Client(user, pw)
        rid = f"race{round_no}w{i}"
        hdrs = {"X-If-Unmodified-Since": f"{since // 100}.{since % 100:02d}"}
        try:
            client.connect()  # connected before the start, to send together
            barrier.wait()
            if i % 2:
                r = client.request("PUT", f"1.0/{user}/storage/{coll}/{rid}",
                                   body={"payload": "p"}, headers=hdrs)
            else:
                r = client.request("POST", f"1.0/{user}/storage/{coll}",
                                   body=[{"id": rid, "payload": "p"}], headers=hdrs)
            out[i] = (rid, r.status, r.body)
        except Exception as exc:  # noqa: BLE001 - reported below
            out[i] = (rid, None, repr(exc).encode())
        finally:
            client.close()

    threads = [threading.Thread(target=racer, args=(i,), daemon=True) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    return out


def test_racing_conditional_writers_exactly_one_wins():
    user, pw = new_user("race")
    coll = "tabs"
    client = loadkit.Client(user, pw)
    r = client.request("PUT", f"1.0/{user}/storage/{coll}/seed", body={"payload": "s"})
    assert r.status == 200, r
    rounds, racers = 8, 6
    for round_no in range(rounds):
        r = client.request("GET", f"1.0/{user}/info/collections")
        since = loadkit.centi(float(r.json()[coll]))
        out = _race(user, pw, coll, since, racers, round_no)
        winners = [o for o in out if o[1] == 200]
        losers = [o for o in out if o[1] != 200]
        assert len(winners) == 1, f"round {round_no}: {len(winners)} winners: {out}"
        assert all(o[1] == 412 and o[2] == b"4" for o in losers), out
        # The winner's record is there, no loser's is.
        r = client.request("GET", f"1.0/{user}/storage/{coll}?ids="
                           + ",".join(o[0] for o in out))
        assert r.status == 200 and r.json() == [winners[0][0]], (out, r)
    client.close()


def _log_size():
    try:
        return os.path.getsize(weave.APACHE_LOG)
    except OSError:
        return 0


def _log_since(offset):
    with open(weave.APACHE_LOG, "rb") as f:
        f.seek(offset)
        return f.read().decode("utf-8", "replace")


def test_deadlock_is_retried_inside_the_server():
    """A deadlock made on purpose: a transaction of ours holds a record row
    and has changed 100 others (so InnoDB picks the server's lighter
    transaction as the victim), the server's PUT of that record waits for
    it while holding the user row, then we ask for the user row. The
    client must still get 200, from the server's own retry."""
    stack = os.environ.get("WEAVE_STACK_DIR", "")
    assert stack and weave.APACHE_LOG, "needs WEAVE_STACK_DIR and WEAVE_APACHE_LOG"
    user, pw = new_user("dead")
    client = loadkit.Client(user, pw)
    r = client.request("POST", f"1.0/{user}/storage/bulk", body=loadkit.batch_records("bulk"))
    assert r.status == 200, r
    r = client.request("PUT", f"1.0/{user}/storage/tabs/target", body={"payload": "old"})
    assert r.status == 200, r
    client.close()

    sql = loadkit.SqlSession(stack)
    watch = loadkit.SqlSession(stack)
    try:
        uid = int(sql.run(f"SELECT id FROM users WHERE username = '{user}'")[0])
        assert sql.run("START TRANSACTION") == []
        assert sql.run(f"UPDATE wbo SET sortindex = sortindex + 1 "
                       f"WHERE user_id = {uid} AND collection = 'bulk'") == []
        assert sql.run(f"SELECT id FROM wbo WHERE user_id = {uid} AND collection = 'tabs' "
                       f"AND id = 'target' FOR UPDATE") == ["target"]
        offset = _log_size()
        result = {}

        def put():
            c = loadkit.Client(user, pw)
            try:
                # X-If-Unmodified-Since (always true here) keeps the PUT on
                # the path that locks the user row first, also with
                # late_write_lock = on (an upload that locks late holds no
                # user row while it waits for the record: no deadlock).
                result["r"] = c.request("PUT", f"1.0/{user}/storage/tabs/target",
                                        body={"payload": "new"},
                                        headers={"X-If-Unmodified-Since": "9999999999"})
            except Exception as exc:  # noqa: BLE001 - asserted below
                result["r"] = exc
            finally:
                c.close()

        th = threading.Thread(target=put, daemon=True)
        th.start()
        # Wait until the server's transaction waits for our record lock.
        # InnoDB refreshes these tables only when last read over 0.1 s ago:
        # polling faster would keep reading the same stale snapshot.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            time.sleep(0.2)
            waits = watch.run("SELECT COUNT(*) FROM information_schema.INNODB_LOCK_WAITS")
            if waits != ["0"]:
                break
        else:
            raise AssertionError("the server's PUT never waited for our lock")
        # Close the cycle: InnoDB rolls the server's transaction back.
        out = sql.run(f"SELECT id FROM users WHERE id = {uid} FOR UPDATE")
        assert out == [str(uid)], f"our transaction was the victim: {out}"
        time.sleep(0.3)  # the server's second attempt now waits for the user row
        assert sql.run("ROLLBACK") == []
        th.join(timeout=60)
        r = result.get("r")
        assert isinstance(r, weave.Response) and r.status == 200, r
    finally:
        sql.close()
        watch.close()
    log = _log_since(offset)
    assert "Deadlock" in log and "running the request again" in log, log[-3000:]
    r = weave.request("GET", f"1.0/{user}/storage/tabs/target", user=user, password=pw)
    assert r.status == 200 and r.json()["payload"] == "new", r
