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
- every write a client saw acknowledged survives a node frozen for 30 s,
  kill -9 of a node and its rejoin, and kill -9 of a front-end; the other
  front-end does not stall beyond db_read_timeout (+ margin), and no 503
  is answered once the cluster is whole again (the fault tests below).
"""

import collections
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
RACE_ROUNDS = 20 if LONG else 3  # the fault tests: each node in turn when LONG
REACH = 2.0  # seconds within which a change must reach the other front-end


def cluster(*args):
    p = subprocess.run([os.path.join(ROOT, "tests", "cluster"), *args],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"tests/cluster {' '.join(args)}: {p.stdout}{p.stderr}"
    return p.stdout


def node_sql(n, statement, database="weave"):
    sock = os.path.join(CLUSTER_DIR, f"node{n}", "mysqld.sock")
    p = subprocess.run(["mariadb", "--no-defaults", f"--socket={sock}", "-u", "root",
                        "-N", "-B", database, "-e", statement],
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


def cache_counts(front):
    """The front-end's host-wide counters (weave-admin cache --json); all
    0 before the front-end's first login has made its cache file."""
    p = subprocess.run([weave.ADMIN, "--config", CONFIG[front], "cache", "--json"],
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0 and "no account cache file" in p.stderr:
        return collections.defaultdict(int)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_a_password_verified_through_one_front_end_costs_the_other_no_kdf():
    """Both front-ends have the same cache_secret (one weave.conf, copied):
    the verification A makes is stored in the database (login_verifiers),
    and B takes the account's first request from it without running the
    KDF. A wrong password on B still runs B's KDF, so the counter is seen
    to move when it should."""
    name, pw = weave.new_user("kdf")
    path = f"1.0/{name}/info/collections"
    a0, b0 = cache_counts("A"), cache_counts("B")
    assert on("A", "GET", path, user=name, password=pw).status == 200
    a1 = cache_counts("A")
    assert a1["verifications"] == a0["verifications"] + 1, (a0, a1)
    assert on("B", "GET", path, user=name, password=pw).status == 200
    b1 = cache_counts("B")
    assert b1["verifications"] == b0["verifications"], (b0, b1)
    assert b1["shared_hits"] == b0["shared_hits"] + 1, (b0, b1)
    assert on("B", "GET", path, user=name, password=pw + "-wrong").status == 401
    b2 = cache_counts("B")
    assert b2["verifications"] == b1["verifications"] + 1, (b1, b2)
    print("    B took A's verification from the database: 0 KDF on B, 1 for a wrong password")


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


# ---------------------------------------------------------------- storage node n2
#
# tests/cluster names a storage node n2 whose records live in database
# weave_n2 of the same cluster (docs/shards.md). The read rule holds for
# an account there as for any, and a move under writes through one
# front-end and reads through the other loses nothing.

N2_URL = os.environ.get("WEAVE_N2_URL", "")


def n2_records(uid):
    return int(node_sql(1, f"SELECT COUNT(*) FROM wbo WHERE user_id = {uid}",
                        "weave_n2").strip())


def here_records(uid):
    return int(node_sql(1, f"SELECT COUNT(*) FROM wbo WHERE user_id = {uid}").strip())


def test_an_account_on_node_n2_keeps_the_read_rule_across_front_ends():
    name, pw = weave.new_user("n2race")
    weave.admin("user", "node", name, N2_URL)
    uid = int(node_sql(1, f"SELECT id FROM users WHERE username = '{name}'").strip())
    for direction in (("A", "B"), ("B", "A")):
        warm(direction[1], name, pw)
        misses, reads = race_round(*direction, name, pw, f"n2{direction[0]}")
        assert not misses and reads > 0, f"{direction}: {misses[:5]}"
    assert (here_records(uid), n2_records(uid)) == (0, 200)


def test_a_move_to_another_node_under_writes_through_both_front_ends_loses_nothing():
    name, pw = weave.new_user("n2move")
    weave.admin("user", "node", name, N2_URL)
    uid = int(node_sql(1, f"SELECT id FROM users WHERE username = '{name}'").strip())
    acked, other, unavailable = {}, [], []
    stop = threading.Event()

    def write(front):
        n = 0
        while not stop.is_set():
            rec = {"id": f"{front}{n}", "payload": f"{front} {n}"}
            r = on(front, "POST", f"1.0/{name}/storage/load", body=[rec], user=name, password=pw)
            if r.status == 200 and rec["id"] in r.json()["success"]:
                acked[rec["id"]] = rec["payload"]
            elif r.status == 503:
                unavailable.append(r.headers.get("Retry-After"))
                time.sleep(0.05)
            else:
                other.append((r.status, r.body[:200]))
            n += 1

    threads = [threading.Thread(target=write, args=(f,), daemon=True) for f in "AB"]
    for t in threads:
        t.start()
    try:
        time.sleep(1)
        out = weave.admin("user", "move", name, "--to", "default", "--pause", "1000").stdout
        time.sleep(1)
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    assert "switched to" in out, out
    assert not other, other[:5]
    assert all(unavailable), "a 503 without Retry-After"
    for front in "AB":
        r = on(front, "GET", f"1.0/{name}/storage/load?full=1", user=name, password=pw)
        assert r.status == 200, r
        final = {o["id"]: o["payload"] for o in r.json()}
        lost = {i: p for i, p in acked.items() if final.get(i) != p}
        assert not lost, f"{front}: {len(lost)} acknowledged writes lost: {list(lost)[:5]}"
    assert acked and (here_records(uid), n2_records(uid)) == (len(final), 0)
    print(f"    {len(acked)} writes acknowledged through A and B, {len(unavailable)} answered 503")


# ---------------------------------------------------------------- faults
#
# Each fault runs under load on both front-ends: two writers per front-end,
# each on its own account, logging every answer (start, end, status) and
# every acknowledged write. What must hold:
# - no acknowledged write is lost (read back through both front-ends and
#   counted on every node once the cluster is whole again);
# - the front-end whose first node is not the faulty one never goes longer
#   than STALL_LIMIT without an acknowledged write: db_read_timeout, plus
#   one connect, plus a margin (Galera's eviction of a hung node, during
#   which the whole cluster waits, takes 3-6 s here, within the timeout);
# - every 503 carries a Retry-After of at most 30 s (failover, not the
#   operator's 10 minutes);
# - once the cluster is whole (every node Synced) and SETTLE seconds have
#   passed, neither front-end answers anything but 200 for CHECK seconds.

FIRST_NODE = {"A": 1, "B": 2}  # tests/cluster: A tries 1, 2, 3; B tries 2, 3, 1
FREEZE_SECONDS = 30
SETTLE = 3.0
CHECK = 5.0


def config_int(front, key):
    return int(weave.read_config(CONFIG[front])[key])


READ_TIMEOUT = max(config_int(f, "db_read_timeout") for f in "AB")
CONNECT_TIMEOUT = max(config_int(f, "db_connect_timeout") for f in "AB")
STALL_LIMIT = READ_TIMEOUT + CONNECT_TIMEOUT + 2.0


class Load:
    """Writers on both front-ends, two per front-end, each account its own."""

    def __init__(self, tag):
        self.accounts = {f: weave.new_user(f"{tag}{f}") for f in "AB"}
        self.acked = {f: [] for f in "AB"}  # (rid, end time)
        self.answers = []  # (front, start, end, status or None, Retry-After)
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._write, args=(f, f"{tag}{f}{t}w"))
                        for f in "AB" for t in range(2)]

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=60)

    def _write(self, front, prefix):
        name, pw = self.accounts[front]
        i = 0
        while not self.stop.is_set():
            rid = f"{prefix}{i}"
            i += 1
            t0 = time.monotonic()
            try:
                r = on(front, "PUT", f"1.0/{name}/storage/bookmarks/{rid}",
                       body={"payload": rid}, user=name, password=pw, timeout=60)
                status, retry = r.status, r.headers.get("Retry-After")
            except OSError:
                status, retry = None, None
            t1 = time.monotonic()
            self.answers.append((front, t0, t1, status, retry))
            if status == 200:
                self.acked[front].append((rid, t1))
            else:
                time.sleep(0.1)

    def longest_gap(self, front, t_from, t_to):
        """Longest time in [t_from, t_to] without an acknowledged write."""
        ends = sorted(t for _, t in self.acked[front] if t_from <= t <= t_to)
        points = [t_from, *ends, t_to]
        return max(b - a for a, b in zip(points, points[1:]))

    def acked_between(self, front, t_from, t_to):
        return sum(1 for _, t in self.acked[front] if t_from <= t <= t_to)

    def failures(self, since, fronts="AB"):
        return [(f, round(t0 - since, 2), st) for f, t0, _, st, _ in self.answers
                if f in fronts and t0 >= since and st != 200]

    def bad_retry_after(self):
        return [(f, retry) for f, _, _, st, retry in self.answers if st == 503
                and (retry is None or not retry.isdigit() or not 1 <= int(retry) <= 30)]

    def check_nothing_lost(self):
        """Every acknowledged write, through both front-ends and on each node."""
        for owner in "AB":
            name, pw = self.accounts[owner]
            acked = {rid for rid, _ in self.acked[owner]}
            assert acked, f"no write acknowledged on {owner}"
            for front in "AB":
                r = on(front, "GET", f"1.0/{name}/storage/bookmarks", user=name, password=pw)
                assert r.status == 200, r
                missing = acked - set(r.json())
                assert not missing, (f"{owner}'s writes read through {front}: {len(missing)} "
                                     f"acknowledged writes lost: {sorted(missing)[:5]}")
            for node in (1, 2, 3):
                count = int(node_sql(node, "SELECT COUNT(*) FROM wbo w JOIN users u ON "
                                           f"u.id = w.user_id WHERE u.username = '{name}' "
                                           "AND w.collection = 'bookmarks'"))
                assert count >= len(acked), (node, owner, count, len(acked))

    def summary(self):
        n503 = sum(1 for a in self.answers if a[3] == 503)
        nerr = sum(1 for a in self.answers if a[3] is None)
        return (f"{sum(len(v) for v in self.acked.values())} writes acknowledged, none lost; "
                f"{n503} answered 503, {nerr} connection errors")


