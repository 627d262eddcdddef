"""No secret reaches a log. Runs last (runner.py, RUN_LAST): by then every
other test has logged in, failed to, changed passwords and registered, so
the logs hold all the server ever wrote."""

import base64
import os

import weave
from weave import CONFIG


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def config_secrets():
    keys = ("db_password", "admin_secret", "captcha_secret", "captcha_private_key")
    found = []
    with open(CONFIG, encoding="utf-8") as f:
        for line in f:
            k, sep, v = line.partition("=")
            if sep and k.strip() in keys and v.strip():
                found.append((k.strip(), v.strip()))
    return found


def logs():
    stack = os.environ.get("WEAVE_STACK_DIR", "")
    paths = [weave.APACHE_LOG, os.path.join(stack, "apache", "access.log")]
    return {p: read(p) for p in paths if p}


def test_no_password_or_secret_in_the_logs():
    texts = logs()
    assert texts and any(texts.values()), "no log to check: WEAVE_APACHE_LOG unset?"
    assert len(weave.PASSWORDS) >= 10, "the suite made few users: nothing was checked"
    needles = [("a user's password", p) for p in weave.PASSWORDS]
    needles += config_secrets()
    # Reset codes in every form they could take (issue 15).
    for code in weave.RESET_CODES:
        plain = code.replace("-", "")
        needles += [("a reset code", f) for f in {code, plain, code.lower(), plain.lower()}]
    for what, secret in needles:
        forms = {secret.encode(), base64.b64encode(secret.encode())}
        for path, text in texts.items():
            for form in forms:
                assert form not in text, f"{what} found in {path}"
