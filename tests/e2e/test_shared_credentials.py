"""Verified passwords shared through the database (src/shared_credential.h):
when the KDF accepts a password, the login stores a keyed MAC of it in
login_verifiers, and a web server that has never seen the account (a new
cache file, another front-end of a cluster) trusts that instead of running
the KDF again, for auth_cache_seconds, until the password changes.

"Another front-end" is a second Apache on the same database with its own
account cache file (test_host_cache.own_server): nothing of the first
host's cache reaches it, only the database. KDF runs are counted in each
host's cache file (`weave-admin cache --json`, its own weave.conf).
"""

import hashlib
import hmac
import json
import os
import struct
import subprocess
import time

import weave
from test_host_cache import counts, own_server, poll
from weave import admin, new_user, read_config, request, sql


def host_counts(server):
    """The cache counters of a second front-end (its own file and config)."""
    _, _, log = server
    config = os.path.join(os.path.dirname(os.path.dirname(log)), "weave.conf")
    p = subprocess.run([weave.ADMIN, "--config", config, "cache", "--json"],
                       capture_output=True, text=True, check=True, timeout=60)
    return json.loads(p.stdout)


def front_end(name, **settings):
    """A second front-end, with its cache file made (a process fills the
    empty file when it starts: one request starts one)."""
    server = own_server(name, settings, own_file=True)
    # 503 before a schema upgrade; the process started all the same.
    assert request("GET", "health", port=server[0]).status in (200, 503)
    return server


def verifier_row(user):
    """(mac bytes, made) of user's row in login_verifiers, or None."""
    rows = sql("SELECT HEX(v.mac), v.made FROM login_verifiers v JOIN users u "
               f"ON u.id = v.user_id WHERE u.username = '{user}'")
    return (bytes.fromhex(rows[0][0]), int(rows[0][1])) if rows else None


def user_row(user):
    (uid, stored), = sql(f"SELECT id, password_hash FROM users WHERE username = '{user}'")
    return int(uid), stored.encode()


def _mac(key, label, *fields):
    m = hmac.new(key, digestmod=hashlib.sha256)
    for f in (label.encode(),) + fields:
        m.update(struct.pack("<Q", len(f)))
        m.update(f)
    return m.digest()


def shared_key(secret):
    """HKDF-SHA256 of cache_secret, info "shared verifier key 1" (src/cache_key.h)."""
    prk = hmac.new(b"weave-server account cache", secret, hashlib.sha256).digest()
    return hmac.new(prk, b"shared verifier key 1\x01", hashlib.sha256).digest()


def expected_verifier(secret, uid, stored, password):
    key = shared_key(secret)
    return _mac(key, "shared verifier", struct.pack("<q", uid), _mac(key, "hash", stored),
                password)


def refused_within(status_of_poll, seconds):
    """True once a poll is answered 401 within seconds (polled every 0.1 s)."""
    deadline = time.monotonic() + seconds
    while True:
        status = status_of_poll()
        if status == 401:
            return True
        assert status == 200, status
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


def test_a_host_that_never_saw_the_account_runs_no_kdf():
    """Verified on the main stack; the other front-end, whose cache file is
    new, answers a poll and an upload without a KDF."""
    b = front_end("shared-b")
    user, pw = new_user("shared")
    before = counts()["verifications"]
    assert poll(user, pw).status == 200
    assert counts()["verifications"] - before == 1
    assert verifier_row(user) is not None
    b0 = host_counts(b)
    assert poll(user, pw, b[0]).status == 200
    r = request("POST", f"1.0/{user}/storage/tabs", body=[{"id": "t", "payload": "x"}],
                user=user, password=pw, port=b[0])
    assert r.status == 200 and r.json()["success"] == ["t"], r
    b1 = host_counts(b)
    assert b1["verifications"] == b0["verifications"], (b0, b1)
    assert b1["shared_hits"] - b0["shared_hits"] == 1, (b0, b1)
    # A write first on a host that never saw the account: no KDF either.
    user2, pw2 = new_user("shared")
    assert poll(user2, pw2).status == 200
    r = request("PUT", f"1.0/{user2}/storage/forms/f", body={"payload": "y"},
                user=user2, password=pw2, port=b[0])
    assert r.status == 200, r
    b2 = host_counts(b)
    assert b2["verifications"] == b1["verifications"] and b2["shared_hits"] == b1["shared_hits"] + 1


