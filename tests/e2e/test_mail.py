"""Password reset by mail (issue 4; docs/protocol.md, Password reset): the
message the server pipes to sendmail_command, the reset code's format, life
and single use, and the form the 1.0 add-on posts.

tests/e2e/stack.conf points sendmail_command at tools/sendmail-to-dir,
which stores every message as a file under WEAVE_STACK_DIR/mail. Expiry
is tested by moving a stored code's expiry into the past through the
stack's own database (weave.sql), not through any server backdoor.
"""

import base64
import email.utils
import hashlib
import os
import re
import secrets
import time
import urllib.parse

import weave
from weave import (BASE_URL, admin, mail_dir, mails_to, mail_files, one_new_mail,
                   read_config, request, sql)

# No look-alikes (issue 15): no 0/O, no 1/I/L.
ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
CODE_RE = r"[A-Z2-9]{4}-[A-Z2-9]{4}-[A-Z2-9]{4}-[A-Z2-9]{4}"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def user_with_email(prefix="ml"):
    """A new account with an e-mail address; returns (name, password, address)."""
    name = f"{prefix}{secrets.token_hex(5)}"
    password = secrets.token_urlsafe(12)
    address = f"{name}@mail.example.org"
    admin("user", "add", name, "--email", address, "--password-file", "-",
          input=password + "\n")
    return name, password, address


def can_log_in(name, password):
    r = request("GET", f"1.0/{name}/info/collections", user=name, password=password)
    assert r.status in (200, 401), r
    return r.status == 200


def ask_code(name, address):
    """GET password_reset; returns (code, message) of the one new mail."""
    seen = set(mail_files())
    r = request("GET", f"user/1.0/{name}/password_reset")
    assert r.status == 200 and r.body == b"success", r
    msg = one_new_mail(address, seen)
    return code_of(msg), msg


def code_of(msg):
    """The code on its own line of the mail."""
    match = re.search(r"^\s*(" + CODE_RE + r")\s*$", msg.get_content(), re.M)
    assert match, msg.get_content()
    weave.RESET_CODES.append(match.group(1))
    return match.group(1)


def reset_with(name, code, password):
    return request("POST", f"user/1.0/{name}/password", body=password,
                   headers={"X-Weave-Password-Reset": code})


def test_mail_headers_link_and_code_format():
    name, _, address = user_with_email()
    code, msg = ask_code(name, address)
    assert msg["To"] == address, msg
    assert "password" in msg["Subject"].lower(), msg["Subject"]
    _, sender = email.utils.parseaddr(msg["From"])
    assert re.fullmatch(r"[^@\s]+@[^@\s]+", sender), msg["From"]
    assert email.utils.parsedate_to_datetime(msg["Date"]) is not None, msg["Date"]
    assert msg.get_content_type() == "text/plain", msg
    assert msg.get_content_charset() == "utf-8", msg
    body = msg.get_content()
    # The link: <public URL>weave-password-reset?username=.. exactly, and
    # never the code (issue 15: a URL ends up in access logs).
    links = re.findall(r"\S*weave-password-reset\S*", body)
    assert len(links) == 1, body
    link = urllib.parse.urlsplit(links[0])
    assert f"{link.scheme}://{link.netloc}{link.path}" == BASE_URL + "weave-password-reset", links
    assert urllib.parse.parse_qs(link.query) == {"username": [name]}, links
    assert body.count(code) == 1, body
    assert re.fullmatch(CODE_RE, code) and set(code) <= set(ALPHABET + "-"), code


def test_code_lives_six_hours():
    name, _, address = user_with_email()
    before = int(time.time())
    ask_code(name, address)
    after = int(time.time())
    lifetime = int(read_config().get("reset_code_lifetime", "21600"))
    rows = sql("SELECT r.expires, LENGTH(r.code_hash) FROM reset_codes r JOIN users u "
               f"ON u.id = r.user_id WHERE u.username = '{name}'")
    assert len(rows) == 1, rows
    expires, hash_len = int(rows[0][0]), int(rows[0][1])
    assert before + lifetime <= expires <= after + lifetime, (expires, before, lifetime)
    assert hash_len == 32, rows  # only a SHA-256 is stored, never the code


