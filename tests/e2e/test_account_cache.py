"""Kept account rows (src/account_cache.h): after a warm-up a sync poll
needs no database statement, yet every change made through this host
reaches every FastCGI process at once, and a change made behind the
server's back (hand-typed SQL) shows within account_cache_seconds.

"Every process": the checks run many polls on parallel connections, so
mod_fcgid spreads them over its processes, each of which was warmed the
same way first (a process keeps a row from its second read on).
"""

import os
import random
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import loadkit
from weave import ADMIN, CONFIG, admin, new_user, read_config, request, sql

PARALLEL = 8
LOGIN_LIMIT = 10
ADDRESS_LIMIT = 100


def poll(user, password, source=None):
    return request("GET", f"1.0/{user}/info/collections", user=user,
                   password=password, source=source)


def polls(user, password, rounds=5, source=None):
    """PARALLEL connections, rounds polls each: the responses."""
    def one(_):
        return [poll(user, password, source) for _ in range(rounds)]
    with ThreadPoolExecutor(PARALLEL) as pool:
        return [r for batch in pool.map(one, range(PARALLEL)) for r in batch]


def warm(user, password, source=None):
    answers = polls(user, password, rounds=6, source=source)
    assert all(r.status == 200 for r in answers), {r.status for r in answers}


def refused(user, password):
    """PARALLEL polls with a password that must fail: all 401. They count
    as failed logins (throttle.h), so the count is cleared afterwards
    for the next check to start from none."""
    answers = polls(user, password, rounds=1)
    admin("user", "unlock", user)
    return statuses(answers) == [401]


def statuses(answers):
    return sorted({r.status for r in answers})


def fresh_address():
    return f"127.{random.randint(1, 254)}.{random.randint(0, 255)}.{random.randint(1, 254)}"


def test_warm_polls_run_no_statement():
    user, pw = new_user("kept")
    warm(user, pw)
    before = loadkit.statements_executed()
    answers = polls(user, pw)
    used = loadkit.statements_executed() - before
    assert statuses(answers) == [200]
    # A cold process may still read the row; most polls must not.
    assert used < len(answers) // 2, f"{used} statements for {len(answers)} polls"


def test_a_write_is_seen_by_every_process_at_once():
    user, pw = new_user("kept")
    warm(user, pw)
    for n in range(3):
        r = request("PUT", f"1.0/{user}/storage/kept{n}/one", body={"payload": "x"},
                    user=user, password=pw)
        assert r.status == 200, r
        stamp = r.body.decode()
        answers = polls(user, pw, rounds=3)
        assert statuses(answers) == [200]
        seen = {str(a.json().get(f"kept{n}")) for a in answers}
        assert all(a.json().get(f"kept{n}") is not None for a in answers), seen
        assert {f"{float(s):.2f}" for s in seen} == {stamp}, (seen, stamp)


def test_admin_disable_enable_and_passwd_reach_every_process():
    user, pw = new_user("kept")
    warm(user, pw)
    admin("user", "disable", user)
    assert statuses(polls(user, pw)) == [401]
    admin("user", "enable", user)
    assert statuses(polls(user, pw)) == [200]
    warm(user, pw)
    admin("user", "passwd", user, "--password-file", "-", input="another-pw-123\n")
    assert refused(user, pw)
    assert statuses(polls(user, "another-pw-123")) == [200]


def test_password_change_through_the_api_reaches_every_process():
    user, pw = new_user("kept")
    warm(user, pw)
    r = request("POST", f"user/1.0/{user}/password", body="changed-pw-456",
                user=user, password=pw)
    assert r.status == 200, r
    assert refused(user, pw)
    assert statuses(polls(user, "changed-pw-456")) == [200]


def test_a_deleted_and_recreated_account_is_not_answered_from_old_rows():
    user, pw = new_user("kept")
    warm(user, pw)
    admin("user", "delete", user, "--yes")
    assert refused(user, pw)
    admin("user", "add", user, "--password-file", "-", input="second-life-789\n")
    assert refused(user, pw)
    assert statuses(polls(user, "second-life-789")) == [200]


def test_an_account_lock_holds_against_warm_rows():
    user, pw = new_user("kept")
    here, attacker = fresh_address(), fresh_address()
    warm(user, pw, source=here)
    for i in range(LOGIN_LIMIT):
        assert poll(user, pw + "-wrong", attacker).status == 401, i
    # The account is locked for the attacker's address (issue 15: not for
    # the owner's): even the right password from there is refused by every
    # process, although they kept the account's row.
    assert statuses(polls(user, pw, source=attacker)) == [401]
    assert statuses(polls(user, pw, source=here)) == [200]
    assert statuses(polls(user, pw, source=attacker)) == [401]
    admin("user", "unlock", user)
    assert statuses(polls(user, pw, source=attacker)) == [200]


def test_an_address_lock_holds_against_warm_rows():
    user, pw = new_user("kept")
    attacker = fresh_address()
    warm(user, pw, source=attacker)
    for i in range(ADDRESS_LIMIT):
        r = poll(f"spray{i}x{random.getrandbits(24):x}", "password1", attacker)
        assert r.status == 401, (i, r)
    assert statuses(polls(user, pw, source=attacker)) == [401]
    assert statuses(polls(user, pw)) == [200]
    admin("throttle", "clear", attacker)
    assert statuses(polls(user, pw, source=attacker)) == [200]


def test_a_change_behind_the_servers_back_shows_within_the_lifetime():
    ttl = int(read_config().get("account_cache_seconds", "30"))
    user, pw = new_user("kept")
    warm(user, pw)
    sql(f"UPDATE users SET status = 0 WHERE username = '{user}'")
    changed = time.monotonic()
    while statuses(polls(user, pw, rounds=2)) != [401]:
        assert time.monotonic() - changed < ttl + 3, \
            f"a disabled account was still served {ttl + 3} s later"
        time.sleep(0.5)


def test_x_weave_timestamp_stays_a_safe_high_water_mark():
    loadkit.check_high_water_mark()


def test_weave_admin_run_by_another_user_says_changes_may_show_late():
    """weave-admin run by a user who cannot open the server's board still
    changes the database, and says running servers may answer from old
    rows for up to account_cache_seconds."""
    user, pw = new_user("kept")
    warm(user, pw)
    tmp = tempfile.mkdtemp()
    try:
        # Copies nobody can reach, wherever the checkout is.
        conf, binary = os.path.join(tmp, "weave.conf"), os.path.join(tmp, "weave-admin")
        shutil.copy(CONFIG, conf)
        shutil.copy(ADMIN, binary)
        os.chmod(tmp, 0o755)
        os.chmod(conf, 0o644)
        os.chmod(binary, 0o755)
        p = subprocess.run(["runuser", "-u", "nobody", "--", binary, "--config", conf,
                            "user", "disable", user], capture_output=True, text=True, timeout=60)
    finally:
        shutil.rmtree(tmp)
    assert p.returncode == 0, p
    assert "running servers may answer from the old account data" in p.stderr, p.stderr
    assert "Permission denied" in p.stderr, p.stderr
    ttl = int(read_config().get("account_cache_seconds", "30"))
    changed = time.monotonic()
    while statuses(polls(user, pw, rounds=1)) != [401]:
        assert time.monotonic() - changed < ttl + 3
        time.sleep(0.5)