def whole_again(load, healthy, t_fault, label):
    """After a fault: the cluster is whole; check the healthy front-ends'
    stall, the Retry-Afters, SETTLE + CHECK seconds of clean answers."""
    t_whole = time.monotonic()
    time.sleep(SETTLE)
    t_check = time.monotonic()
    time.sleep(CHECK)
    gaps = {f: load.longest_gap(f, t_fault, t_whole) for f in "AB"}
    for front in healthy:
        assert gaps[front] <= STALL_LIMIT, \
            f"{label}: front-end {front} stalled {gaps[front]:.1f} s (limit {STALL_LIMIT:.0f} s)"
    late = load.failures(t_check)
    assert not late, f"{label}: failures after the cluster was whole again: {late[:10]}"
    for front in "AB":
        assert load.acked_between(front, t_check, time.monotonic()) > 0, \
            f"{label}: {front} acknowledged nothing after the cluster was whole"
    assert not load.bad_retry_after(), load.bad_retry_after()[:5]
    return gaps


def others(node):
    """The front-ends whose first node is not NODE."""
    return [f for f in "AB" if FIRST_NODE[f] != node]


def freeze_node_under_load(node):
    with Load(f"frz{node}") as load:
        time.sleep(2.0)
        t_fault = time.monotonic()
        cluster("freeze-node", str(node))
        try:
            time.sleep(FREEZE_SECONDS)
        finally:
            cluster("thaw-node", str(node))
        t_thaw = time.monotonic()
        cluster("wait-node", str(node))
        gaps = whole_again(load, others(node), t_fault, f"node {node} frozen")
    # Every front-end served during the freeze, its first node frozen or not.
    for front in "AB":
        assert load.acked_between(front, t_fault + STALL_LIMIT, t_thaw) > 0, \
            f"{front} served nothing while node {node} was frozen"
    load.check_nothing_lost()
    print(f"    node {node} frozen {FREEZE_SECONDS} s: longest stall A {gaps['A']:.1f} s, "
          f"B {gaps['B']:.1f} s (limit {STALL_LIMIT:.0f}); {load.summary()}")


