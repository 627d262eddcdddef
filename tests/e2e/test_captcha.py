"""The captcha page at misc/1/captcha_html and misc/1.0/captcha_html
(docs/protocol.md, CAPTCHA; token format in src/captcha.h).

These tests need captcha on (the default) and captcha_secret set in the
WEAVE_CONFIG file; they read the secret from it to open the token, as a
test holding the server's own config legitimately may. Registration,
which consumes the challenge, is tested with the User API.
"""

import base64
import hashlib
import hmac
import html.parser
import re
import struct
import time

from weave import CONFIG, read_config, request

PATHS = ("misc/1/captcha_html", "misc/1.0/captcha_html")  # under the mount point
ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
       "form-action 'self'; base-uri 'none'")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def captcha_secret():
    secret = read_config().get("captcha_secret", "")
    assert secret, (f"captcha_secret is not set in {CONFIG}: the test stack "
                    "must set it (tests/run, stack_write_config)")
    return secret.encode("utf-8")


class Inputs(html.parser.HTMLParser):
    """Collects <input>, <label> and <img> attributes of a page."""

    def __init__(self):
        super().__init__()
        self.inputs = {}
        self.labels = []
        self.images = []
        self.links = []
        self.doctype = None

    def handle_decl(self, decl):
        self.doctype = decl

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "input" and "id" in a:
            self.inputs[a["id"]] = a
        elif tag == "label":
            self.labels.append(a.get("for"))
        elif tag == "img":
            self.images.append(a)
        elif tag == "a":
            self.links.append(a.get("href"))


def parse_page(r):
    p = Inputs()
    p.feed(r.text)
    p.close()
    return p


def get_page(path=PATHS[0], method="GET"):
    r = request(method, path)
    assert r.status == 200, r
    return r


def open_token(token, secret):
    """(nonce, expiry, answer) from a token, by the format in captcha.h;
    asserts that the MAC is right."""
    assert re.fullmatch(r"[A-Za-z0-9_-]{62}", token), token
    raw = base64.urlsafe_b64decode(token + "==")
    assert len(raw) == 46, raw
    k_enc = hmac.new(secret, b"weave-captcha-enc", hashlib.sha256).digest()
    k_mac = hmac.new(secret, b"weave-captcha-mac", hashlib.sha256).digest()
    tag = hmac.new(k_mac, raw[:30], hashlib.sha256).digest()[:16]
    assert hmac.compare_digest(tag, raw[30:]), "token MAC does not match captcha_secret"
    (expiry,) = struct.unpack(">Q", raw[16:24])
    pad = hmac.new(k_enc, raw[:24], hashlib.sha256).digest()
    answer = bytes(a ^ b for a, b in zip(raw[24:30], pad)).decode("ascii")
    return raw[:16], expiry, answer


def test_page_served_on_both_versions():
    for path in PATHS:
        r = get_page(path)
        assert r.headers.get("Content-Type") == "text/html; charset=utf-8", r
        p = parse_page(r)
        assert p.doctype is not None and p.doctype.lower() == "doctype html", r
        challenge = p.inputs.get("recaptcha_challenge_field")
        response = p.inputs.get("recaptcha_response_field")
        assert challenge is not None and response is not None, r
        assert challenge.get("type") == "hidden", challenge
        assert challenge.get("name") == "recaptcha_challenge_field", challenge
        assert challenge.get("value"), challenge
        assert response.get("type") == "text", response
        assert response.get("name") == "recaptcha_response_field", response
        assert response.get("autocomplete") == "off", response
        assert "recaptcha_response_field" in p.labels, r


def test_page_answers_post_too():
    for path in PATHS:
        r = get_page(path, method="POST")
        p = parse_page(r)
        assert "recaptcha_challenge_field" in p.inputs, r
        assert "recaptcha_response_field" in p.inputs, r


def test_security_headers_allow_framing():
    r = get_page()
    assert r.headers.get("Content-Security-Policy") == CSP, r
    assert r.headers.get("X-Content-Type-Options") == "nosniff", r
    assert r.headers.get("Referrer-Policy") == "no-referrer", r
    assert r.headers.get("Cache-Control") == "no-store", r
    # The 1.0 wizard shows this page in a frame.
    assert r.headers.get("X-Frame-Options") is None, r
    assert "frame-ancestors" not in r.headers.get("Content-Security-Policy", ""), r
    assert "<script" not in r.text.lower(), r


def test_token_decrypts_with_secret_from_config():
    secret = captcha_secret()
    lifetime = int(read_config().get("captcha_lifetime", "600"))
    before = int(time.time())
    r = get_page()
    after = int(time.time())
    token = parse_page(r).inputs["recaptcha_challenge_field"]["value"]
    nonce, expiry, answer = open_token(token, secret)
    assert len(nonce) == 16
    assert before + lifetime - 2 <= expiry <= after + lifetime + 2, (expiry, before, lifetime)
    assert len(answer) == 6 and all(c in ALPHABET for c in answer), answer


def test_picture_is_inline_png():
    p = parse_page(get_page())
    assert len(p.images) == 1, p.images
    src = p.images[0].get("src", "")
    prefix = "data:image/png;base64,"
    assert src.startswith(prefix), src[:60]
    png = base64.b64decode(src[len(prefix):], validate=True)
    assert png.startswith(PNG_MAGIC), png[:16]
    assert p.images[0].get("alt"), p.images[0]


def test_each_load_is_a_new_challenge():
    secret = captcha_secret()
    tokens = set()
    nonces = set()
    for _ in range(3):
        token = parse_page(get_page())\
            .inputs["recaptcha_challenge_field"]["value"]
        tokens.add(token)
        nonces.add(open_token(token, secret)[0])
    assert len(tokens) == 3 and len(nonces) == 3, tokens


def test_new_picture_link_points_at_the_page():
    for path in PATHS:
        p = parse_page(get_page(path))
        # Relative to misc/<ver>/, so it reloads the same version's page.
        assert "captcha_html" in p.links, p.links


def test_wrong_method_and_unknown_version():
    r = request("PUT", PATHS[0], body="x")
    assert r.status == 400 and r.body == b"1", r
    r = request("DELETE", PATHS[1])
    assert r.status == 400 and r.body == b"1", r
    for path in ("misc/1.1/captcha_html", "misc/2/captcha_html", "misc/1/captcha"):
        r = request("GET", path)
        assert r.status == 404, r


def test_query_string_and_trailing_slash_ignored():
    r = request("GET", PATHS[1] + "/?foo=bar")
    assert r.status == 200, r
    assert "recaptcha_challenge_field" in parse_page(r).inputs, r
