"""Smoke tests: the stack answers, authenticates, and speaks the basic wire rules."""

import re

from weave import new_user, request


def test_info_collections_of_new_user_is_empty_object():
    user, password = new_user("smoke")
    r = request("GET", f"1.0/{user}/info/collections", user=user, password=password)
    assert r.status == 200, r
    assert r.json() == {}, r
    ts = r.headers.get("X-Weave-Timestamp")
    assert ts is not None and re.fullmatch(r"\d+\.\d\d", ts), r
    # Sent with exactly this capitalisation (docs/protocol.md, Headers).
    assert "X-Weave-Timestamp" in r.headers.names(), r


def test_wrong_password_is_401_with_basic_challenge():
    user, password = new_user("smoke")
    r = request("GET", f"1.0/{user}/info/collections", user=user, password=password + "x")
    assert r.status == 401, r
    assert r.headers.get("WWW-Authenticate") == 'Basic realm="Weave"', r
