"""A weave.fcgi process that dies says what it was doing (issue 28, item 4).

mod_fcgid ends a process with SIGTERM (its busy or I/O timeout, a
restart); before, such a process vanished mid-request with no word in the
log. src/last_words.c logs one line: request id, method, path without the
query string, phase, and how long the request had run.

Runs against a second Apache on the stack's database and binary (as
test_crash.py does), so that the killed request's 500 is not counted as a
crash of the main stack.
"""

import os
import re
import select
import shutil
import signal
import subprocess
import threading
import time

import loadkit
import weave
from weave import new_user

STACK = os.environ.get("WEAVE_STACK_DIR", "")


def _start_second_apache():
    adir = os.path.join(STACK, "death-apache")
    shutil.rmtree(adir, ignore_errors=True)
    port = int(loadkit.stack_lib_run("stack_free_port").strip())
    loadkit.stack_lib_run('stack_apache_start "$@"', adir, str(port),
                          loadkit.fcgi_binary(STACK), weave.CONFIG,
                          *loadkit.sanitizer_env())
    return adir, port


def _hold_row_lock(name, seconds):
    """A session that locks the account's users row for SECONDS."""
    statement = (f"START TRANSACTION; SELECT id FROM users WHERE username = '{name}' "
                 f"FOR UPDATE; SELECT SLEEP({seconds}); ROLLBACK;")
    # Unbuffered, so the row it locked is printed as soon as it holds it.
    return subprocess.Popen(["mariadb", "--no-defaults", f"--socket={STACK}/db/mysqld.sock",
                             "--user=root", "--batch", "--skip-column-names",
                             "--unbuffered", "weave", "-e", statement],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _locked_row(holder, seconds):
    """The first line the holder prints (the id it locked), or "" if it
    printed none within SECONDS."""
    ready, _, _ = select.select([holder.stdout], [], [], seconds)
    return holder.stdout.readline().strip() if ready else ""


def _end_lock_holder(holder):
    """End the holder's server session too (a killed client leaves it
    sleeping with the lock)."""
    for (thread,) in weave.sql("SELECT trx_mysql_thread_id FROM "
                               "information_schema.INNODB_TRX"):
        try:
            weave.sql(f"KILL {int(thread)}")
        except AssertionError:
            pass  # ended meanwhile
    holder.kill()
    holder.wait()


def _lock_waits():
    """Sessions waiting for a row lock: INNODB_TRX's LOCK WAIT, or (as
    INNODB_TRX sometimes lists a transaction only seconds late) the
    server's own session running a locking read, which can only be
    waiting while the holder keeps the row."""
    rows = weave.sql("SELECT (SELECT COUNT(*) FROM information_schema.INNODB_TRX "
                     "WHERE trx_state = 'LOCK WAIT') + (SELECT COUNT(*) FROM "
                     "information_schema.PROCESSLIST WHERE USER = 'weave' "
                     "AND INFO LIKE '%FOR UPDATE%')")
    return int(rows[0][0])


def _log(adir):
    with open(os.path.join(adir, "error.log"), errors="replace") as f:
        return f.read()


def test_a_process_killed_mid_request_logs_the_request_and_phase():
    assert STACK, "WEAVE_STACK_DIR is not set"
    name, pw = new_user("death")
    adir, port = _start_second_apache()
    holder = None
    try:
        # The login works (and the process pool is warm) before the lock.
        r = weave.request("GET", f"1.0/{name}/info/collections", user=name,
                          password=pw, port=port)
        assert r.status == 200, r
        holder = _hold_row_lock(name, 30)
        user_id = weave.sql(f"SELECT id FROM users WHERE username = '{name}'")[0][0]
        locked = _locked_row(holder, 20)
        assert locked == user_id, f"the lock holder did not lock the row: {locked!r}"
        answers = []

        def put():
            try:
                answers.append(weave.request(
                    "PUT", f"1.0/{name}/storage/tabs/t?secret=do-not-log",
                    body={"payload": "x"}, user=name, password=pw, port=port,
                    timeout=30))
            except OSError as exc:
                answers.append(exc)
        t = threading.Thread(target=put)
        t.start()
        deadline = time.monotonic() + 8  # below db_read_timeout (10 s)
        while _lock_waits() == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _lock_waits() > 0, "the PUT never waited for the row lock"
        busy = [p for p in loadkit.fcgi_pids(adir) if loadkit.is_busy(p)]
        assert len(busy) == 1, f"expected one busy weave.fcgi, found {busy}"
        os.kill(busy[0], signal.SIGTERM)
        t.join(timeout=30)
        assert answers and (isinstance(answers[0], OSError) or answers[0].status != 200), \
            f"a killed request was answered {answers}"
        pattern = (rf"weave\[{busy[0]}\] error req=\d+: ended by SIGTERM while "
                   rf"waiting for the database, \d+ ms into PUT "
                   rf"/weave/1\.0/{name}/storage/tabs/t\n")
        deadline = time.monotonic() + 5
        while not re.search(pattern, _log(adir)) and time.monotonic() < deadline:
            time.sleep(0.1)
        log = _log(adir)
        assert re.search(pattern, log), f"no last words in the log:\n{log[-2000:]}"
        assert "do-not-log" not in log, "the query string reached the log"
        _end_lock_holder(holder)
        holder = None
        # A fresh process serves, and stays idle until Apache stops.
        r = weave.request("GET", f"1.0/{name}/info/collections", user=name,
                          password=pw, port=port)
        assert r.status == 200, r
    finally:
        if holder is not None:
            _end_lock_holder(holder)
        loadkit.stack_lib_run('stack_apache_stop "$1"', adir)
    # Apache's stop ends the idle processes with SIGTERM too: said at info.
    assert re.search(r"weave\[\d+\] info: ended by SIGTERM while waiting "
                     r"for a request", _log(adir)), _log(adir)[-2000:]
