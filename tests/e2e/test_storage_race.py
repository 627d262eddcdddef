"""Racing X-If-Unmodified-Since writers (issue 3; docs/protocol.md,
Conditional writes).

N threads, each on its own warm keep-alive connection, are released
together by a barrier and send conditional writes carrying the same
X-If-Unmodified-Since value: the collection's current last-modified. The
precondition is checked inside the write's transaction under the user's
row lock, so the writes are serialised and:

- of N PUTs or POSTs, exactly one gets 200 and every other one 412 with
  body 4 (the winner moved the collection's last-modified past the value);
- DELETEs do not move the collection's last-modified (it is the newest
  remaining record: docs/protocol.md, Conditional writes), so in a
  PUT/DELETE race every DELETE that committed before the winning write
  succeeds and every one after it gets 412: a 200 DELETE's timestamp is
  below the winner's, never above; and DELETEs racing only each other all
  succeed.

After every round the whole collection is compared with a model that
applies exactly the answers received: the stored state is the winner's.
"""

import http.client
import json
import threading

import weave
from weave import basic_auth, new_user

N = 6
ROUNDS = 2


class Conn:
    """A keep-alive connection of one racer."""

    def __init__(self, user, password):
        self.auth = basic_auth(user, password)
        self.base = weave.BASE_PATH + f"1.0/{user}/"
        self.conn = http.client.HTTPConnection(weave.HOST, weave.PORT, timeout=60)

    def send(self, method, path, body=None, headers=()):
        hdrs = {"Authorization": self.auth, **dict(headers)}
        data = None if body is None else json.dumps(body).encode()
        self.conn.request(method, self.base + path, body=data, headers=hdrs)
        resp = self.conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()

    def close(self):
        self.conn.close()


def _race(conns, jobs):
    """Send jobs[k] = (method, path, body, headers) on conns[k], all at once."""
    barrier = threading.Barrier(len(jobs))
    results = [None] * len(jobs)
    errors = []

    def worker(k):
        try:
            barrier.wait(timeout=30)
            results[k] = conns[k].send(*jobs[k])
        except Exception as exc:  # reported below, with the thread's job
            errors.append((jobs[k], exc))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=90)
    assert not errors, errors
    return results


def _stamp(conn):
    status, hdrs, body = conn.send("GET", "info/collections")
    assert status == 200, (status, body)
    return "%.2f" % json.loads(body)["race"]


def _state(conn):
    status, _, body = conn.send("GET", "storage/race?full=1")
    assert status == 200, (status, body)
    return {w["id"]: (w["payload"], "%.2f" % w["modified"]) for w in json.loads(body)}


def _split(results, jobs):
    """(winners, losers) as lists of (job index, timestamp); checks every
    loser's answer is exactly 412 with body 4."""
    won, lost = [], []
    for k, (status, hdrs, body) in enumerate(results):
        ts = hdrs.get("X-Weave-Timestamp")
        assert ts, (jobs[k], status, hdrs)
        if status == 200:
            won.append((k, ts))
        else:
            assert (status, body) == (412, b"4"), (jobs[k], status, body)
            assert hdrs.get("Content-Type") == "application/json"
            lost.append((k, ts))
    return won, lost


def _setup():
    user, password = new_user("race")
    conns = [Conn(user, password) for _ in range(N)]
    for c in conns:  # warm: connection open, credentials cached per process
        status, _, body = c.send("GET", "info/collections")
        assert status == 200, body
    status, _, body = conns[0].send("POST", "storage/race",
                                    [{"id": f"seed{i}", "payload": "seed"} for i in range(3)])
    assert status == 200, body
    return conns