def kill_node_under_load(node):
    with Load(f"kill{node}") as load:
        time.sleep(2.0)
        t_fault = time.monotonic()
        cluster("kill-node", str(node))
        time.sleep(5.0)
        t_restart = time.monotonic()
        cluster("start-node", str(node))
        rejoin = time.monotonic() - t_restart
        gaps = whole_again(load, others(node), t_fault, f"node {node} killed")
    load.check_nothing_lost()
    print(f"    node {node} killed, rejoined in {rejoin:.1f} s: longest stall "
          f"A {gaps['A']:.1f} s, B {gaps['B']:.1f} s; {load.summary()}")


def test_a_frozen_node_stalls_no_front_end_beyond_the_timeout():
    for node in ((1, 2, 3) if LONG else (1,)):
        freeze_node_under_load(node)


def test_kill_minus_9_of_a_node_loses_no_acknowledged_write():
    for node in ((1, 2, 3) if LONG else (1,)):
        kill_node_under_load(node)


def test_kill_minus_9_of_a_front_end_leaves_the_other_serving():
    with Load("crashweb") as load:
        time.sleep(2.0)
        t_fault = time.monotonic()
        cluster("crash-web", "A")
        time.sleep(3.0)
        cluster("start-web", "A")
        gaps = whole_again(load, "B", t_fault, "front-end A killed")
        # B never noticed: nothing but 200 there, the whole time.
        assert not load.failures(0, "B"), load.failures(0, "B")[:10]
    load.check_nothing_lost()
    print(f"    front-end A killed and started again: longest stall B {gaps['B']:.1f} s; "
          f"{load.summary()}")
