"""Crash consistency (issue 7, item 2): weave.fcgi processes SIGKILLed in the
middle of 100-record POSTs, and MariaDB killed or restarted under load.

Afterwards every POST the client saw succeed is stored whole with the
answered `modified`; every POST that failed is stored whole or not at all;
per-user timestamps are unique and follow commit order; the server answers
again on its own.

WEAVE_CRASH_CYCLES=N runs N cycles of each test (default: 6 process kills
and 2 database restarts, ~20 s). The long mode is N=100 (docs/admin.md, "Crash,
concurrency and soak tests").

The process kills run against a second Apache started for this test on the
same database and binary: a killed process makes Apache log "End of script
output before headers", which tests/run counts as a crash in the main
stack's log. This test checks the second log itself: every process that
mod_fcgid reaped after a signal must be one we killed, with signal 9.
"""

import os
import random
import re
import shutil
import signal
import threading
import time

import loadkit
import weave
from weave import db_start, db_stop, new_user

_env_cycles = os.environ.get("WEAVE_CRASH_CYCLES")
KILL_CYCLES = int(_env_cycles) if _env_cycles else 6
DB_CYCLES = int(_env_cycles) if _env_cycles else 2
STACK = os.environ.get("WEAVE_STACK_DIR", "")
RECOVERY_SECONDS = 60


def _start_writers(port=None, users=2, per_user=2):
    """users x per_user BatchWriter threads; each user's threads write
    different collections."""
    stop = threading.Event()
    progress = loadkit.Counter()
    accounts, writers = [], []
    for u in range(users):
        name, pw = new_user("crash")
        accounts.append((name, pw))
        for t in range(per_user):
            coll = ("history", "bookmarks", "forms", "passwords")[t % 4]
            writers.append(loadkit.BatchWriter(name, pw, coll, f"u{u}t{t}", stop,
                                               progress, port=port))
    for w in writers:
        w.start()
    return stop, progress, accounts, writers


def _stop_writers(stop, writers):
    stop.set()
    for w in writers:
        w.join(timeout=120)
        assert not w.is_alive(), f"writer {w.prefix} still running"
        assert w.crash is None, f"writer {w.prefix} died: {w.crash!r}"


def _wait_answering(port=None, seconds=RECOVERY_SECONDS):
    """The server takes a write and a read again, then answers 12 requests
    in a row (spread over the process pool) without any failure."""
    name, pw = new_user("crashchk")
    client = loadkit.Client(name, pw, port=port)
    deadline = time.monotonic() + seconds
    last = None
    while time.monotonic() < deadline:
        try:
            last = client.request("PUT", f"1.0/{name}/storage/meta/global",
                                  body={"payload": "{}"})
            if last.status == 200:
                break
        except OSError as exc:
            last = exc
        time.sleep(0.2)
    else:
        raise AssertionError(f"server did not answer a write within {seconds} s: {last!r}")
    for _ in range(12):
        fresh = loadkit.Client(name, pw, port=port)  # new connection each time
        r = fresh.request("GET", f"1.0/{name}/info/collections")
        fresh.close()
        assert r.status == 200 and "meta" in r.json(), r
    client.close()


def _check_results(label, accounts, writers, cycles, extra=""):
    """Read every batch back and check timestamps; prints the figures."""
    total = {"ok": 0, "failed": 0, "failed_stored": 0, "failed_absent": 0,
             "records_lost": 0, "partial": 0}
    problems = []
    for name, pw in accounts:
        results = [r for w in writers if w.user == name for r in w.results]
        figures, probs = loadkit.verify_batches(results, name, pw)
        problems += probs
        for k in total:
            total[k] += figures[k]
        good = [(r.sent, r.done, r.modified, r.tag) for r in results if r.ok]
        problems += loadkit.order_problems(good)
    print(f"    {label}: {cycles} cycles{extra}; POSTs {total['ok']} ok, "
          f"{total['failed']} failed ({total['failed_stored']} stored whole, "
          f"{total['failed_absent']} absent); records lost {total['records_lost']}; "
          f"partial batches {total['partial']}")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:30])
    assert total["records_lost"] == 0 and total["partial"] == 0, total
    return total


# ---------------------------------------------------------------- SIGKILL

def _start_second_apache():
    adir = os.path.join(STACK, "crash-apache")
    shutil.rmtree(adir, ignore_errors=True)
    port = int(loadkit.stack_lib_run("stack_free_port").strip())
    # fcgid:info: mod_fcgid then logs each process it reaps, and how it died.
    loadkit.stack_lib_run('stack_apache_start "$@"', adir, str(port),
                          loadkit.fcgi_binary(STACK), weave.CONFIG,
                          *loadkit.sanitizer_env(),
                          env={"STACK_APACHE_LOGLEVEL": "warn fcgid:info"})
    return adir, port