def test_the_row_is_the_documented_mac_and_nothing_else():
    """The stored verifier is MAC(id, fingerprint, password) under the key
    derived from cache_secret with its own label: not the password, not
    the hash, not the host cache's verifier."""
    user, pw = new_user("shared")
    assert poll(user, pw).status == 200
    mac, made = verifier_row(user)
    uid, stored = user_row(user)
    secret = read_config()["cache_secret"].encode()
    assert mac == expected_verifier(secret, uid, stored, pw.encode())
    assert pw.encode() not in mac and stored not in mac
    now = int(sql("SELECT UNIX_TIMESTAMP()")[0][0])
    assert now - 120 <= made <= now + 5, (made, now)


def test_a_wrong_password_is_refused_and_never_stored():
    b = front_end("shared-b")
    user, pw = new_user("shared")
    assert poll(user, pw + "-wrong").status == 401
    assert verifier_row(user) is None
    assert poll(user, pw).status == 200
    stored = verifier_row(user)
    b0 = host_counts(b)
    assert poll(user, pw + "-wrong", b[0]).status == 401
    b1 = host_counts(b)
    assert b1["verifications"] - b0["verifications"] == 1  # checked by the KDF
    assert verifier_row(user) == stored                      # and not stored
    admin("user", "unlock", user)


def test_a_password_change_revokes_the_verifier_at_once():
    """Through the User API and through weave-admin: the row goes, the old
    password is refused on the other host, the new one costs it one KDF."""
    b = front_end("shared-b")
    user, pw = new_user("shared")
    assert poll(user, pw).status == 200
    r = request("POST", f"user/1.0/{user}/password", body="changed-pw-8642",
                user=user, password=pw)
    assert r.status == 200, r
    assert verifier_row(user) is None
    b0 = host_counts(b)
    assert poll(user, pw, b[0]).status == 401
    assert poll(user, "changed-pw-8642", b[0]).status == 200
    b1 = host_counts(b)
    assert b1["verifications"] - b0["verifications"] == 2 and b1["shared_hits"] == b0["shared_hits"]
    admin("user", "unlock", user)

    user, pw = new_user("shared")
    assert poll(user, pw).status == 200
    assert verifier_row(user) is not None
    admin("user", "passwd", user, "--password-file", "-", input="admin-pw-9753\n")
    assert verifier_row(user) is None
    b0 = host_counts(b)
    assert poll(user, pw, b[0]).status == 401
    b1 = host_counts(b)
    assert b1["verifications"] - b0["verifications"] == 1 and b1["shared_hits"] == b0["shared_hits"]
    admin("user", "unlock", user)


def test_a_verifier_of_an_old_hash_is_dead():
    """A verifier left from before a password change made behind the
    server's back (SQL by hand, no delete) vouches for nothing: its MAC
    is bound to the old hash."""
    b = front_end("shared-b")
    user, pw = new_user("shared")
    assert poll(user, pw).status == 200
    other, other_pw = new_user("shared")
    _, other_hash = user_row(other)
    row = verifier_row(user)
    sql(f"UPDATE users SET password_hash = '{other_hash.decode()}' WHERE username = '{user}'")
    assert verifier_row(user) == row  # still there: only its MAC makes it dead
    b0 = host_counts(b)
    assert poll(user, pw, b[0]).status == 401
    b1 = host_counts(b)
    assert b1["verifications"] - b0["verifications"] == 1 and b1["shared_hits"] == b0["shared_hits"]
    admin("user", "unlock", user)


