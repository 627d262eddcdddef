"""Secrets long enough (issue 15): admin_secret and captcha_secret under
16 bytes stop weave.fcgi (every request 503, Apache's error log names the
setting and the file) and weave-admin (exit 3, stderr names them);
`weave-admin secret` prints a fresh one, even while the config is refused.
"""

import os
import re
import shutil
import subprocess
import tempfile

import loadkit
import weave
from weave import ADMIN, CONFIG, request

SHORT = "only15bytes-abc"  # one byte short


def config_with(key, value):
    """A copy of the stack's config with key = value; returns its path."""
    d = tempfile.mkdtemp(prefix="weave-secret-")
    path = os.path.join(d, "weave.conf")
    with open(CONFIG, encoding="utf-8") as f:
        kept = [l for l in f if l.split("=", 1)[0].strip() != key]
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(kept)
        f.write(f"{key} = {value}\n")
    return path


def test_weave_admin_refuses_short_secrets():
    for key in ("admin_secret", "captcha_secret"):
        path = config_with(key, SHORT)
        try:
            p = subprocess.run([ADMIN, "--config", path, "user", "list"],
                               capture_output=True, text=True, timeout=60)
        finally:
            shutil.rmtree(os.path.dirname(path))
        assert p.returncode == 3, (key, p)
        assert f"'{key}'" in p.stderr and path in p.stderr, p.stderr
        assert "too short" in p.stderr and "16 bytes" in p.stderr, p.stderr
        assert "weave-admin secret" in p.stderr, p.stderr
        assert SHORT not in p.stderr + p.stdout, "the secret was echoed"


def test_weave_admin_prints_fresh_secrets():
    outs = []
    for _ in range(2):
        # --config names a file that would be refused: secret needs none.
        path = config_with("admin_secret", SHORT)
        try:
            p = subprocess.run([ADMIN, "--config", path, "secret"],
                               capture_output=True, text=True, timeout=60)
        finally:
            shutil.rmtree(os.path.dirname(path))
        assert p.returncode == 0, p
        outs.append(p.stdout.strip())
    for s in outs:
        assert re.fullmatch(r"[A-Za-z0-9_-]{43}", s), s
    assert outs[0] != outs[1]
    # And one is accepted where it belongs.
    path = config_with("admin_secret", outs[0])
    try:
        p = subprocess.run([ADMIN, "--config", path, "status"],
                           capture_output=True, text=True, timeout=60)
    finally:
        shutil.rmtree(os.path.dirname(path))
    assert p.returncode == 0, p


def test_weave_fcgi_refuses_short_secrets():
    for key in ("admin_secret", "captcha_secret"):
        port, apache_dir = loadkit.second_apache(f"short-{key}", {key: SHORT})
        try:
            r = request("GET", "user/1.0/somebody", port=port)
            assert r.status == 503 and r.body == b"0", r
            r = request("GET", "1.0/somebody/info/collections", user="somebody",
                        password="whatever-1", port=port)
            assert r.status == 503, r
        finally:
            loadkit.stack_lib_run('stack_apache_stop "$1"', apache_dir)
        with open(os.path.join(apache_dir, "error.log"), encoding="utf-8",
                  errors="replace") as f:
            log = f.read()
        conf = os.path.join(weave.STACK_DIR, f"short-{key}", "weave.conf")
        lines = [l for l in log.splitlines() if f"key '{key}': too short" in l]
        assert lines, log[-3000:]
        assert conf in lines[0], lines[0]
        assert SHORT not in log, "the secret reached the log"
