"""The server with its per-process caches off: auth_cache_seconds = 0 (the
password is checked with the KDF on every request) and
account_cache_seconds = 0 (the account row is read on every request).

A second Apache (loadkit.second_apache) serves the same weave.fcgi and
database as the main stack with both keys at 0; it is stopped at exit.
"""

import atexit

import loadkit
from weave import admin, new_user, request

_state = {}


def server():
    """Port of the second server, started on first use."""
    if "port" not in _state:
        _state["port"], _state["apache"] = loadkit.second_apache(
            "no-caches", {"auth_cache_seconds": 0, "account_cache_seconds": 0})
        atexit.register(loadkit.stack_lib_run, 'stack_apache_stop "$1"', _state["apache"])
    return _state["port"]


def call(method, path, user, password, body=None):
    return request(method, f"1.0/{user}/{path}", body=body, user=user, password=password,
                   port=server())


def test_writes_and_reads_check_the_password_every_time():
    user, pw = new_user("nocache")
    r = call("PUT", "storage/a/one", user, pw, {"payload": "x"})
    assert r.status == 200, r
    r = call("POST", "storage/a", user, pw, [{"id": "two", "payload": "y"}])
    assert r.status == 200 and r.json()["success"] == ["two"], r
    assert sorted(call("GET", "storage/a", user, pw).json()) == ["one", "two"]
    assert call("DELETE", "storage/a?ids=one", user, pw).status == 200
    assert call("GET", "storage/a", user, pw).json() == ["two"]
    assert call("GET", "info/collections", user, "not-" + pw).status == 401
    assert call("PUT", "storage/a/three", user, "not-" + pw, {"payload": "z"}).status == 401
    # A new password counts at once, the old one not at all.
    admin("user", "passwd", user, "--password-file", "-", input="third-pw-000\n")
    assert call("GET", "info/collections", user, pw).status == 401
    assert call("GET", "info/collections", user, "third-pw-000").status == 200
    admin("user", "unlock", user)


def test_every_read_reads_the_account():
    user, pw = new_user("nocache")
    for _ in range(5):
        assert call("GET", "info/collections", user, pw).status == 200
    before = loadkit.statements_executed()
    for _ in range(20):
        assert call("GET", "info/collections", user, pw).status == 200
    assert loadkit.statements_executed() - before >= 20


def test_x_weave_timestamp_stays_a_safe_high_water_mark():
    loadkit.check_high_water_mark(port=server())