def test_a_verifier_older_than_auth_cache_seconds_is_not_trusted():
    b = front_end("shared-b")
    lifetime = int(read_config().get("auth_cache_seconds", 86400))
    old, old_pw = new_user("shared")
    young, young_pw = new_user("shared")
    for user, pw in ((old, old_pw), (young, young_pw)):
        assert poll(user, pw).status == 200
    sql(f"UPDATE login_verifiers SET made = made - {lifetime} WHERE user_id = "
        f"(SELECT id FROM users WHERE username = '{old}')")
    sql(f"UPDATE login_verifiers SET made = made - {lifetime - 60} WHERE user_id = "
        f"(SELECT id FROM users WHERE username = '{young}')")
    b0 = host_counts(b)
    assert poll(young, young_pw, b[0]).status == 200
    b1 = host_counts(b)
    assert b1["verifications"] == b0["verifications"] and b1["shared_hits"] == b0["shared_hits"] + 1
    stale = verifier_row(old)
    assert poll(old, old_pw, b[0]).status == 200
    b2 = host_counts(b)
    assert b2["verifications"] - b1["verifications"] == 1 and b2["shared_hits"] == b1["shared_hits"]
    # The KDF made a new one.
    assert verifier_row(old)[1] > stale[1]


def test_a_verifier_made_under_another_cache_secret_is_not_accepted():
    c = front_end("shared-other-secret", cache_secret="another-cache-secret-" + "7" * 20)
    user, pw = new_user("shared")
    assert poll(user, pw).status == 200
    c0 = host_counts(c)
    assert poll(user, pw, c[0]).status == 200
    c1 = host_counts(c)
    assert c1["verifications"] - c0["verifications"] == 1 and c1["shared_hits"] == c0["shared_hits"]


def test_deleting_an_account_deletes_its_verifier():
    user, pw = new_user("shared")
    assert poll(user, pw).status == 200
    uid, _ = user_row(user)
    admin("user", "delete", user, "--yes")
    assert sql(f"SELECT COUNT(*) FROM login_verifiers WHERE user_id = {uid}") == [["0"]]
    user, pw = new_user("shared")
    assert poll(user, pw).status == 200
    uid, _ = user_row(user)
    r = request("DELETE", f"user/1.0/{user}", user=user, password=pw)
    assert r.status == 200, r
    assert sql(f"SELECT COUNT(*) FROM login_verifiers WHERE user_id = {uid}") == [["0"]]


def test_with_shared_credentials_off_nothing_is_written_or_trusted():
    d = front_end("shared-off", shared_credentials="off")
    user, pw = new_user("shared")
    assert poll(user, pw, d[0]).status == 200
    assert verifier_row(user) is None
    user, pw = new_user("shared")
    assert poll(user, pw).status == 200
    row = verifier_row(user)
    d0 = host_counts(d)
    assert poll(user, pw, d[0]).status == 200
    d1 = host_counts(d)
    assert d1["verifications"] - d0["verifications"] == 1 and d1["shared_hits"] == d0["shared_hits"]
    assert verifier_row(user) == row


def test_before_the_schema_upgrade_logins_work_and_store_nothing():
    """A new binary on a schema without login_verifiers (before `weave-admin
    db upgrade`): logins read the old statement and store nothing, a
    password change by weave-admin still works; after the upgrade the
    table is back and verifiers are stored again. (Processes started
    before the table went keep using it: a schema never goes back, so the
    front-end here starts after.)"""
    user, pw = new_user("shared")
    sql("DROP TABLE login_verifiers")
    sql("DELETE FROM weave_schema WHERE version >= 5")
    try:
        e = front_end("shared-old-schema")
        assert poll(user, pw, e[0]).status == 200
        admin("user", "passwd", user, "--password-file", "-", input="window-pw-1122\n")
        # e kept the account's row from the first poll: the change reaches
        # it through the change log, within about a second (change_log.h).
        assert refused_within(lambda: poll(user, pw, e[0]).status, 3.0)
        assert poll(user, "window-pw-1122", e[0]).status == 200
        admin("user", "unlock", user)
    finally:
        admin("db", "upgrade")
    assert sql("SELECT COUNT(*) FROM login_verifiers") == [["0"]]
    other, other_pw = new_user("shared")
    assert poll(other, other_pw).status == 200
    assert verifier_row(other) is not None
