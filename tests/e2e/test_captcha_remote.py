"""Registration against a remote reCAPTCHA-v1-style verifier (issue 4;
docs/protocol.md, CAPTCHA): captcha_verify_url, captcha_public_key and
captcha_private_key in weave.conf.

The file runs its own pieces and stops them again at its end (and at
exit, should a test fail half-way):
  - tests/e2e/fake_verifier.py on a free loopback port; it answers "true"
    for the response "good" and logs every form it receives;
  - a second Apache (tools/stack.sh) on a free port, serving the same
    weave.fcgi and database as the main stack, with a copy of the stack's
    config plus the three verifier keys. The main stack is not touched.
"""

import atexit
import json
import os
import secrets
import socket
import subprocess
import sys
import time

import loadkit
from weave import STACK_DIR, request

HERE = os.path.dirname(os.path.abspath(__file__))
PUBLIC_KEY = "pub-" + secrets.token_hex(6)
PRIVATE_KEY = "priv-" + secrets.token_hex(12)
CRASH = ("get unexpected signal", "End of script output before headers",
         "FastCGI server closed connection")

_state = {}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc=None, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"process exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


def start_verifier():
    port = free_port()
    log = verifier_log_path()
    open(log, "w").close()
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "fake_verifier.py"),
                             str(port), log])
    _state["verifier"] = proc
    wait_port(port, proc)
    return port


def stop_verifier():
    proc = _state.pop("verifier", None)
    if proc is not None and proc.poll() is None:
        proc.terminate()
        proc.wait(timeout=10)


def server():
    """Port of the second server, started on first use."""
    if "port" in _state:
        return _state["port"]
    atexit.register(stop_all)
    vport = start_verifier()
    _state["verify_url"] = f"http://127.0.0.1:{vport}/verify"
    _state["port"], _state["apache"] = loadkit.second_apache("remote-captcha", {
        "captcha_verify_url": _state["verify_url"],
        "captcha_public_key": PUBLIC_KEY,
        "captcha_private_key": PRIVATE_KEY,
    })
    return _state["port"]


def verifier_log_path():
    return os.path.join(STACK_DIR, "remote-captcha-verifier.log")


def error_log():
    try:
        with open(os.path.join(_state["apache"], "error.log"), errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def stop_all():
    stop_verifier()
    if "port" in _state:
        loadkit.stack_lib_run('stack_apache_stop "$1"', _state["apache"])
        del _state["port"]


def verifier_log():
    with open(verifier_log_path(), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def register(name, challenge, response):
    body = {"password": "remote-pass-1", "email": f"{name}@example.org",
            "captcha-challenge": challenge, "captcha-response": response}
    return request("PUT", f"user/1.0/{name}", body=json.dumps(body), port=server())


def test_page_shows_the_public_key():
    port = server()
    for version in ("1", "1.0"):
        r = request("GET", f"misc/{version}/captcha_html", port=port)
        assert r.status == 200, r
        assert f'id="recaptcha_challenge_field" name="recaptcha_challenge_field" value="{PUBLIC_KEY}"' \
            in r.text, r
        assert 'id="recaptcha_response_field"' in r.text, r
        assert "<img" not in r.text, r  # no local picture in remote mode


def test_accepted_answer_creates_the_account():
    port = server()
    name = f"rv{secrets.token_hex(5)}"
    # Characters that must survive form encoding on the way out.
    challenge = "chal&x=1+2 %é/" + secrets.token_hex(4)
    r = register(name, challenge, "good")
    assert r.status == 200 and r.body == name.encode(), r
    r = request("GET", f"1.0/{name}/info/collections", user=name,
                password="remote-pass-1", port=port)
    assert r.status == 200, r
    sent = verifier_log()[-1]
    # reCAPTCHA v1: a form POST of privatekey, remoteip, challenge, response.
    assert sent["path"] == "/verify", sent
    assert sent["content_type"].startswith("application/x-www-form-urlencoded"), sent
    assert sent["fields"] == {"privatekey": PRIVATE_KEY, "remoteip": "127.0.0.1",
                              "challenge": challenge, "response": "good"}, sent


def test_rejected_answer_is_400_2():
    port = server()
    before = len(verifier_log())
    name = f"rv{secrets.token_hex(5)}"
    r = register(name, "some-challenge", "bad")
    assert r.status == 400 and r.body == b"2", r
    assert len(verifier_log()) == before + 1
    assert request("GET", f"user/1.0/{name}", port=port).body == b"0"


def test_empty_answer_is_not_sent_out():
    server()
    before = len(verifier_log())
    for challenge, response in (("some-challenge", ""), ("", "good")):
        r = register(f"rv{secrets.token_hex(5)}", challenge, response)
        assert r.status == 400 and r.body == b"2", r
    assert len(verifier_log()) == before  # reCAPTCHA v1: invalid without a call


def test_overlong_fields_are_not_sent_out():
    server()
    before = len(verifier_log())
    r = register(f"rv{secrets.token_hex(5)}", "c" * 5000, "good")
    assert r.status == 400 and r.body == b"2", r
    r = register(f"rv{secrets.token_hex(5)}", "some-challenge", "g" * 500)
    assert r.status == 400 and r.body == b"2", r
    assert len(verifier_log()) == before


def test_broken_verifier_is_503():
    port = server()
    for response in ("http-500", "garbled"):
        name = f"rv{secrets.token_hex(5)}"
        r = register(name, "some-challenge", response)
        assert r.status == 503 and r.body == b"0", (response, r)
        assert r.headers.get("Retry-After", "").isdigit(), r
        assert request("GET", f"user/1.0/{name}", port=port).body == b"0"
    log = error_log()
    assert "verifier answered HTTP 500" in log, log[-2000:]
    assert "verifier reply is neither true nor false" in log, log[-2000:]


def test_verifier_down_is_a_quick_503():
    port = server()
    stop_verifier()  # the port is closed now: connection refused
    name = f"rv{secrets.token_hex(5)}"
    t0 = time.monotonic()
    r = register(name, "some-challenge", "good")
    took = time.monotonic() - t0
    # A backend failure, like the database being down: 503, Retry-After,
    # body 0 (no Weave code fits), never "wrong captcha" nor a bare 500.
    assert r.status == 503 and r.body == b"0", r
    assert r.headers.get("Retry-After", "").isdigit(), r
    assert took < 5, took
    assert request("GET", f"user/1.0/{name}", port=port).body == b"0"
    assert "verifier at captcha_verify_url unreachable" in error_log(), error_log()[-2000:]
    # The server goes on answering.
    r = request("GET", "misc/1/captcha_html", port=port)
    assert r.status == 200, r


def test_the_verifier_stack_logged_no_crash():
    server()
    log = error_log()
    stop_all()
    crashed = [line for line in log.splitlines() if any(c in line for c in CRASH)]
    assert not crashed, "\n".join(crashed)
