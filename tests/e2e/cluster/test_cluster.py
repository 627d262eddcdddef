"""Two front-ends on a three-node Galera cluster (tests/cluster).

Run by `tests/cluster test [--long]`, which starts the topology and sets
WEAVE_URL_A/B, WEAVE_CONFIG_A/B, WEAVE_ADMIN, WEAVE_CLUSTER_DIR (and
WEAVE_BASE_URL/WEAVE_CONFIG to front-end A, for weave.py). The short form
(tests/run) runs fewer rounds and kills one node; WEAVE_CLUSTER_LONG=1
runs 20 race rounds each way and kills every node in turn.

What must hold, whichever front-end a client uses:
- no answer's X-Weave-Timestamp is at or above the stamp of a write it
  does not show (a client would never download that write), also with
  front-end B's clock 3 s ahead of A's (tests/cluster runs it so);
- a revocation (password change, disable, delete, SQL typed by hand)
  made through one front-end holds on the other within 2 seconds;
- every write a client saw acknowledged survives kill -9 of any node,
  and both front-ends serve again by themselves.
"""

import json
import os
import subprocess
import threading
import time
import urllib.parse

import weave
from weave import request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
URL_A = os.environ["WEAVE_URL_A"]
URL_B = os.environ["WEAVE_URL_B"]
PORT = {"A": urllib.parse.urlsplit(URL_A).port, "B": urllib.parse.urlsplit(URL_B).port}
CONFIG = {"A": os.environ["WEAVE_CONFIG_A"], "B": os.environ["WEAVE_CONFIG_B"]}
CLUSTER_DIR = os.environ["WEAVE_CLUSTER_DIR"]
LONG = os.environ.get("WEAVE_CLUSTER_LONG") == "1"
RACE_ROUNDS = 20 if LONG else 3
REACH = 2.0  # seconds within which a change must reach the other front-end