def test_code_changes_password_once():
    name, old, address = user_with_email()
    code, _ = ask_code(name, address)
    r = reset_with(name, code, "fresh-password-1")
    assert r.status == 200 and r.body == b"success", r
    assert can_log_in(name, "fresh-password-1")
    assert not can_log_in(name, old)
    # Used once: the same code again is refused, the password stays.
    r = reset_with(name, code, "fresh-password-2")
    assert r.status == 400 and r.body == b"10", r
    assert can_log_in(name, "fresh-password-1")


def test_wrong_code_refused_and_right_one_still_works():
    name, old, address = user_with_email()
    code, _ = ask_code(name, address)
    other = "-".join(secrets.token_hex(2).upper() for _ in range(4))
    # A look-alike in place of a character: 0 for O and so on are not
    # in the alphabet, so such a code is not one.
    lookalike = "0" + code[1:]
    for wrong in (other, "ABCD-EFGH-IJKL-MNOP", code[:-1], code + "X", "", lookalike,
                  "2222-3333-4444-5555"):
        r = reset_with(name, wrong, "fresh-password-1")
        assert r.status == 400 and r.body == b"10", (wrong, r)
    assert can_log_in(name, old)
    # Case, dashes and blanks do not matter: people type codes.
    r = reset_with(name, f"  {code.replace('-', '').lower()} ", "fresh-password-1")
    assert r.status == 200 and r.body == b"success", r
    assert can_log_in(name, "fresh-password-1")


def test_code_of_another_user_refused():
    a, _, a_mail = user_with_email()
    b, b_old, _ = user_with_email()
    code, _ = ask_code(a, a_mail)
    r = reset_with(b, code, "fresh-password-1")
    assert r.status == 400 and r.body == b"10", r
    assert can_log_in(b, b_old)


def test_new_request_replaces_the_old_code():
    name, _, address = user_with_email()
    first, _ = ask_code(name, address)
    second, _ = ask_code(name, address)
    assert first != second
    r = reset_with(name, first, "fresh-password-1")
    assert r.status == 400 and r.body == b"10", r
    r = reset_with(name, second, "fresh-password-1")
    assert r.status == 200, r


def test_delete_password_reset_cancels_the_code():
    name, old, address = user_with_email()
    code, _ = ask_code(name, address)
    r = request("DELETE", f"user/1.0/{name}/password_reset")
    assert r.status == 401, r  # needs Basic auth
    r = request("DELETE", f"user/1.0/{name}/password_reset", user=name, password=old)
    assert r.status == 200 and r.body == b"success", r
    r = reset_with(name, code, "fresh-password-1")
    assert r.status == 400 and r.body == b"10", r
    assert can_log_in(name, old)


def test_expired_code_refused():
    name, old, address = user_with_email()
    code, _ = ask_code(name, address)
    # Expired a second ago, as if six hours had passed.
    sql("UPDATE reset_codes r JOIN users u ON u.id = r.user_id "
        f"SET r.expires = UNIX_TIMESTAMP() - 1 WHERE u.username = '{name}'")
    r = reset_with(name, code, "fresh-password-1")
    assert r.status == 400 and r.body == b"10", r
    assert can_log_in(name, old)
    # A fresh code works again.
    code, _ = ask_code(name, address)
    assert reset_with(name, code, "fresh-password-1").status == 200


def test_reset_errors_unknown_user_and_no_address():
    seen = set(mail_files())
    r = request("GET", f"user/1.0/nobody{secrets.token_hex(4)}/password_reset")
    assert r.status == 400 and r.body == b"3", r
    name = f"nomail{secrets.token_hex(4)}"
    admin("user", "add", name, "--password-file", "-", input="longpassword1\n")
    r = request("GET", f"user/1/{name}/password_reset")
    assert r.status == 400 and r.body == b"12", r
    assert set(mail_files()) == seen, "a mail was sent anyway"
    # Without a pending code the reset header gets 10, not a crash.
    r = reset_with(name, "ABCD-EFGH-IJKL-MNOP", "fresh-password-1")
    assert r.status == 400 and r.body == b"10", r
    r = reset_with(f"nobody{secrets.token_hex(4)}", "ABCD-EFGH-IJKL-MNOP", "fresh-password-1")
    assert r.status == 404, r


