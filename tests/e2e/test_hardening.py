"""Hardening (issue 7 item 6) as a client sees it: only the application
answers under the mount point, TRACE is off, HTML pages carry their
security headers, and no answer echoes the credentials it was sent."""

from weave import BASE_PATH, basic_auth, new_user, raw_request, request


def test_trace_is_refused_and_echoes_nothing():
    name, pw = new_user("trace")
    auth = basic_auth(name, pw)
    r = raw_request(f"TRACE {BASE_PATH}1.0/{name}/info/collections HTTP/1.1\r\n"
                    f"Host: 127.0.0.1\r\nAuthorization: {auth}\r\n"
                    "Connection: close\r\n\r\n".encode())
    assert r.status == 405, r
    assert auth.encode() not in r.body and pw.encode() not in r.body, r


def test_nothing_but_the_application_is_served():
    # Climbing out of the mount point is normalised away or refused by Apache.
    for path in (f"{BASE_PATH}../../../../etc/passwd",
                 f"{BASE_PATH}%2e%2e/%2e%2e/%2e%2e/etc/passwd",
                 "/etc/passwd", "/"):
        r = raw_request(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        "Connection: close\r\n\r\n".encode())
        assert r.status in (400, 403, 404), (path, r)
        assert b"root:" not in r.body and b"Index of" not in r.body, (path, r)
    # Under the mount point, every path reaches the application, which
    # answers with its own bare error body.
    r = request("GET", "no/such/thing")
    assert r.status == 404 and r.body == b"0", r


def test_html_pages_carry_security_headers():
    r = request("GET", "weave-password-reset")
    assert r.status == 200, r
    csp = r.headers.get("Content-Security-Policy") or ""
    assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp, r
    assert r.headers.get("X-Frame-Options") == "DENY", r
    assert r.headers.get("X-Content-Type-Options") == "nosniff", r
    assert r.headers.get("Cache-Control") == "no-store", r
    # The captcha page's headers (framing allowed): test_captcha.py.


def test_failed_logins_do_not_echo_credentials():
    name, pw = new_user("echo")
    for user, password in ((name, pw + "x"), ("nosuchuser", pw)):
        r = request("GET", f"1.0/{user}/info/collections", user=user, password=password)
        assert r.status == 401, r
        assert password.encode() not in r.body
        assert all(password not in v for _, v in r.headers), r
