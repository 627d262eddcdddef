"""Helpers for the end-to-end tests: HTTP against the running server,
weave-admin, and stopping/starting the database.

Standard library only; run with /usr/bin/python3. tests/run sets:
  WEAVE_BASE_URL    e.g. http://127.0.0.1:PORT/weave/ (the mount point)
  WEAVE_CONFIG      the server's config file (weave-admin reads it too)
  WEAVE_ADMIN       the built weave-admin binary
  WEAVE_STACK_DIR   the private stack (db/, apache/, weave.conf)
  WEAVE_STACK_LIB   tools/stack.sh (used by tests/e2e/dbctl)
  WEAVE_APACHE_LOG  Apache's error log (application stderr lands there)
  WEAVE_FCGI        the weave.fcgi binary the stack runs (for a second Apache)
Reset mails land in WEAVE_STACK_DIR/mail, one file each (tools/sendmail-to-dir).
"""

import base64
import email
import email.policy
import glob
import http.client
import itertools
import json
import os
import secrets
import socket
import ssl
import subprocess
import time
import urllib.parse

BASE_URL = os.environ.get("WEAVE_BASE_URL", "http://127.0.0.1:8080/weave/")
_base = urllib.parse.urlsplit(BASE_URL)
HOST = _base.hostname or "127.0.0.1"
PORT = _base.port or (443 if _base.scheme == "https" else 80)
# https: the server's certificate is checked against WEAVE_CA_FILE when set
# (a self-signed one, as weave-admin setup makes), else the system's CAs.
CA_FILE = os.environ.get("WEAVE_CA_FILE") or None
# The mount point with a trailing "/": relative paths are appended to it.
BASE_PATH = _base.path if _base.path.endswith("/") else _base.path + "/"

ADMIN = os.environ.get("WEAVE_ADMIN", "weave-admin")
CONFIG = os.environ.get("WEAVE_CONFIG", "")
APACHE_LOG = os.environ.get("WEAVE_APACHE_LOG", "")
STACK_DIR = os.environ.get("WEAVE_STACK_DIR", "")
STACK_LIB = os.environ.get("WEAVE_STACK_LIB", "")
FCGI = os.environ.get("WEAVE_FCGI", "")
TIMEOUT = 30

_HERE = os.path.dirname(os.path.abspath(__file__))
_counter = itertools.count(1)


class Headers(list):
    """Response headers as received: a list of (name, value) with the
    server's capitalisation, plus case-insensitive look-ups."""

    def get(self, name, default=None):
        low = name.lower()
        for k, v in self:
            if k.lower() == low:
                return v
        return default

    def get_all(self, name):
        low = name.lower()
        return [v for k, v in self if k.lower() == low]

    def names(self):
        return [k for k, _ in self]


class Response:
    def __init__(self, status, reason, headers, body):
        self.status = status
        self.reason = reason
        self.headers = Headers(headers)
        self.body = body

    @property
    def text(self):
        return self.body.decode("utf-8", "replace")

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        # Shown in assertion messages: enough to see what went wrong.
        body = self.body[:600]
        more = "..." if len(self.body) > 600 else ""
        hdrs = "".join(f"\n  {k}: {v}" for k, v in self.headers)
        return f"<HTTP {self.status} {self.reason}{hdrs}\n  body {body!r}{more}>"


def _to_bytes(s):
    return s if isinstance(s, bytes) else str(s).encode("utf-8")


def basic_auth(user, password):
    """The Authorization value. Either part may be bytes (e.g. a Latin-1
    password) or str (sent as UTF-8)."""
    raw = _to_bytes(user) + b":" + _to_bytes("" if password is None else password)
    return "Basic " + base64.b64encode(raw).decode("ascii")


def url_path(path):
    """A path starting with "/" is used as it is (outside the mount point
    too); anything else is relative to the mount point, e.g.
    "1.0/alice/info/collections". Nothing is quoted or normalised."""
    return path if path.startswith("/") else BASE_PATH + path