def test_addon_form_post_sends_mail():
    # CLIENT-1.0 posts uid=<name> to weave-password-reset and looks for this text.
    name, old, address = user_with_email()
    seen = set(mail_files())
    r = request("POST", "weave-password-reset", body=f"uid={name}", headers=FORM)
    assert r.status == 200, r
    assert "Further instructions have been sent" in r.text, r
    msg = one_new_mail(address, seen)
    assert reset_with(name, code_of(msg), "fresh-password-1").status == 200
    assert not can_log_in(name, old)
    # Upper-case name as typed: the same account.
    seen = set(mail_files())
    r = request("POST", "weave-password-reset", body=f"uid={name.upper()}", headers=FORM)
    assert r.status == 200 and "Further instructions have been sent" in r.text, r
    one_new_mail(address, seen)


def test_addon_form_does_not_reveal_unknown_users():
    seen = set(mail_files())
    r = request("POST", "weave-password-reset",
                body=f"uid=nobody{secrets.token_hex(4)}", headers=FORM)
    assert r.status == 200 and "Further instructions have been sent" in r.text, r
    assert set(mail_files()) == seen


def test_sendmail_failure_is_503_and_mails_nothing():
    name, _, address = user_with_email()
    flag = os.path.join(mail_dir(), "fail")  # makes sendmail-to-dir exit 75
    open(flag, "w").close()
    try:
        r = request("GET", f"user/1.0/{name}/password_reset")
        assert r.status == 503 and r.body == b"0", r
        assert r.headers.get("Retry-After"), r
        # The page still gives nothing away about the account.
        r = request("POST", "weave-password-reset", body=f"uid={name}", headers=FORM)
        assert r.status == 200 and "Further instructions have been sent" in r.text, r
    finally:
        os.unlink(flag)
    assert mails_to(address) == []
    ask_code(name, address)  # and mail flows again


def test_email_login_resets_by_address():
    # A Sync 1.1 account is named by its address (stored hashed,
    # docs/protocol.md, Authentication):
    # the form takes the address as typed, and the mail and its link name
    # the address too, never the hash the user has never seen (issue 16).
    address = f"Mixed.{secrets.token_hex(4)}@Example.org"
    hashed = base64.b32encode(hashlib.sha1(address.lower().encode()).digest()).decode().lower()
    admin("user", "add", address, "--password-file", "-", input="email-login-pw1\n")
    seen = set(mail_files())
    r = request("POST", "weave-password-reset",
                body="uid=" + urllib.parse.quote(address), headers=FORM)
    assert r.status == 200 and "Further instructions have been sent" in r.text, r
    msgs = [m for m in mails_to(address.lower()) + mails_to(address) if m.path not in seen]
    assert len(msgs) == 1, msgs
    text = msgs[0].get_content()
    link = re.search(r"weave-password-reset\?username=(\S+)\s", text)
    assert link and urllib.parse.unquote(link.group(1)) == address, text
    assert f'account "{address}"' in text and hashed not in text, text
    # The link's page offers the address, as typed, in its form.
    page = request("GET", "weave-password-reset?username=" + link.group(1))
    assert page.status == 200 and f'value="{address}"' in page.text and hashed not in page.text, page
    r = reset_with(urllib.parse.unquote(link.group(1)), code_of(msgs[0]), "email-login-pw2")
    assert r.status == 200, r
    r = request("GET", f"1.0/{hashed}/info/collections", user=address, password="email-login-pw2")
    assert r.status == 200, r


def code_forms(code):
    """Every way a code could be written down: as mailed, without dashes,
    in lower case, URL-encoded."""
    plain = code.replace("-", "")
    forms = {code, plain, code.lower(), plain.lower()}
    return forms | {urllib.parse.quote(f) for f in forms}