def cluster(*args):
    p = subprocess.run([os.path.join(ROOT, "tests", "cluster"), *args],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"tests/cluster {' '.join(args)}: {p.stdout}{p.stderr}"
    return p.stdout


def node_sql(n, statement):
    sock = os.path.join(CLUSTER_DIR, f"node{n}", "mysqld.sock")
    p = subprocess.run(["mariadb", "--no-defaults", f"--socket={sock}", "-u", "root",
                        "-N", "-B", "weave", "-e", statement],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def on(front, method, path, **kw):
    return request(method, path, port=PORT[front], **kw)


def stamp(r):
    return int(round(float(r.headers.get("X-Weave-Timestamp")) * 100))


def warm(front, name, pw, times=4):
    """Reads until the front-end keeps the account's row (the second read
    keeps it): later reads there run no statement."""
    for _ in range(times):
        r = on(front, "GET", f"1.0/{name}/info/collections", user=name, password=pw)
        assert r.status == 200, r


def until(predicate, limit):
    """Seconds until predicate() held (polled every 20 ms), or None."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if predicate():
            return time.monotonic() - t0
        time.sleep(0.02)
    return None


SKEW = float(os.environ.get("WEAVE_CLUSTER_SKEW", "3"))


def test_front_end_b_clock_runs_ahead():
    """The topology is what the other tests rely on: B's clock is SKEW
    seconds ahead of A's (an answer without a login carries the server's
    own clock), so the race below also runs with clocks apart."""
    a = stamp(on("A", "GET", "1.0/nobody/info/collections"))
    b = stamp(on("B", "GET", "1.0/nobody/info/collections"))
    assert abs((b - a) / 100 - SKEW) < 1.0, (a, b, SKEW)


# ---------------------------------------------------------------- the race

def race_round(writer, reader, name, pw, round_no):
    """A reader on one front-end lists newer=BASE in a loop while a
    writer on the other posts 100 records. Returns the reads that answered
    a stamp at or above the write's without all of its records."""
    coll = "tabs"
    base = stamp(on(reader, "GET", f"1.0/{name}/storage/{coll}", user=name, password=pw))
    ids = {f"r{round_no}x{i}" for i in range(100)}
    seen = []  # (X-Weave-Timestamp, how many of ids it showed)
    stop = threading.Event()

    def read_loop():
        while not stop.is_set():
            r = on(reader, "GET", f"1.0/{name}/storage/{coll}?newer={base / 100:.2f}",
                   user=name, password=pw)
            assert r.status == 200, r
            seen.append((stamp(r), len(set(r.json()) & ids)))

    t = threading.Thread(target=read_loop)
    t.start()
    try:
        time.sleep(0.05)
        r = on(writer, "POST", f"1.0/{name}/storage/{coll}",
               body=[{"id": i, "payload": "x" * 50} for i in sorted(ids)],
               user=name, password=pw)
        assert r.status == 200, r
        written = stamp(r)
        time.sleep(0.3)
    finally:
        stop.set()
        t.join()
    misses = [(ts, n) for ts, n in seen if ts >= written and n < len(ids)]
    return misses, len(seen)


def test_reader_never_skips_a_write_made_through_the_other_front_end():
    name, pw = weave.new_user("race")
    total_reads = 0
    for direction in (("A", "B"), ("B", "A")):
        warm(direction[1], name, pw)
        for i in range(RACE_ROUNDS):
            misses, reads = race_round(*direction, name, pw, f"{direction[0]}{i}")
            total_reads += reads
            assert not misses, f"{direction}: round {i}: {misses[:5]}"
    assert total_reads > 0
    print(f"    race: {2 * RACE_ROUNDS} rounds, {total_reads} reads, 0 missed")


def test_alternating_writes_stamp_upwards_and_all_show():
    name, pw = weave.new_user("alt")
    last = 0
    for i in range(20):
        front = "AB"[i % 2]
        r = on(front, "PUT", f"1.0/{name}/storage/forms/f{i}", body={"payload": str(i)},
               user=name, password=pw)
        assert r.status == 200, r
        assert stamp(r) > last, (i, stamp(r), last)
        last = stamp(r)
    for front in "AB":
        r = on(front, "GET", f"1.0/{name}/storage/forms?full=1", user=name, password=pw)
        assert r.status == 200 and len(r.json()) == 20, (front, r)


def test_if_unmodified_since_holds_across_front_ends():
    name, pw = weave.new_user("ius")
    warm("B", name, pw)
    r = on("A", "PUT", f"1.0/{name}/storage/prefs/p", body={"payload": "1"},
           user=name, password=pw)
    assert r.status == 200, r
    older = (stamp(r) - 1) / 100
    r = on("B", "PUT", f"1.0/{name}/storage/prefs/p", body={"payload": "2"},
           user=name, password=pw, headers={"X-If-Unmodified-Since": f"{older:.2f}"})
    assert r.status == 412, r
    r = on("B", "GET", f"1.0/{name}/storage/prefs/p", user=name, password=pw)
    assert json.loads(r.body)["payload"] == "1", r


def test_stamps_reach_the_other_front_end():
    name, pw = weave.new_user("stmp")
    warm("B", name, pw)
    r = on("A", "POST", f"1.0/{name}/storage/history",
           body=[{"id": "h1", "payload": "x"}], user=name, password=pw)
    assert r.status == 200, r
    written = r.json()["modified"]

    def seen():
        got = on("B", "GET", f"1.0/{name}/info/collections", user=name, password=pw)
        quota = on("B", "GET", f"1.0/{name}/info/quota", user=name, password=pw)
        return (got.json().get("history") == written and quota.status == 200
                and quota.json()[0] > 0)
    took = until(seen, REACH)
    assert took is not None, "info/collections on B still stale after 2 s"
    print(f"    info/collections and info/quota on B after {took:.2f} s")


# ---------------------------------------------------------------- revocations

def test_password_change_through_one_front_end_holds_on_the_other():
    name, pw = weave.new_user("pwc")
    warm("B", name, pw)
    new = pw + "-new"
    r = on("A", "POST", f"user/1.0/{name}/password", body=new, user=name, password=pw)
    assert r.status == 200, r
    took = until(lambda: on("B", "GET", f"1.0/{name}/info/collections",
                           user=name, password=pw).status == 401, REACH)
    assert took is not None, "B still accepts the old password after 2 s"
    r = on("B", "GET", f"1.0/{name}/info/collections", user=name, password=new)
    assert r.status == 200, r
    print(f"    old password refused on B after {took:.2f} s")


def test_disable_and_hand_typed_sql_hold_on_the_other_front_end():
    name, pw = weave.new_user("dis")
    warm("B", name, pw)
    weave.admin("user", "disable", name)
    took = until(lambda: on("B", "GET", f"1.0/{name}/info/collections",
                           user=name, password=pw).status == 401, REACH)
    assert took is not None, "B still serves a disabled account after 2 s"
    weave.admin("user", "enable", name)
    assert until(lambda: on("B", "GET", f"1.0/{name}/info/collections",
                           user=name, password=pw).status == 200, REACH) is not None
    warm("A", name, pw)
    # By hand, on node 3, which neither front-end reads first.
    node_sql(3, f"UPDATE users SET status = 0 WHERE username = '{name}'")
    for front in "AB":
        took = until(lambda: on(front, "GET", f"1.0/{name}/info/collections",
                               user=name, password=pw).status == 401, REACH)
        assert took is not None, f"{front} still serves after a hand-typed disable"
    print(f"    hand-typed disable refused within {took:.2f} s")


def test_delete_and_recreate_reaches_the_other_front_end():
    name, pw = weave.new_user("del")
    on("A", "PUT", f"1.0/{name}/storage/tabs/t", body={"payload": "old"},
       user=name, password=pw)
    warm("B", name, pw)
    weave.admin("user", "delete", name, "--yes")
    took = until(lambda: on("B", "GET", f"1.0/{name}/info/collections",
                           user=name, password=pw).status == 401, REACH)
    assert took is not None, "B still serves a deleted account after 2 s"
    weave.admin("user", "add", name, "--password-file", "-", input=pw + "\n")
    r = on("B", "GET", f"1.0/{name}/info/collections", user=name, password=pw)
    assert r.status == 200 and r.json() == {}, r
    r = on("B", "GET", f"1.0/{name}/storage/tabs/t", user=name, password=pw)
    assert r.status == 404, r


# ---------------------------------------------------------------- faults

def writer(front, name, pw, prefix, acked, stop, errors, unavailable):
    i = 0
    while not stop.is_set():
        rid = f"{prefix}{i}"
        try:
            r = on(front, "PUT", f"1.0/{name}/storage/bookmarks/{rid}",
                   body={"payload": rid}, user=name, password=pw, timeout=20)
        except OSError as exc:
            errors.append(f"{front}: {exc}")
            continue
        if r.status == 200:
            acked.append(rid)
        elif r.status == 503:
            unavailable.append(front)
            if not r.headers.get("Retry-After"):
                errors.append(f"{front}: 503 without Retry-After")
            time.sleep(0.1)
        else:
            errors.append(f"{front}: {r.status} {r.body[:80]}")
        i += 1


def kill_with_writes_in_flight(node):
    name, pw = weave.new_user(f"kill{node}")
    acked, errors, unavailable, stop = [], [], [], threading.Event()
    threads = [threading.Thread(target=writer, args=(f, name, pw, f"{f}n{node}w", acked, stop,
                                                     errors, unavailable))
               for f in "AB" for _ in range(2)]
    for t in threads:
        t.start()
    try:
        time.sleep(1.0)
        cluster("kill-node", str(node))
        time.sleep(1.0)
        before = len(acked)
        # Both front-ends serve again by themselves.
        for front in "AB":
            took = until(lambda: on(front, "GET", f"1.0/{name}/info/collections",
                                   user=name, password=pw).status == 200, 30)
            assert took is not None, f"{front} does not serve 30 s after node {node} died"
        time.sleep(2.0)
        assert len(acked) > before, f"no write acknowledged after node {node} died"
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors[:5]
    cluster("start-node", str(node))
    for front in "AB":
        r = on(front, "GET", f"1.0/{name}/storage/bookmarks", user=name, password=pw)
        assert r.status == 200, r
        missing = set(acked) - set(r.json())
        assert not missing, f"{front}: {len(missing)} acknowledged writes lost: {sorted(missing)[:5]}"
    # The node that came back has them too.
    count = int(node_sql(node, "SELECT COUNT(*) FROM wbo w JOIN users u ON u.id = w.user_id "
                               f"WHERE u.username = '{name}' AND w.collection = 'bookmarks'"))
    assert count >= len(set(acked)), (count, len(set(acked)))
    print(f"    node {node}: {len(set(acked))} acknowledged writes, none lost; "
          f"{len(unavailable)} answered 503 with Retry-After")


def test_kill_minus_9_of_a_node_loses_no_acknowledged_write():
    for node in ((1, 2, 3) if LONG else (1,)):
        kill_with_writes_in_flight(node)