def request(method, path, body=None, user=None, password=None, headers=None,
            timeout=TIMEOUT, source=None, port=None):
    """One HTTP request on a fresh connection; returns a Response.

    body: bytes, str (UTF-8), or a dict/list (sent as JSON); None = no body.
    user/password: Basic auth (skipped when user is None).
    headers: dict or list of (name, value); an Authorization given here wins.
    source: the local address to connect from, e.g. "127.0.0.7" (any
    127.0.0.0/8 address reaches the server; the server sees it as the
    client address).
    The path goes on the request line verbatim (http.client refuses only
    spaces and control characters; use raw_request for those).
    port: another server on HOST with the same mount point (default PORT)."""
    if isinstance(body, (dict, list)):
        body = json.dumps(body)
    if body is not None:
        body = _to_bytes(body)
    hdrs = list(headers.items()) if isinstance(headers, dict) else list(headers or [])
    if user is not None and not any(k.lower() == "authorization" for k, _ in hdrs):
        hdrs.append(("Authorization", basic_auth(user, password)))

    if _base.scheme == "https":
        conn = http.client.HTTPSConnection(HOST, port or PORT, timeout=timeout,
                                           source_address=(source, 0) if source else None,
                                           context=ssl.create_default_context(cafile=CA_FILE))
    else:
        conn = http.client.HTTPConnection(HOST, port or PORT, timeout=timeout,
                                          source_address=(source, 0) if source else None)
    try:
        conn.putrequest(method, url_path(path), skip_accept_encoding=True)
        for k, v in hdrs:
            conn.putheader(k, v)
        if body is not None and not any(k.lower() in ("content-length", "transfer-encoding")
                                        for k, _ in hdrs):
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        resp = conn.getresponse()
        data = resp.read()
        return Response(resp.status, resp.reason, resp.getheaders(), data)
    finally:
        conn.close()


def raw_request(data, timeout=TIMEOUT):
    """Send DATA (bytes: request line, headers, body, exactly as given) and
    parse whatever comes back. For hostile-input tests that http.client would
    refuse to send. The request should carry "Connection: close". The
    server may answer and close before all of DATA is sent (a refused
    body): what it answered is still read."""
    with socket.create_connection((HOST, PORT), timeout=timeout) as s:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        chunks = []
        while True:
            try:
                chunk = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            chunks.append(chunk)
    raw = b"".join(chunks)
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    parts = lines[0].decode("latin-1").split(" ", 2) if lines and lines[0] else []
    if len(parts) < 2 or not parts[1].isdigit():
        return Response(0, "no valid HTTP response", [], raw)
    headers = []
    for line in lines[1:]:
        k, _, v = line.decode("latin-1").partition(":")
        headers.append((k.strip(), v.strip()))
    resp = Response(int(parts[1]), parts[2] if len(parts) > 2 else "", headers, body)
    if (resp.headers.get("Transfer-Encoding") or "").lower() == "chunked":
        resp.body = _dechunk(body)
    return resp


def _dechunk(data):
    out = b""
    while data:
        size_line, _, rest = data.partition(b"\r\n")
        try:
            size = int(size_line.split(b";")[0], 16)
        except ValueError:
            break
        if size == 0:
            break
        out += rest[:size]
        data = rest[size + 2:]
    return out


def admin(*args, input=None, check=True):
    """Run weave-admin --config WEAVE_CONFIG ARGS...; returns the
    CompletedProcess (text mode). With check, a non-zero exit raises
    AssertionError showing the command and its output."""
    cmd = [ADMIN, "--config", CONFIG, *map(str, args)]
    p = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=120)
    if check and p.returncode != 0:
        raise AssertionError(
            f"{' '.join(cmd)} exited {p.returncode}\nstdout: {p.stdout}\nstderr: {p.stderr}")
    return p


# Every password new_user() made: test_logs_hold_no_secrets.py checks none reached a log.
PASSWORDS = []
# Every reset code a test read from a mail: test_logs_hold_no_secrets.py checks too.
RESET_CODES = []


def new_user(prefix="u"):
    """Create a uniquely named user with a random password via weave-admin;
    returns (name, password). Names stay within [a-z0-9._-]{1,32}."""
    name = f"{prefix[:14]}{next(_counter)}x{secrets.token_hex(4)}".lower()
    password = secrets.token_urlsafe(12)
    PASSWORDS.append(password)
    admin("user", "add", name, "--password-file", "-", input=password + "\n")
    return name, password


def _dbctl(action):
    p = subprocess.run([os.path.join(_HERE, "dbctl"), action],
                       capture_output=True, text=True, timeout=180)
    if p.returncode != 0:
        raise AssertionError(f"dbctl {action} failed:\n{p.stdout}{p.stderr}")


def db_stop():
    """Stop the stack's MariaDB (clean shutdown). Always pair with db_start()
    in a try/finally so later tests find it running."""
    _dbctl("stop")


def db_start():
    """Start the stack's MariaDB again on the same port with the same data."""
    _dbctl("start")


