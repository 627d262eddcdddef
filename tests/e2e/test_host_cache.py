"""Host-wide caches (src/shared_table.h, src/change_board.h): whichever
FastCGI process a request lands on, an account's password is verified
(the scrypt KDF run) once per host, and what one process verified or read
serves all the others. Verifications are counted in the account cache
file and read with `weave-admin cache --json`.

"Every process": requests go out on parallel connections, so mod_fcgid
spreads them over its processes; the tests check from Apache's error log
(debug lines carry the process id and the user) that several served.
"""

import json
import os
import random
import re
from concurrent.futures import ThreadPoolExecutor

from weave import APACHE_LOG, admin, new_user, request

PARALLEL = 8


def counts():
    return json.loads(admin("cache", "--json").stdout)


def verifications():
    return counts()["verifications"]


def log_offset():
    return os.path.getsize(APACHE_LOG)


def processes_serving(users, offset):
    """Process ids whose log lines since offset name one of users."""
    names = "|".join(re.escape(u) for u in users)
    pattern = re.compile(rf"weave\[(\d+)\] \w+ req=\d+ user=(?:{names}):")
    with open(APACHE_LOG, "rb") as f:
        f.seek(offset)
        text = f.read().decode("utf-8", "replace")
    return {m.group(1) for m in pattern.finditer(text)}


def poll(user, password):
    return request("GET", f"1.0/{user}/info/collections", user=user, password=password)


def in_parallel(jobs):
    """Run (user, password) polls on PARALLEL connections; the statuses."""
    with ThreadPoolExecutor(PARALLEL) as pool:
        return list(pool.map(lambda job: poll(*job).status, jobs))


def test_cache_file_reports_counts_and_capacity():
    c = counts()
    for key in ("verifications", "credential_hits", "credential_waits", "row_hits",
                "row_misses", "collections_hits", "collections_misses", "kdf_busy"):
        assert isinstance(c[key], int) and c[key] >= 0, (key, c)
    assert c["file"], c
    for table in ("accounts", "kdf_claims"):
        assert 0 <= c["entries"][table]["used"] <= c["entries"][table]["capacity"], c
    text = admin("cache").stdout
    assert "password verifications" in text and "entries in use" in text, text


def test_a_password_is_verified_once_for_all_processes():
    user, pw = new_user("host")
    offset, before = log_offset(), verifications()
    statuses = in_parallel([(user, pw)] * (PARALLEL * 6))
    assert set(statuses) == {200}, statuses
    assert verifications() - before == 1
    served_by = processes_serving([user], offset)
    assert len(served_by) >= 2, f"only process(es) {served_by} served: not a test of sharing"


def test_many_accounts_first_contact_one_verification_each():
    """A cold start in small: accounts no process has seen, requested in
    random order on parallel connections, several times each."""
    accounts = [new_user("cold") for _ in range(6)]
    jobs = accounts * 4
    random.shuffle(jobs)
    offset, before = log_offset(), verifications()
    statuses = in_parallel(jobs)
    assert set(statuses) == {200}, statuses
    assert verifications() - before == len(accounts)
    assert len(processes_serving([u for u, _ in accounts], offset)) >= 2


def test_wrong_passwords_are_never_cached():
    user, pw = new_user("host")
    assert poll(user, pw).status == 200
    before = verifications()
    for _ in range(3):
        assert poll(user, pw + "-wrong").status == 401
    # Each wrong password was checked by the KDF again: nothing vouched for it.
    assert verifications() - before == 3
    admin("user", "unlock", user)
    # The right one is still cached: no KDF.
    before = verifications()
    assert set(in_parallel([(user, pw)] * PARALLEL)) == {200}
    assert verifications() == before


def test_a_new_password_is_verified_once_and_the_old_one_refused_everywhere():
    user, pw = new_user("host")
    assert set(in_parallel([(user, pw)] * PARALLEL * 2)) == {200}
    admin("user", "passwd", user, "--password-file", "-", input="fresh-pw-2468\n")
    before = verifications()
    statuses = in_parallel([(user, pw)] * PARALLEL)
    admin("user", "unlock", user)
    assert set(statuses) == {401}, statuses
    assert verifications() - before == PARALLEL  # each old-password try ran the KDF
    before = verifications()
    assert set(in_parallel([(user, "fresh-pw-2468")] * PARALLEL * 2)) == {200}
    assert verifications() - before == 1
