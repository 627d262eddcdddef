"""Host-wide caches (src/shared_table.h, src/change_board.h): whichever
FastCGI process a request lands on, an account's password is verified
(the scrypt KDF run) once per host, and what one process verified or read
serves all the others. Verifications are counted in the account cache
file and read with `weave-admin cache --json`.

"Every process": requests go out on parallel connections, so mod_fcgid
spreads them over its processes; the tests check from Apache's error log
(debug lines carry the process id and the user) that several served.
"""

import atexit
import base64
import hashlib
import hmac
import json
import os
import pwd
import random
import re
import secrets
import struct
import subprocess
from concurrent.futures import ThreadPoolExecutor

import loadkit
import weave
from weave import APACHE_LOG, admin, new_user, read_config, request, sql

PARALLEL = 8


def counts():
    return json.loads(admin("cache", "--json").stdout)


def verifications():
    return counts()["verifications"]


def log_offset():
    return os.path.getsize(APACHE_LOG)


def processes_serving(users, offset, log=None):
    """Process ids whose log lines since offset name one of users."""
    names = "|".join(re.escape(u) for u in users)
    pattern = re.compile(rf"weave\[(\d+)\] \w+ req=\d+ user=(?:{names})[ :]")
    with open(log or APACHE_LOG, "rb") as f:
        f.seek(offset)
        text = f.read().decode("utf-8", "replace")
    return {m.group(1) for m in pattern.finditer(text)}


def poll(user, password, port=None):
    return request("GET", f"1.0/{user}/info/collections", user=user, password=password,
                   port=port)


def in_parallel(jobs):
    """Run (user, password) polls on PARALLEL connections; the statuses."""
    with ThreadPoolExecutor(PARALLEL) as pool:
        return list(pool.map(lambda job: poll(*job).status, jobs))


_servers = {}


def own_server(name, settings, own_file=False):
    """Port of a second Apache (loadkit.second_apache) with settings; with
    own_file, its own account cache file (made empty here, for www-data,
    as tools/stack.sh does). Started on first use, stopped at exit."""
    if name not in _servers:
        settings = dict(settings)
        if own_file:
            home = os.path.abspath(os.path.join(os.environ["WEAVE_STACK_DIR"],
                                                name + "-cache"))
            os.makedirs(home, exist_ok=True)
            www = pwd.getpwnam("www-data")
            board = os.path.join(home, "account-cache")
            for path in (board, board + ".changes"):
                with open(path, "wb"):
                    pass
                os.chown(path, www.pw_uid, www.pw_gid)
                os.chmod(path, 0o600)
            settings["account_cache_file"] = board
        port, apache = loadkit.second_apache(name, settings)
        atexit.register(loadkit.stack_lib_run, 'stack_apache_stop "$1"', apache)
        _servers[name] = (port, settings.get("account_cache_file"),
                          os.path.join(apache, "error.log"))
    return _servers[name]


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


def test_a_second_process_does_not_repeat_the_kdf():
    user, pw = new_user("again")
    before = verifications()
    assert poll(user, pw).status == 200
    assert verifications() - before == 1
    offset = log_offset()
    assert set(in_parallel([(user, pw)] * (PARALLEL * 4))) == {200}
    assert verifications() - before == 1
    assert len(processes_serving([user], offset)) >= 2, "not a test of sharing"


def test_a_credential_survives_uploads():
    """Writes read the row FOR UPDATE and bump the account, yet the
    credential (bound to the password, not to the row's generation)
    still vouches for the password: an upload costs no KDF."""
    user, pw = new_user("upload")
    assert poll(user, pw).status == 200
    before = verifications()
    for n in range(6):
        r = request("POST", f"1.0/{user}/storage/tabs", body=[{"id": f"t{n}", "payload": "x"}],
                    user=user, password=pw)
        assert r.status == 200 and r.json()["success"] == [f"t{n}"], r
        r = request("PUT", f"1.0/{user}/storage/forms/f{n}", body={"payload": "y"},
                    user=user, password=pw)
        assert r.status == 200, r
        assert poll(user, pw).status == 200
    assert set(in_parallel([(user, pw)] * PARALLEL)) == {200}
    assert verifications() == before