def test_racing_puts_and_posts_exactly_one_wins():
    conns = _setup()
    try:
        model = _state(conns[0])
        for rnd in range(ROUNDS):
            # Same id: the stored record is the winner's.
            since = _stamp(conns[0])
            jobs = [("PUT", "storage/race/same", {"payload": f"r{rnd} put by {k}"},
                     {"X-If-Unmodified-Since": since}) for k in range(N)]
            won, lost = _split(_race(conns, jobs), jobs)
            assert len(won) == 1 and len(lost) == N - 1, (rnd, won)
            k, ts = won[0]
            assert float(ts) > float(since)
            model["same"] = (f"r{rnd} put by {k}", ts)
            assert _state(conns[0]) == model, rnd
            assert _stamp(conns[0]) == ts

            # Distinct ids per racer: only the winner's record exists.
            since = ts
            jobs = [("PUT", f"storage/race/p{rnd}-{k}", {"payload": "x" * (k + 1)},
                     {"X-If-Unmodified-Since": since}) for k in range(N)]
            won, lost = _split(_race(conns, jobs), jobs)
            assert len(won) == 1, (rnd, won)
            k, ts = won[0]
            model[f"p{rnd}-{k}"] = ("x" * (k + 1), ts)
            assert _state(conns[0]) == model, rnd

            # POSTs of three records each: all three of the winner, none else.
            since = ts
            jobs = [("POST", "storage/race",
                     [{"id": f"b{rnd}-{k}-{j}", "payload": f"{k}/{j}"} for j in range(3)],
                     {"X-If-Unmodified-Since": since}) for k in range(N)]
            results = _race(conns, jobs)
            won, lost = _split(results, jobs)
            assert len(won) == 1, (rnd, won)
            k, ts = won[0]
            answer = json.loads(results[k][2])
            assert answer["success"] == [f"b{rnd}-{k}-{j}" for j in range(3)], answer
            assert "%.2f" % answer["modified"] == ts
            for j in range(3):
                model[f"b{rnd}-{k}-{j}"] = (f"{k}/{j}", ts)
            assert _state(conns[0]) == model, rnd
    finally:
        for c in conns:
            c.close()


def test_racing_deletes_against_writes():
    conns = _setup()
    try:
        model = _state(conns[0])
        for rnd in range(ROUNDS):
            # Records for the deleters, then a race: half PUT, half DELETE.
            victims = [f"v{rnd}-{k}" for k in range(N)]
            status, _, body = conns[0].send("POST", "storage/race",
                                            [{"id": v, "payload": "victim"} for v in victims])
            assert status == 200, body
            ts0 = "%.2f" % json.loads(body)["modified"]
            for v in victims:
                model[v] = ("victim", ts0)
            since = _stamp(conns[0])
            assert since == ts0
            jobs = []
            for k in range(N):
                hdr = {"X-If-Unmodified-Since": since}
                if k % 2 == 0:
                    jobs.append(("PUT", f"storage/race/w{rnd}-{k}", {"payload": "w"}, hdr))
                elif k % 4 == 1:
                    jobs.append(("DELETE", f"storage/race/{victims[k]}", None, hdr))
                else:
                    jobs.append(("DELETE", f"storage/race?ids={victims[k]}", None, hdr))
            results = _race(conns, jobs)
            won, lost = _split(results, jobs)
            puts = [(k, ts) for k, ts in won if jobs[k][0] == "PUT"]
            dels = [(k, ts) for k, ts in won if jobs[k][0] == "DELETE"]
            assert len(puts) == 1, (rnd, puts)
            put_k, put_ts = puts[0]
            for k, ts in dels:
                # A DELETE that won committed before the PUT; its body is its timestamp.
                assert results[k][2] == ts.encode()
                assert float(ts) < float(put_ts), ("DELETE passed after the winning PUT", ts, put_ts)
                del model[victims[k]]
            model[f"w{rnd}-{put_k}"] = ("w", put_ts)
            assert _state(conns[0]) == model, rnd

            # A stale value: every conditional DELETE is refused, nothing goes.
            stale = "%.2f" % (float(put_ts) - 0.01)
            left = [v for v in victims if v in model]
            jobs = [("DELETE", f"storage/race/{left[k % len(left)]}" if k % 2 else
                     f"storage/race?ids={','.join(left)}", None,
                     {"X-If-Unmodified-Since": stale}) for k in range(N)]
            won, lost = _split(_race(conns, jobs), jobs)
            assert won == [] and len(lost) == N
            assert _state(conns[0]) == model, rnd

        # DELETEs alone: none of them advances the collection's time, so
        # all of them pass (docs/admin.md, "Behaviour worth knowing").
        status, _, body = conns[0].send("POST", "storage/race",
                                        [{"id": f"d{k}", "payload": "d"} for k in range(N)])
        assert status == 200, body
        since = _stamp(conns[0])
        jobs = [("DELETE", f"storage/race/d{k}", None, {"X-If-Unmodified-Since": since})
                for k in range(N)]
        won, lost = _split(_race(conns, jobs), jobs)
        assert len(won) == N, won
        assert not any(rid.startswith("d") for rid in _state(conns[0]))
    finally:
        for c in conns:
            c.close()
