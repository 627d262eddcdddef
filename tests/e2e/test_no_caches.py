"""The server with its per-process caches off: auth_cache_seconds = 0 (the
password is checked with the KDF on every request) and
account_cache_seconds = 0 (the account row is read on every request).

A second Apache (tools/stack.sh) on a free port serves the same weave.fcgi
and database as the main stack, with a copy of its config where both keys
are 0; it is stopped at the end of the file (or at exit).
"""

import atexit
import os
import shutil
import subprocess

import test_account_cache as kept
from weave import CONFIG, FCGI, STACK_DIR, STACK_LIB, new_user, request

_state = {}


def stack_sh(*args):
    script = 'source "$1"; shift; "$@"'
    p = subprocess.run(["bash", "-c", script, "stack.sh", STACK_LIB, *args],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise AssertionError(f"{args[0]} failed:\n{p.stdout}{p.stderr}")
    return p.stdout


def server():
    """Port of the second server, started on first use."""
    if "port" in _state:
        return _state["port"]
    assert STACK_DIR and STACK_LIB and FCGI and CONFIG, \
        "WEAVE_STACK_DIR, WEAVE_STACK_LIB, WEAVE_FCGI, WEAVE_CONFIG must be set (tests/run)"
    atexit.register(stop)
    _state["dir"] = os.path.join(STACK_DIR, "no-caches")
    shutil.rmtree(_state["dir"], ignore_errors=True)
    os.makedirs(_state["dir"])
    conf = os.path.join(_state["dir"], "weave.conf")
    with open(CONFIG, encoding="utf-8") as f:
        lines = [l for l in f if not l.startswith(("auth_cache_seconds", "account_cache_seconds"))]
    with open(conf, "w", encoding="utf-8") as f:
        f.writelines(lines)
        f.write("auth_cache_seconds = 0\naccount_cache_seconds = 0\n")
    shutil.chown(conf, group="www-data")
    os.chmod(conf, 0o640)
    port = int(stack_sh("stack_free_port").strip())
    env = [f"{k}={os.environ[k]}" for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS")
           if k in os.environ]
    stack_sh("stack_apache_start", os.path.join(_state["dir"], "apache"), str(port),
             FCGI, conf, *env)
    _state["port"] = port
    return port


def stop():
    if "port" in _state:
        stack_sh("stack_apache_stop", os.path.join(_state["dir"], "apache"))
        del _state["port"]


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
    kept.admin("user", "passwd", user, "--password-file", "-", input="third-pw-000\n")
    assert call("GET", "info/collections", user, pw).status == 401
    assert call("GET", "info/collections", user, "third-pw-000").status == 200
    kept.admin("user", "unlock", user)


def test_every_read_reads_the_account():
    user, pw = new_user("nocache")
    for _ in range(5):
        assert call("GET", "info/collections", user, pw).status == 200
    before = kept.statements_executed()
    for _ in range(20):
        assert call("GET", "info/collections", user, pw).status == 200
    assert kept.statements_executed() - before >= 20


def test_x_weave_timestamp_stays_a_safe_high_water_mark():
    kept.check_high_water_mark(port=server())