def test_revocation_is_immediate_in_every_process():
    """A disabled, re-passworded or deleted account is refused at once by
    every process, although its credential is kept for a day; enabling
    it again needs no KDF (the password did not change)."""
    user, pw = new_user("revoke")
    assert set(in_parallel([(user, pw)] * PARALLEL * 2)) == {200}
    admin("user", "disable", user)
    assert set(in_parallel([(user, pw)] * PARALLEL)) == {401}
    admin("user", "unlock", user)
    admin("user", "enable", user)
    before = verifications()
    assert set(in_parallel([(user, pw)] * PARALLEL)) == {200}
    assert verifications() == before
    r = request("POST", f"user/1.0/{user}/password", body="revoked-pw-1357",
                user=user, password=pw)
    assert r.status == 200, r
    assert set(in_parallel([(user, pw)] * PARALLEL)) == {401}
    admin("user", "unlock", user)
    assert set(in_parallel([(user, "revoked-pw-1357")] * PARALLEL)) == {200}
    admin("user", "delete", user, "--yes")
    assert set(in_parallel([(user, "revoked-pw-1357")] * PARALLEL)) == {401}


def costly_user(config):
    """A new account hashed at the password_cost of config's server."""
    name, password = f"herd{random.randrange(10**9)}x{os.getpid()}", secrets.token_urlsafe(12)
    weave.PASSWORDS.append(password)
    subprocess.run([weave.ADMIN, "--config", config, "user", "add", name, "--password-file", "-"],
                   input=password + "\n", text=True, check=True, capture_output=True, timeout=60)
    return name, password


def test_kdfs_over_the_bound_get_503_while_a_verified_owner_gets_200():
    """max_concurrent_kdf = 1: a herd of cold logins finds the one slot
    taken and is answered 503 with a short Retry-After and a backoff
    instead of queueing; an owner whose password is verified never waits
    for a slot."""
    # The stack's password_cost (10) makes a KDF too quick to meet another.
    port, _, log = own_server("kdf-bound", {"max_concurrent_kdf": 1, "password_cost": 17})
    owner, owner_pw = new_user("owner")
    assert poll(owner, owner_pw, port).status == 200
    # mod_fcgid starts processes as load comes: have a few before the herd.
    for _ in range(20):
        offset = os.path.getsize(log)
        with ThreadPoolExecutor(PARALLEL) as pool:
            list(pool.map(lambda _: poll(owner, owner_pw, port), range(PARALLEL * 4)))
        if len(processes_serving([owner], offset, log)) >= 3:
            break
    config = os.path.join(os.path.dirname(os.path.dirname(log)), "weave.conf")
    busy = counts()["kdf_busy"]
    herd, cold, warm = [], [], []
    # A herd either meets the bound or, on a quick machine, drains within
    # the wait (KDF_WAIT_MS): a few rounds, until one meets it.
    for _ in range(4):
        batch = [costly_user(config) for _ in range(12)]
        herd += batch
        with ThreadPoolExecutor(len(batch) + 4) as pool:
            c = [pool.submit(poll, u, p, port) for u, p in batch]
            w = [pool.submit(poll, owner, owner_pw, port) for _ in range(12)]
            cold += [f.result() for f in c]
            warm += [f.result() for f in w]
        if any(r.status == 503 for r in cold):
            break
    assert {r.status for r in warm} == {200}, warm
    assert {r.status for r in cold} <= {200, 503}, cold
    refused = [r for r in cold if r.status == 503]
    assert refused, "no login found the bound full: not a test of it"
    for r in refused:
        assert 1 <= int(r.headers.get("Retry-After", 0)) <= 5, r
        assert int(r.headers.get("X-Weave-Backoff", 0)) >= 1, r
    assert counts()["kdf_busy"] - busy >= len(refused)
    # Refused, not failed: the herd logs in once the rush is over.
    assert {poll(u, p, port).status for u, p in herd} == {200}


def _hkdf(secret):
    """The key weave.fcgi derives from cache_secret (src/cache_key.h)."""
    prk = hmac.new(b"weave-server account cache", secret, hashlib.sha256).digest()
    return hmac.new(prk, b"cache key 1\x01", hashlib.sha256).digest()


def _mac(key, label, *fields):
    m = hmac.new(key, digestmod=hashlib.sha256)
    for f in (label.encode(),) + fields:
        m.update(struct.pack("<Q", len(f)))
        m.update(f)
    return m.digest()


