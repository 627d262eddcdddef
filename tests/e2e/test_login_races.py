"""The login against changes that land while it runs (src/login.c): the
password KDF runs without the account's row lock, so a password change,
a disable or a delete may commit between the row read and what the login
does after its verdict. Whatever the login does then must not undo the
change."""

import crypt  # noqa: deprecated in 3.11, still libxcrypt's crypt(3): bcrypt
import json
import os
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

from weave import APACHE_LOG, admin, new_user, request, sql


def poll(user, password):
    return request("GET", f"1.0/{user}/info/collections", user=user, password=password)


def verifications():
    return json.loads(admin("cache", "--json").stdout)["verifications"]


def bcrypt(password, cost):
    """A bcrypt hash, a scheme the server verifies and then re-hashes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=2 ** cost))


def when_a_kdf_starts(before, deadline=20):
    end = time.time() + deadline
    while verifications() == before:
        assert time.time() < end, "the login never reached its KDF"
        time.sleep(0.005)


def test_a_password_change_during_a_rehash_is_not_undone():
    """A login with an old-scheme hash re-hashes the password it verified.
    If the owner changes the password while that login's KDF runs (bcrypt
    cost 14: about a second), the re-hash must not write the old password
    back over the new one."""
    user, old = new_user("rehash")
    new = "the-new-password-1"
    sql(f"UPDATE users SET password_hash = '{bcrypt(old, 14)}' WHERE username = '{user}'")
    offset, before = os.path.getsize(APACHE_LOG), verifications()
    with ThreadPoolExecutor(1) as pool:
        login = pool.submit(poll, user, old)
        when_a_kdf_starts(before)
        admin("user", "passwd", user, "--password-file", "-", input=new + "\n")
        first = login.result()
    # Right when the login read the row: the read may be answered.
    assert first.status in (200, 401), first
    assert poll(user, new).status == 200, "the new password was undone"
    assert poll(user, old).status == 401, "the old password came back"
    admin("user", "unlock", user)
    # The race was met: the change landed between the verdict's row read
    # and the re-hash, and the server said why it did not re-hash.
    with open(APACHE_LOG, "rb") as f:
        f.seek(offset)
        log = f.read().decode("utf-8", "replace")
    mine = [line for line in log.splitlines() if f"user={user} " in line]
    assert any("password not re-hashed: it changed during the login" in line
               for line in mine), "the KDF ended before the change: not a test of the race"