def apache_log_tail(nbytes=4000):
    """The end of Apache's error log (where the application logs)."""
    if not APACHE_LOG:
        return ""
    try:
        with open(APACHE_LOG, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - nbytes))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def read_config(path=None):
    """key -> value of a weave.conf (the same rules as config.c: one
    "key = value" per line, '#' comments)."""
    path = path or CONFIG
    assert path, "WEAVE_CONFIG is not set (tests/run sets it)"
    values = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


def sql(statement):
    """Run one SQL statement as the stack's MariaDB root (the test's own
    admin access to its private database, never the server's); returns
    the rows as lists of strings (tab-separated batch output)."""
    assert STACK_DIR, "WEAVE_STACK_DIR is not set (tests/run sets it)"
    cmd = ["mariadb", "--no-defaults", f"--socket={STACK_DIR}/db/mysqld.sock",
           "--user=root", "--batch", "--skip-column-names", "weave", "-e", statement]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise AssertionError(f"SQL failed: {statement}\n{p.stderr}")
    return [line.split("\t") for line in p.stdout.splitlines()]


def mail_dir():
    """Where tools/sendmail-to-dir stores the stack's outgoing mail."""
    assert STACK_DIR, "WEAVE_STACK_DIR is not set (tests/run sets it)"
    return os.path.join(STACK_DIR, "mail")


def mail_files():
    """The stored messages' paths, oldest first."""
    return sorted(glob.glob(os.path.join(mail_dir(), "*.eml")))


def mails_to(address, seen=()):
    """Parsed messages (email.message.EmailMessage) whose To: is ADDRESS,
    oldest first, skipping the paths in SEEN. Each has .path set."""
    found = []
    for path in mail_files():
        if path in seen:
            continue
        with open(path, "rb") as f:
            msg = email.message_from_binary_file(f, policy=email.policy.default)
        if msg["To"] == address:
            msg.path = path
            found.append(msg)
    return found


def one_new_mail(address, seen=(), timeout=5):
    """The single new message to ADDRESS (the server pipes it to sendmail
    before it answers, so it is there at once; the wait only absorbs a
    slow file system). Asserts there is exactly one."""
    deadline = time.monotonic() + timeout
    while True:
        msgs = mails_to(address, seen)
        if msgs or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert len(msgs) == 1, f"expected one new mail to {address}, found {len(msgs)} in {mail_dir()}"
    return msgs[0]


def captcha_answer(token, secret=None):
    """The answer sealed in a challenge token of our captcha, read with
    captcha_secret from the test's own config file (format in
    src/captcha.h). Asserts that the token's MAC is right."""
    import hashlib
    import hmac
    if secret is None:
        secret = read_config().get("captcha_secret", "")
        assert secret, f"captcha_secret is not set in {CONFIG}"
    secret = secret.encode("utf-8") if isinstance(secret, str) else secret
    raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    assert len(raw) == 46, token
    k_enc = hmac.new(secret, b"weave-captcha-enc", hashlib.sha256).digest()
    k_mac = hmac.new(secret, b"weave-captcha-mac", hashlib.sha256).digest()
    tag = hmac.new(k_mac, raw[:30], hashlib.sha256).digest()[:16]
    assert hmac.compare_digest(tag, raw[30:]), "token MAC does not match captcha_secret"
    pad = hmac.new(k_enc, raw[:24], hashlib.sha256).digest()
    return bytes(a ^ b for a, b in zip(raw[24:30], pad)).decode("ascii")


def captcha_token(answer, expiry, secret=None, nonce=None):
    """A token as the server would seal it (for hostile tests: expired or
    otherwise crafted challenges), from the test's captcha_secret."""
    import hashlib
    import hmac
    import struct
    if secret is None:
        secret = read_config()["captcha_secret"]
    secret = secret.encode("utf-8") if isinstance(secret, str) else secret
    nonce = nonce if nonce is not None else secrets.token_bytes(16)
    k_enc = hmac.new(secret, b"weave-captcha-enc", hashlib.sha256).digest()
    k_mac = hmac.new(secret, b"weave-captcha-mac", hashlib.sha256).digest()
    head = nonce + struct.pack(">Q", expiry)
    pad = hmac.new(k_enc, head, hashlib.sha256).digest()
    body = head + bytes(a ^ b for a, b in zip(answer.encode("ascii"), pad))
    tag = hmac.new(k_mac, body, hashlib.sha256).digest()[:16]
    return base64.urlsafe_b64encode(body + tag).decode("ascii").rstrip("=")