def _verifier(key, user_id, stored_hash, password):
    fp = _mac(key, "hash", stored_hash)
    return _mac(key, "verifier", struct.pack("<q", user_id), fp, password)


def _windows(data):
    """Every distinct 32-byte window of data that is not all zero (pages
    of zeros, most of the file, are skipped whole)."""
    page, zero, seen = 4096, bytes(4096), set()
    for start in range(0, len(data), page):
        if data[start:start + page] == zero:
            continue
        chunk = data[max(0, start - 31):start + page + 31]
        for i in range(len(chunk) - 31):
            seen.add(chunk[i:i + 32])
    seen.discard(bytes(32))
    return seen


def test_the_cache_file_holds_no_hash_email_or_key_and_tests_no_guess():
    """docs/security.md, "The host-wide cache file": after logins, reads
    and uploads, the file holds no stored hash (nor its salt or key, raw
    or base64), no e-mail address, no cache key, and no 32-byte window of
    it, taken as the key, makes the verifier of a real password: nothing
    in the file lets a reader test a guess."""
    port, board, _ = own_server("secrets-scan", {}, own_file=True)
    secret = read_config()["cache_secret"].encode()
    key = _hkdf(secret)
    accounts = []
    for n in range(3):
        user, pw = new_user("scan")
        email = f"scan-{n}-{user}@example.org"
        admin("user", "email", user, email)
        for _ in range(3):
            assert poll(user, pw, port).status == 200
        r = request("POST", f"1.0/{user}/storage/tabs", body=[{"id": "a", "payload": "x"}],
                    user=user, password=pw, port=port)
        assert r.status == 200, r
        assert poll(user, pw, port).status == 200
        (uid, stored), = sql(f"SELECT id, password_hash FROM users WHERE username = '{user}'")
        accounts.append((int(uid), stored.encode(), pw.encode(), email.encode()))
        assert user.encode() not in open(board, "rb").read(), "the file names the account"
    with open(board, "rb") as f:
        data = f.read()
    assert len(data) > 1 << 20, "the second server made no cache file"
    assert key not in data and secret not in data
    for uid, stored, pw, email in accounts:
        assert stored not in data and email not in data and pw not in data
        for part in stored.split(b"$")[-2:]:
            assert part not in data
            raw = base64.b64decode(part + b"=" * (-len(part) % 4))
            assert len(raw) >= 16 and raw not in data
        # The control: under the real key the verifier is there, so the
        # test knows what it looks for.
        assert _verifier(key, uid, stored, pw) in data
    windows = _windows(data)
    assert len(windows) > 100, len(windows)
    words = {data[i:i + 8] for i in range(0, len(data) - 7, 8)}
    uid, stored, pw, _ = accounts[0]
    for window in windows:
        v = _verifier(window, uid, stored, pw)
        assert v[:8] not in words, "a window of the file tests a guess"


def test_reads_from_kept_rows_during_an_outage_say_so_in_the_log():
    """While the database is down, a warm account's reads are answered
    from its kept row (nothing can change it meanwhile), a cold one gets
    503, and a process that saw the outage logs that it answers from kept
    rows (the admin is not left with an outage that looks like none)."""
    port, _, log = own_server("outage", {"account_cache_seconds": 120})
    user, pw = new_user("outage")
    cold, cold_pw = new_user("outage")
    for _ in range(3):
        with ThreadPoolExecutor(PARALLEL) as pool:
            assert {r.status for r in pool.map(lambda _: poll(user, pw, port),
                                               range(PARALLEL * 3))} == {200}
    weave.db_stop()
    try:
        offset = os.path.getsize(log)
        with ThreadPoolExecutor(PARALLEL) as pool:
            down = list(pool.map(lambda _: poll(cold, cold_pw, port), range(PARALLEL * 3)))
            warm = list(pool.map(lambda _: poll(user, pw, port), range(PARALLEL * 6)))
    finally:
        weave.db_start()
    assert {r.status for r in down} == {503}, down
    assert {r.status for r in warm} == {200}, warm
    with open(log, "rb") as f:
        f.seek(offset)
        text = f.read().decode("utf-8", "replace")
    assert "reads are answered from kept account rows" in text
    assert poll(cold, cold_pw, port).status == 200