def test_reset_flow_leaves_no_code_in_the_logs():
    """Issue 15: after the whole reset flow by the pages (mail, page, new
    password), no line of access.log or error.log holds the code."""
    name, old, address = user_with_email("lg")
    seen = set(mail_files())
    r = request("POST", "weave-password-reset", body=f"uid={name}", headers=FORM)
    assert r.status == 200 and "Further instructions have been sent" in r.text, r
    msg = one_new_mail(address, seen)
    code = code_of(msg)
    link = re.search(r"(http\S*weave-password-reset\?\S+)", msg.get_content()).group(1)
    assert not any(f in link for f in code_forms(code)), link
    page = request("GET", link[len(BASE_URL):])
    assert page.status == 200 and b'name="key"' in page.body, page
    # A typo first (the page offers the form again), then the code as typed.
    wrong = code[:-1] + ("2" if code[-1] != "2" else "3")
    form = f"username={name}&key={wrong}&password=fresh-password-9&confirm=fresh-password-9"
    r = request("POST", "weave-password-reset", body=form, headers=FORM)
    assert r.status == 400 and b"wrong, used or expired" in r.body, r
    assert b'name="key"' in r.body and b'href="weave-password-reset"' in r.body, r
    typed = code.replace("-", "").lower()
    form = f"username={name}&key={typed}&password=fresh-password-9&confirm=fresh-password-9"
    r = request("POST", "weave-password-reset", body=form, headers=FORM)
    assert r.status == 200 and b"Your password has been changed" in r.body, r
    assert can_log_in(name, "fresh-password-9") and not can_log_in(name, old)
    stack = os.environ.get("WEAVE_STACK_DIR", "")
    for path in (weave.APACHE_LOG, os.path.join(stack, "apache", "access.log")):
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", "replace")
        assert "weave-password-reset" in text, path  # the flow was logged...
        for form_ in code_forms(code):
            assert form_ not in text, f"the reset code stands in {path}"  # ...not the code


def ask_with_forged_host(name, address, port=None):
    """GET password_reset with the Host header "evil.example", as whoever
    asks for the mail may send; returns the one new mail."""
    import http.client
    seen = set(mail_files())
    conn = http.client.HTTPConnection(weave.HOST, port or weave.PORT, timeout=30)
    conn.putrequest("GET", weave.url_path(f"user/1.0/{name}/password_reset"),
                    skip_host=True)
    conn.putheader("Host", "evil.example")
    conn.endheaders()
    r = conn.getresponse()
    assert r.status == 200 and r.read() == b"success", r.status
    conn.close()
    return one_new_mail(address, seen)


def test_without_public_url_the_mail_has_no_link_to_forge():
    """Review (issue 15): without public_url a link would be built from the
    Host header, which whoever asks for the mail chooses: the mail would
    send the owner to the asker's page to type the code. So it has none."""
    import loadkit
    name, _, address = user_with_email("nl")
    port, apache_dir = loadkit.second_apache("no-public-url", {"public_url": None})
    try:
        msg = ask_with_forged_host(name, address, port)
    finally:
        loadkit.stack_lib_run('stack_apache_stop "$1"', apache_dir)
    body = msg.get_content()
    assert "evil.example" not in body and "http" not in body, body
    assert "weave-password-reset" in body, body
    code = code_of(msg)
    assert reset_with(name, code, "fresh-password-7").status == 200


def test_reset_page_refuses_a_too_long_password_with_its_reason():
    """The reset page checks a new password by the same rule as the API:
    one no login could send is refused on the page (400), before the code
    is spent, and the code still works afterwards."""
    name, old, address = user_with_email("ln")
    seen = set(mail_files())
    r = request("POST", "weave-password-reset", body=f"uid={name}", headers=FORM)
    assert r.status == 200, r
    code = code_of(one_new_mail(address, seen))
    long_pw = "p" * 1100
    form = f"username={name}&key={code}&password={long_pw}&confirm={long_pw}"
    r = request("POST", "weave-password-reset", body=form, headers=FORM)
    assert r.status == 400 and b"too long" in r.body, r
    form = f"username={name}&key={code}&password=fresh-password-8&confirm=fresh-password-8"
    r = request("POST", "weave-password-reset", body=form, headers=FORM)
    assert r.status == 200 and b"Your password has been changed" in r.body, r
    assert can_log_in(name, "fresh-password-8") and not can_log_in(name, old)


def test_mail_from_ignores_a_forged_host_header():
    """Without mail_from the sender's domain is public_url's host: the
    server name Apache passes on is the asker's Host header, and a mail to
    the owner must not claim to come from a domain the asker chose."""
    name, _, address = user_with_email("fh")
    msg = ask_with_forged_host(name, address)
    _, sender = email.utils.parseaddr(msg["From"])
    public = urllib.parse.urlsplit(weave.read_config()["public_url"])
    assert sender == "weave@" + public.hostname, msg["From"]
    code_of(msg)  # the code is recorded, so the log check knows it
