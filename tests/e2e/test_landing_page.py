"""The page at the mount root (issue 16): people who open the server's URL
see what it is, the URL to enter in the client and whether sign-up is open;
programs asking for JSON keep the old answer (404, code 0)."""

import html
import re

import weave
from weave import request

FIREFOX_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def public_url():
    return weave.read_config().get("public_url") or weave.BASE_URL


def test_browser_gets_a_page_naming_the_server_and_the_url():
    # The mount point with and without its "/", as a browser and as curl.
    for path, accept in ((weave.BASE_PATH, FIREFOX_ACCEPT), (weave.BASE_PATH, "*/*"),
                         (weave.BASE_PATH.rstrip("/"), FIREFOX_ACCEPT)):
        r = request("GET", path, headers={"Accept": accept})
        assert r.status == 200, (path, r.status, r.body[:200])
        assert r.headers.get("Content-Type").startswith("text/html"), r.headers.get("Content-Type")
        page = r.body.decode()
        url = public_url()
        host = url.split("://", 1)[1].split("/", 1)[0]
        assert f"<strong>{html.escape(host)}</strong>" in page, page
        assert f"<code>{html.escape(url)}</code>" in page, page
        assert "Use a custom server" in page
        assert r.headers.get("Content-Security-Policy"), r


def test_page_says_whether_sign_up_is_open():
    registration = weave.read_config().get("registration", "off") == "on"
    page = request("GET", weave.BASE_PATH, headers={"Accept": FIREFOX_ACCEPT}).body.decode()
    expected = "Sign-up is <strong>open</strong>" if registration else "Sign-up is <strong>closed</strong>"
    assert expected in page, page


def test_json_clients_keep_the_old_answer():
    r = request("GET", weave.BASE_PATH, headers={"Accept": "application/json"})
    assert r.status == 404 and r.body == b"0", (r.status, r.body)
    assert r.headers.get("Content-Type").startswith("application/json")


def test_other_methods_at_the_root_are_not_pages():
    r = request("POST", weave.BASE_PATH, body="x", headers={"Accept": FIREFOX_ACCEPT})
    assert r.status != 200 and not r.headers.get("Content-Type", "").startswith("text/html"), \
        (r.status, r.headers)


def test_every_page_names_the_service():
    for path in (weave.BASE_PATH, "weave-password-reset"):
        r = request("GET", path, headers={"Accept": FIREFOX_ACCEPT})
        assert r.status == 200, r
        assert '<p class="service">Weave Sync server</p>' in r.text, r.text
        assert re.search(r"<title>[^<]+ \u2014 Weave Sync</title>", r.text), r.text