def _pick_victim(adir, seconds=2.0):
    """A weave.fcgi process serving a request (busy), else any; (pid, busy)."""
    deadline = time.monotonic() + seconds
    pids = []
    while time.monotonic() < deadline:
        pids = loadkit.fcgi_pids(adir)
        busy = [p for p in pids if loadkit.is_busy(p)]
        if busy:
            return random.choice(busy), True
        time.sleep(0.002)
    assert pids, "no weave.fcgi process found under the second Apache"
    return random.choice(pids), False


def _deaths_in_log(path):
    """{pid: signal} of the weave.fcgi processes mod_fcgid reaped after a
    signal ("get stop signal 9" for SIGKILL/SIGTERM, "get unexpected
    signal N" for a crash)."""
    with open(path, errors="replace") as f:
        found = re.findall(r"weave\.fcgi\((\d+)\) exit\([^)]*\), get \w+ signal (\d+)", f.read())
    return {int(pid): int(sig) for pid, sig in found}


def test_sigkill_during_batch_posts():
    assert STACK, "WEAVE_STACK_DIR is not set"
    adir, port = _start_second_apache()
    stop = None
    writers = []
    try:
        stop, progress, accounts, writers = _start_writers(port=port)
        killed = []
        busy_kills = 0
        for cycle in range(KILL_CYCLES):
            # Writes flow again (after the previous kill) before the next one.
            assert progress.wait_beyond(progress.get(), 2, RECOVERY_SECONDS), \
                f"no POST succeeded within {RECOVERY_SECONDS} s after kill {cycle}"
            time.sleep(random.uniform(0, 0.1))
            pid, busy = _pick_victim(adir)
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                busy_kills += busy
            except ProcessLookupError:
                pass  # it exited on its own just now: no kill this cycle
        assert progress.wait_beyond(progress.get(), 2, RECOVERY_SECONDS), \
            "no POST succeeded after the last kill"
        _stop_writers(stop, writers)
        _wait_answering(port=port)
        kills = len(killed)
        total = _check_results("SIGKILL", accounts, writers, KILL_CYCLES,
                               f", {kills} processes killed ({busy_kills} mid-request)")
        # The kills must have hit requests, or nothing was tested.
        assert busy_kills >= (kills + 1) // 2, (kills, busy_kills)
        assert total["failed"] >= 1, "no POST failed: no kill landed in a request"
        # mod_fcgid logs a dead process when it reaps it, every few seconds.
        # Every process that died of a signal died of ours.
        log = os.path.join(adir, "error.log")
        deadline = time.monotonic() + 10
        while not set(killed) <= set(_deaths_in_log(log)) and time.monotonic() < deadline:
            time.sleep(0.25)
        deaths = _deaths_in_log(log)
        assert deaths == {pid: signal.SIGKILL for pid in killed}, \
            f"killed {killed}, mod_fcgid reaped {deaths}"
    finally:
        if stop is not None:
            stop.set()
        for w in writers:
            w.join(timeout=60)
        loadkit.stack_lib_run('stack_apache_stop "$1"', adir)


# ---------------------------------------------------------------- MariaDB

def _kill_mariadb():
    """SIGKILL mysqld (no clean shutdown) and wait until it is gone."""
    with open(os.path.join(STACK, "db", "mysqld.pid")) as f:
        pid = int(f.read().strip())
    os.kill(pid, signal.SIGKILL)
    # Gone means reaped, not a zombie: tools/stack.sh takes a zombie for a
    # running server and would not start a new one.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if not os.path.exists(f"/proc/{pid}"):
            return
        time.sleep(0.05)
    raise AssertionError(f"mysqld {pid} still alive 30 s after SIGKILL")


def test_database_killed_and_restarted_under_load():
    assert STACK, "WEAVE_STACK_DIR is not set"
    stop, progress, accounts, writers = _start_writers()
    hard = 0
    try:
        for cycle in range(DB_CYCLES):
            assert progress.wait_beyond(progress.get(), 2, RECOVERY_SECONDS), \
                f"no POST succeeded within {RECOVERY_SECONDS} s after restart {cycle}"
            time.sleep(random.uniform(0, 0.2))
            if cycle % 2 == 0:
                _kill_mariadb()  # mid-transaction, no clean shutdown
                hard += 1
            else:
                db_stop()
            time.sleep(random.uniform(0.1, 0.5))  # load meets a dead database
            db_start()
        assert progress.wait_beyond(progress.get(), 2, RECOVERY_SECONDS), \
            "no POST succeeded after the last restart"
    finally:
        # Leave the database running for the tests after this one, whatever
        # happened (db_start is a no-op when it runs).
        db_start()
        _stop_writers(stop, writers)
    _wait_answering()
    # While the database was away the server said "try later", never more.
    failures = [r for w in writers for r in w.results if not r.ok]
    odd = [r for r in failures if r.status != 503 or not r.retry_after]
    assert not odd, f"failures other than 503 + Retry-After: {odd[:10]}"
    _check_results("MariaDB restart", accounts, writers, DB_CYCLES,
                   f" ({hard} SIGKILL, {DB_CYCLES - hard} clean)")
