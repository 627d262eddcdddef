"""The foolproof install (issue 16), end to end, in a throwaway copy of the host.

`./configure --prefix=/usr --sysconfdir=/etc && make` in a temporary build
tree, then in a Sandbox (sandbox.py: private mount, network and pid
namespaces with overlays over /etc, /usr, /var, /run, /root, /opt):
`make install`, the system MariaDB started by hand (systemd does not run
there), `weave-admin setup --yes --server-name localhost --first-user ...`,
a Weave 1.0 client's round trip over https://localhost/weave/ with the
printed certificate trusted, a second setup that changes nothing, and
`weave-admin check` passing, then failing on each broken setting and
naming it. Nothing reaches the host: the last test says so.

Run by tests/run (needs root); by hand:
    /usr/bin/python3 tests/e2e/runner.py tests/install/test_install.py
WEAVE_INSTALL_BUILD=DIR reuses a build tree configured with
--prefix=/usr --sysconfdir=/etc instead of building one.
"""

import atexit
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import sandbox  # noqa: E402
from terminal import run_on_terminal  # noqa: E402  (tests/e2e, on the runner's path)

CONF = "/etc/weave/weave.conf"
CERT = "/etc/weave/tls/localhost.crt"
URL = "https://localhost/weave/"
SITE = "/etc/apache2/sites-available/weave-ssl.conf"
SNIPPET = "/etc/apache2/conf-available/weave.conf"
USER, PASSWORD = "alice", "correct horse battery staple"
# Host paths that must look the same after the tests as before.
HOST_PATHS = ["/etc/weave", "/usr/sbin/weave-admin", "/usr/libexec/weave",
              "/etc/apache2/conf-enabled/weave.conf", "/etc/apache2/sites-enabled/weave-ssl.conf",
              "/etc/apache2/mods-enabled/ssl.load", "/usr/share/weave-server", "/var/lib/mysql/weave"]

S = {}


def port_443_open():
    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex(("127.0.0.1", 443)) == 0


def box():
    if "box" not in S:
        S["host_before"] = {p: os.path.exists(p) for p in HOST_PATHS}
        S["host_443"] = port_443_open()
        S["box"] = sandbox.Sandbox()
        atexit.register(S["box"].stop)  # also when a run is cut short
    return S["box"]


def sh(script, check=True, **kw):
    p = box().sh(script, **kw)
    if check and p.returncode != 0:
        raise AssertionError(f"in the sandbox: {script}\nexit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def admin(*args, check=False, input=None):
    return box().run(["weave-admin", *args], input=input, check=check)


def start_mariadb():
    sh("mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld && "
       "(setsid mariadbd --user=mysql >>/var/log/weave-test-mariadb.log 2>&1 </dev/null &) && "
       "for i in $(seq 100); do [ -S /run/mysqld/mysqld.sock ] && "
       "mariadb -e 'select 1' >/dev/null 2>&1 && exit 0; sleep 0.2; done; "
       "tail -20 /var/log/weave-test-mariadb.log; exit 1")


def stop_mariadb():
    sh("kill $(cat /run/mysqld/mysqld.pid) && "
       "for i in $(seq 150); do [ -S /run/mysqld/mysqld.sock ] || exit 0; sleep 0.2; done; exit 1")


def graceful():
    sh("apache2ctl graceful && sleep 2")


def check():
    p = admin("check")
    problems = [line for line in p.stdout.splitlines() if line.startswith("problem: ")]
    return p, problems


# ---- build, install -------------------------------------------------------------------

def test_configure_make_install_with_system_paths():
    build = os.environ.get("WEAVE_INSTALL_BUILD")
    if not build:
        build = tempfile.mkdtemp(prefix="weave-install-build-")
        S["build_tmp"] = build
        assert os.path.exists(os.path.join(ROOT, "configure")), "run autoreconf -fi first"
        for cmd in ([os.path.join(ROOT, "configure"), "--prefix=/usr", "--sysconfdir=/etc"],
                    ["make", "-j2"]):
            p = subprocess.run(cmd, cwd=build, capture_output=True, text=True, timeout=1800)
            assert p.returncode == 0, f"{cmd}: {p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    S["build"] = build
    sh(f"make -C {build} install", timeout=600)
    snippet = sh("cat /usr/share/weave-server/apache-weave.conf").stdout
    assert "\nAlias /weave /usr/libexec/weave/weave.fcgi\n" in snippet, snippet[:2000]
    assert "/etc/weave/weave.conf" in snippet
    for f in ("/usr/share/weave-server/apache-weave.conf", "/usr/share/doc/weave-server/weave.conf.example",
              "/usr/share/man/man8/weave-admin.8", "/usr/share/man/man5/weave.conf.5",
              "/usr/share/man/man8/weave.fcgi.8"):
        text = sh(f"zcat -f {f}").stdout
        assert "/usr/local" not in text, f"{f} names /usr/local"
        assert "/etc/weave/weave.conf" in text, f"{f} does not name /etc/weave/weave.conf"
    schema = sh("cat /usr/share/weave-server/schema.sql").stdout
    assert schema == open(os.path.join(ROOT, "sql", "schema.sql")).read()
    # One weave.conf-ish file in docdir, not two.
    assert sh("ls /usr/share/doc/weave-server").stdout.split() == ["README", "admin.md", "weave.conf.example"]
    for page in ("weave.conf", "weave.fcgi", "weave-admin"):
        p = box().run(["man", page], env={"MANPAGER": "cat", "PATH": "/usr/bin:/bin", "COLUMNS": "100"})
        assert p.returncode == 0 and "/etc/weave/weave.conf" in p.stdout, (page, p.stderr)


# ---- setup ---------------------------------------------------------------------------------

def test_setup_from_scratch_gives_an_https_server():
    start_mariadb()
    # An MTA stand-in, as a Debian install with its standard tasks has one
    # (without, check rightly reports that reset mails cannot go).
    sh(f"install -m 755 {ROOT}/tools/sendmail-to-dir /usr/local/sbin/sendmail-to-dir && "
       "install -d -o www-data -g www-data /var/spool/weave-mail && "
       "printf '#!/bin/sh\\nexec /usr/local/sbin/sendmail-to-dir /var/spool/weave-mail \"$@\"\\n' "
       ">/usr/sbin/sendmail && chmod 755 /usr/sbin/sendmail")
    assert sh("test -e /etc/weave/weave.conf", check=False).returncode != 0
    pw = os.path.join(box().top, "password")
    with open(pw, "w") as f:
        f.write(PASSWORD + "\n")
    p = admin("setup", "--yes", "--server-name", "localhost", "--first-user", USER,
              "--password-file", pw)
    assert p.returncode == 0, p.stdout + p.stderr
    out = p.stdout
    assert "no problems found" in out, out
    assert "created user alice" in out, out
    # The printed fingerprint is the certificate's.
    m = re.search(r"SHA-256 fingerprint: ([0-9A-F:]{95})\n", out)
    assert m, out
    x = sh(f"openssl x509 -in {CERT} -noout -fingerprint -sha256 -ext subjectAltName").stdout
    assert m.group(1) in x, (m.group(1), x)
    assert "DNS:localhost" in x, x
    # The client's steps.
    for words in (f"Visit {URL} once", "Use a custom server", f"enter {URL}", "user name alice",
                  "at least 12 characters", "not the password"):
        assert words in out, words
    # weave.conf: root, the Apache group, 0640, generated secrets.
    st = sh(f"stat -c '%U %G %a' {CONF}").stdout.split()
    assert st == ["root", "www-data", "640"], st
    conf = sh(f"cat {CONF}").stdout
    assert re.search(r"^db_password = [0-9a-f]{48}$", conf, re.M), conf
    assert re.search(r"^captcha_secret = [0-9a-f]{64}$", conf, re.M), conf
    assert f"public_url = {URL}\n" in conf
    assert "AllowEncodedSlashes NoDecode" in sh(f"cat {SITE}").stdout
    assert sh("stat -c %a /etc/weave/tls/localhost.key").stdout.strip() == "600"
    # The mount point is in the HTTPS virtual host only, never server-wide.
    site, snippet = sh(f"cat {SITE}").stdout, sh(f"cat {SNIPPET}").stdout
    assert "\n    Alias /weave /usr/libexec/weave/weave.fcgi\n" in site, site
    assert "<Location /weave>" in site and "CGIPassAuth On" in site, site
    assert not re.search(r"^\s*(Alias|<Location)", snippet, re.M), snippet
    assert "FcgidPassHeader Authorization" in snippet and "FcgidMaxRequestLen" in snippet
    # A server's certificate, not a certificate authority's.
    x = sh(f"openssl x509 -in {CERT} -noout -ext basicConstraints,keyUsage,extendedKeyUsage").stdout
    assert "CA:FALSE" in x and "Digital Signature" in x and "TLS Web Server Authentication" in x, x
    assert "CA:TRUE" not in x
    # Both programs say the version this tree was built as.
    version = box().run(["weave-admin", "--version"], check=True).stdout.split()[-1]
    assert re.match(r"^\d+\.\d+\.\d+", version) and version != "0.1.0", version
    fcgi = box().run(["/usr/libexec/weave/weave.fcgi", "--version"], check=True).stdout
    assert fcgi.strip() == f"weave.fcgi (weave-server) {version}", fcgi
    assert request_status(f"{URL}health") == "200"


def request_status(url, *curl_args):
    return sh(f"curl -s -o /dev/null -w '%{{http_code}}' --cacert {CERT} {' '.join(curl_args)} "
              f"'{url}'", check=False).stdout


def test_plain_http_on_port_80_does_not_reach_weave_fcgi():
    out = sh("curl -s -i http://localhost/weave/user/1.0/alice/node/weave", check=False).stdout
    assert "application/json" not in out, out
    p, problems = check()
    assert p.returncode == 0 and "ok: plain HTTP (localhost port 80) does not reach weave.fcgi" \
        in p.stdout, p.stdout


def test_weave_1_0_client_round_trip_over_https():
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "WEAVE_BASE_URL": URL, "WEAVE_CA_FILE": CERT,
           "WEAVE_ADMIN": "/usr/sbin/weave-admin", "WEAVE_CONFIG": CONF}
    p = box().run(["/usr/bin/python3", os.path.join(ROOT, "tests", "e2e", "runner.py"),
                   os.path.join(ROOT, "tests", "e2e", "test_client_replay.py")], env=env, timeout=900)
    assert p.returncode == 0 and "4 passed, 0 failed" in p.stdout, p.stdout[-4000:] + p.stderr[-2000:]
    # The first account works with the password given to setup.
    code = sh(f"curl -s -o /dev/null -w '%{{http_code}}' --cacert {CERT} -u '{USER}:{PASSWORD}' "
              f"{URL}1.0/{USER}/info/collections").stdout
    assert code == "200", code


def fingerprint_of_tree():
    """Content and mode of every file setup may touch, and Apache's pid."""
    return sh("find /etc/weave /etc/apache2 -type f -o -type l | sort | "
              "while read f; do echo \"$f $(stat -c '%a %U %G %Y' \"$f\") "
              "$(sha256sum < \"$f\" | cut -c1-16)\"; done; cat /run/apache2/apache2.pid").stdout


def test_setup_again_changes_nothing():
    before = fingerprint_of_tree()
    pw = os.path.join(box().top, "password")
    p = admin("setup", "--yes", "--server-name", "localhost", "--first-user", USER,
              "--password-file", pw)
    assert p.returncode == 0, p.stdout + p.stderr
    steps = p.stdout.split("\nChecking")[0].splitlines()
    changed = [line for line in steps if line.startswith("changed")]
    assert changed == [], changed
    assert "account alice exists" in p.stdout
    assert fingerprint_of_tree() == before


def test_setup_keeps_a_locally_edited_vhost_and_says_so():
    sh(f"sed -i 's|^    AllowEncodedSlashes NoDecode$|&\\n    CustomLog /var/log/apache2/weave.log combined|' {SITE}")
    edited = sh(f"cat {SITE}").stdout
    assert "CustomLog /var/log/apache2/weave.log" in edited
    p = admin("setup", "--yes", "--server-name", "localhost")
    assert p.returncode == 0, p.stdout + p.stderr
    assert sh(f"cat {SITE}").stdout == edited, "setup rewrote the edited vhost"
    assert f"kept     {SITE} (edited locally); setup's version is {SITE}.weave-new" in p.stdout, p.stdout
    new = sh(f"cat {SITE}.weave-new").stdout
    assert "CustomLog" not in new and "Alias /weave" in new, new
    # Taking setup's version: the next run finds the file as setup wrote it.
    sh(f"mv {SITE}.weave-new {SITE}")
    p = admin("setup", "--yes", "--server-name", "localhost")
    assert p.returncode == 0 and "edited locally" not in p.stdout, p.stdout
    assert f"ok       {SITE}" in p.stdout, p.stdout


def test_setup_with_a_new_password_file_for_an_existing_user_keeps_the_password():
    pw2 = os.path.join(box().top, "password2")
    with open(pw2, "w") as f:
        f.write("another fine password 42\n")
    p = admin("setup", "--yes", "--server-name", "localhost", "--first-user", USER,
              "--password-file", pw2)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "its password was NOT changed" in p.stdout, p.stdout
    assert f"weave-admin user passwd {USER} --password-file {pw2}" in p.stdout, p.stdout
    url = f"{URL}1.0/{USER}/info/collections"
    assert request_status(url, "-u", f"'{USER}:{PASSWORD}'") == "200"
    assert request_status(url, "-u", f"'{USER}:another fine password 42'") == "401"


def test_setup_without_a_mail_transfer_agent_succeeds_with_a_note():
    sh("mv /usr/sbin/sendmail /usr/sbin/sendmail.away")
    try:
        p = admin("setup", "--yes", "--server-name", "localhost")
        assert p.returncode == 0, p.stdout + p.stderr
        assert "no problems found" in p.stdout, p.stdout
        assert "password-reset mails will not be sent" in p.stdout and "exim4" in p.stdout, p.stdout
        # check itself still calls it a problem (the admin asked about the whole host).
        c, problems = check()
        assert c.returncode == 1 and any("sendmail_command" in line for line in problems), c.stdout
    finally:
        sh("mv /usr/sbin/sendmail.away /usr/sbin/sendmail")


def test_check_passes_on_the_installation():
    p, problems = check()
    assert p.returncode == 0 and problems == [], p.stdout + p.stderr
    assert "no problems found" in p.stdout
    j = admin("check", "--json")
    assert j.returncode == 0, j.stdout + j.stderr
    doc = json.loads(j.stdout)
    assert doc["problems"] == 0 and doc["warnings"] == 0, doc
    levels = {f["level"] for f in doc["findings"]}
    assert "ok" in levels and levels <= {"ok", "note"}, doc
    assert any("certificate" in f["what"] and "more days" in f["what"] for f in doc["findings"]), doc
    # --mail hands a test to the MTA.
    p = admin("check", "--mail", "admin@example.org")
    assert p.returncode == 0, p.stdout
    mails = sh("cat /var/spool/weave-mail/*.eml").stdout
    assert "To: admin@example.org" in mails and "weave-admin check" in mails, mails


def test_interactive_setup_asks_and_confirms():
    """Without --yes: the questions on a terminal, then a confirmation."""
    p, asked = run_on_terminal(["nsenter", "--target", str(box().init_pid), "--mount", "--net",
                                "--pid", "--wd=/", "weave-admin", "setup"],
                               answers=b"localhost\n\n\ny\n",  # name, no certificate, no account, go on
                               timeout=300)
    out = p.stdout.decode()
    assert p.returncode == 0, out + asked
    for question in ("Server name clients will use", "Certificate file", "First account",
                     "Go on?"):
        assert question in asked, asked
    assert [line for line in out.split("\nChecking")[0].splitlines()
            if line.startswith("changed")] == [], out


def test_setup_with_a_given_certificate():
    top = box().top
    sh(f"openssl req -x509 -newkey rsa:2048 -sha256 -nodes -days 30 -subj /CN=localhost "
       f"-addext subjectAltName=DNS:localhost -keyout {top}/given.key -out {top}/given.crt 2>/dev/null")
    p = admin("setup", "--yes", "--server-name", "localhost", "--cert", f"{top}/given.crt",
              "--key", f"{top}/given.key")
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"SSLCertificateFile {top}/given.crt" in sh(f"cat {SITE}").stdout
    # The vhost was as setup wrote it: replaced, the previous one kept.
    assert f"note     the previous {SITE} is kept as {SITE}.weave-old" in p.stdout, p.stdout
    assert f"SSLCertificateFile {CERT}" in sh(f"cat {SITE}.weave-old").stdout
    x = sh(f"openssl x509 -in {top}/given.crt -noout -fingerprint -sha256").stdout
    m = re.search(r"SHA-256 fingerprint: ([0-9A-F:]{95})\n", p.stdout)
    assert m and m.group(1) in x, (p.stdout, x)
    code = sh(f"curl -s -o /dev/null -w '%{{http_code}}' --cacert {top}/given.crt "
              f"-u '{USER}:{PASSWORD}' {URL}1.0/{USER}/info/collections").stdout
    assert code == "200", code
    # Back to the self-signed one for the checks below.
    p = admin("setup", "--yes", "--server-name", "localhost")
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"SSLCertificateFile {CERT}" in sh(f"cat {SITE}").stdout


def test_check_warns_of_a_certificate_close_to_expiry_and_fails_on_an_expired_one():
    top = box().top
    try:
        for days in (5, 1):
            crt, key = f"{top}/soon{days}.crt", f"{top}/soon{days}.key"
            sh(f"openssl req -x509 -newkey rsa:2048 -sha256 -nodes -days {days} -subj /CN=localhost "
               f"-addext subjectAltName=DNS:localhost -keyout {key} -out {crt} 2>/dev/null")
            p = admin("setup", "--yes", "--server-name", "localhost", "--cert", crt, "--key", key)
            assert p.returncode == 0, p.stdout + p.stderr
            c, problems = check()
            assert c.returncode == 0 and problems == [], c.stdout
            assert f"warning: the certificate {crt} expires in {days - 1} day" in c.stdout, c.stdout
            assert "no problems found, 1 warning" in c.stdout, c.stdout
        # Expired: a problem. A self-signed certificate of January 2020 in
        # place of the served one (openssl ca takes explicit dates; req does not).
        ca = f"{top}/ca"
        sh(f"mkdir -p {ca} && : > {ca}/index && echo 01 > {ca}/serial && "
           f"printf '[ca]\\ndefault_ca=d\\n[d]\\ndatabase={ca}/index\\nnew_certs_dir={ca}\\n"
           f"serial={ca}/serial\\ndefault_md=sha256\\npolicy=p\\n[p]\\ncommonName=supplied\\n' > {ca}/cnf && "
           f"openssl req -new -key {key} -subj /CN=localhost -out {ca}/csr && "
           f"openssl ca -batch -config {ca}/cnf -selfsign -keyfile {key} -in {ca}/csr "
           f"-startdate 20200101000000Z -enddate 20200201000000Z -out {crt} 2>/dev/null")
        c, problems = check()
        assert c.returncode == 1 and any("has expired" in line and "renew" in line
                                         for line in problems), c.stdout
    finally:
        p = admin("setup", "--yes", "--server-name", "localhost")
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"SSLCertificateFile {CERT}" in sh(f"cat {SITE}").stdout


# ---- check: one broken setting at a time ------------------------------------------------------

def edit_conf(sed):
    return f"sed -i {sed} {CONF}"


CONF_BREAKS = [
    # (what, break, expected words in a problem line)
    ("unknown key", f"echo 'no_such_key = 1' >> {CONF}", "no_such_key"),
    ("mode 0644", f"chmod 0644 {CONF}", "open to every user"),
    ("group root", f"chgrp root {CONF}", "cannot read /etc/weave/weave.conf"),
    ("owned by www-data", f"chown www-data {CONF}", "belongs to the Apache user www-data"),
    ("owned by another user", f"chown nobody {CONF}", "belongs to nobody (uid"),
    ("unresolvable server name",
     edit_conf("'s|^public_url = .*|public_url = https://weave.invalid/weave/|'"), "DNS A/AAAA record"),
    ("captcha without secret", edit_conf("-e '/^captcha_secret/d' -e 's/^registration = off/registration = on/'"),
     "captcha_secret is unset"),
    ("captcha verifier without keys", f"echo 'captcha_verify_url = https://verify.example/' >> {CONF}",
     "without both of its keys"),
    ("public_url http", edit_conf("'s|^public_url = https://|public_url = http://|'"), "is not https"),
    ("cache folder not writable",
     f"install -d -m 755 /var/lib/weave-ro && echo 'account_cache_file = /var/lib/weave-ro/board' >> {CONF}",
     "cannot open or create the account cache file"),
    ("wrong db password", edit_conf("'s/^db_password = .*/db_password = wrong/'"), "cannot reach database"),
    ("empty database",
     "mariadb -e \"CREATE DATABASE IF NOT EXISTS weave_empty; GRANT ALL ON weave_empty.* TO weave@localhost\" && "
     + edit_conf("'s/^db_name = .*/db_name = weave_empty/'"), "has no weave schema"),
    ("sendmail missing", edit_conf("'$a sendmail_command = /usr/sbin/no-such-sendmail -t'"),
     "sendmail_command '/usr/sbin/no-such-sendmail' does not exist"),
    ("max_request_bytes above FcgidMaxRequestLen", f"echo 'max_request_bytes = 8388608' >> {CONF}",
     "FcgidMaxRequestLen 4194304 is below max_request_bytes 8388608"),
]


def test_check_names_each_broken_setting_of_weave_conf():
    original = sh(f"cat {CONF}").stdout
    missed = []
    for what, breaking, words in CONF_BREAKS:
        sh(breaking)
        p, problems = check()
        if not (p.returncode == 1 and any(words in line and " -- fix: " in line for line in problems)):
            missed.append(f"{what}: exit {p.returncode}, expected a problem with {words!r}:\n{p.stdout}{p.stderr}")
        with open(os.path.join(box().top, "conf"), "w") as f:
            f.write(original)
        sh(f"cat {box().top}/conf > {CONF} && chown root:www-data {CONF} && chmod 0640 {CONF}")
    assert not missed, "\n\n".join(missed)
    p, problems = check()
    assert p.returncode == 0, p.stdout


def test_check_warns_of_an_account_cache_file_on_a_disk():
    """The cache file on a disk's file system works, but every page the
    processes write is written back and faults again: check says so."""
    original = sh(f"cat {CONF}").stdout
    sh("install -d -o www-data -g www-data -m 700 /var/lib/weave-disk && "
       f"echo 'account_cache_file = /var/lib/weave-disk/board' >> {CONF}")
    try:
        p, problems = check()
        assert p.returncode == 0 and problems == [], p.stdout
        assert any(line.startswith("warning: the account cache file /var/lib/weave-disk/board "
                                   "is on a disk's file system") and "/dev/shm" in line
                   for line in p.stdout.splitlines()), p.stdout
    finally:
        with open(os.path.join(box().top, "conf"), "w") as f:
            f.write(original)
        sh(f"cat {box().top}/conf > {CONF} && chown root:www-data {CONF} && chmod 0640 {CONF}")
    p, problems = check()
    assert p.returncode == 0 and "on a disk's file system" not in p.stdout, p.stdout


def test_check_names_the_account_cache_file_of_another_user():
    board = sh("ls /dev/shm/weave-server-* | grep -Ev '\\.(changes|metrics)$'").stdout.strip()
    assert board, "no account cache file: the server never ran?"
    sh(f"cp -p {board} {box().top}/board && rm {board} && install -m 600 -o root /dev/null {board} && "
       f"truncate -s $(stat -c %s {box().top}/board) {board}")
    try:
        p, problems = check()
        assert p.returncode == 1 and any("cannot open or create the account cache file" in line
                                         and "chown www-data" in line for line in problems), p.stdout
    finally:
        sh(f"rm -f {board}")
    p, problems = check()
    assert p.returncode == 0, p.stdout


def test_check_names_a_missing_index_and_db_upgrade_restores_it():
    sh("mariadb weave -e 'ALTER TABLE wbo DROP INDEX by_modified'")
    p, problems = check()
    assert p.returncode == 1 and any("index wbo.by_modified" in line and "db upgrade" in line
                                     for line in problems), p.stdout
    p = admin("db", "upgrade")
    assert p.returncode == 0 and "recreated index wbo.by_modified" in p.stdout, p.stdout + p.stderr
    p, problems = check()
    assert p.returncode == 0, p.stdout


def test_db_upgrade_drops_the_keys_of_older_releases():
    keys_sql = ("SELECT DISTINCT index_name FROM information_schema.statistics "
                "WHERE table_schema = 'weave' AND table_name = 'wbo'")
    older = {"by_parentid", "by_predecessorid", "by_sortindex", "by_expires"}
    sh("mariadb weave -e 'ALTER TABLE wbo ADD KEY by_parentid (user_id, collection, parentid), "
       "ADD KEY by_predecessorid (user_id, collection, predecessorid), "
       "ADD KEY by_sortindex (user_id, collection, sortindex), ADD KEY by_expires (expires)'")
    assert older <= set(sh(f'mariadb -N weave -e "{keys_sql}"').stdout.split())
    p, problems = check()
    assert p.returncode == 0, p.stdout  # a database of an older release still serves
    p = admin("db", "upgrade")
    assert p.returncode == 0, p.stdout + p.stderr
    keys = set(sh(f'mariadb -N weave -e "{keys_sql}"').stdout.split())
    assert not keys & older, keys
    assert {"PRIMARY", "by_modified"} <= keys, keys


def test_check_names_a_stopped_database():
    stop_mariadb()
    try:
        p, problems = check()
        assert p.returncode == 1 and any("cannot reach database" in line and "start MariaDB" in line
                                         for line in problems), p.stdout
        assert any("answers 503" in line for line in problems), p.stdout
    finally:
        start_mariadb()


APACHE_BREAKS = [
    ("snippet disabled", "a2disconf -q weave", "a2enconf -q weave", "the snippet is not enabled"),
    ("the whole snippet server-wide (as setup did before)",
     f"cp /usr/share/weave-server/apache-weave.conf {SNIPPET}", None,
     "over plain HTTP: passwords would cross the network in clear"),
    ("no AllowEncodedSlashes in the vhost", f"sed -i '/AllowEncodedSlashes/d' {SITE}",
     None, "by something other than weave.fcgi"),
    ("FcgidMaxRequestLen below max_request_bytes",
     f"sed -i 's/^FcgidMaxRequestLen .*/FcgidMaxRequestLen 1048576/' {SNIPPET}",
     None, "FcgidMaxRequestLen 1048576 is below max_request_bytes 2097152"),
    ("FcgidMaxRequestLen unset", f"sed -i '/^FcgidMaxRequestLen/d' {SNIPPET}",
     None, "(mod_fcgid's default) is below"),
]


def test_check_names_each_broken_apache_setting():
    saved = {f: sh(f"cat {f}").stdout for f in (SITE, SNIPPET)}
    missed = []
    for what, breaking, repair, words in APACHE_BREAKS:
        sh(breaking)
        graceful()
        p, problems = check()
        if not (p.returncode == 1 and any(words in line and " -- fix: " in line for line in problems)):
            missed.append(f"{what}: exit {p.returncode}, expected a problem with {words!r}:\n{p.stdout}")
        if repair:
            sh(repair)
        for f, text in saved.items():
            with open(os.path.join(box().top, "saved"), "w") as out:
                out.write(text)
            sh(f"cat {box().top}/saved > {f}")
        graceful()
    assert not missed, "\n\n".join(missed)
    # Apache stopped, and a configuration that does not parse.
    sh("apache2ctl stop && sleep 1")
    p, problems = check()
    assert p.returncode == 1 and any("no answer from" in line and "start Apache" in line
                                     for line in problems), p.stdout
    sh(f"echo 'NoSuchDirective on' >> {SITE}")
    p, problems = check()
    assert p.returncode == 1 and any("configuration test fails" in line for line in problems), p.stdout
    with open(os.path.join(box().top, "saved"), "w") as out:
        out.write(saved[SITE])
    sh(f"cat {box().top}/saved > {SITE} && apache2ctl start && sleep 1")
    p, problems = check()
    assert p.returncode == 0, p.stdout


def test_check_names_mod_fcgid_disabled_and_the_fix():
    sh("a2dismod -q -f fcgid")
    try:
        p, problems = check()
        line = [l for l in problems if "configuration test fails" in l]
        assert p.returncode == 1 and line, p.stdout
        assert "Included configuration files" not in line[0], line[0]
        assert "Fcgid" in line[0] and "a2enmod fcgid" in line[0], line[0]
    finally:
        sh("a2enmod -q fcgid")
    p, problems = check()
    assert p.returncode == 0, p.stdout


def test_make_uninstall_removes_what_install_made_and_names_the_rest():
    out = sh(f"make -C {S['build']} uninstall").stdout
    for path in ("/usr/sbin/weave-admin", "/usr/libexec/weave", "/usr/share/weave-server",
                 "/usr/share/man/man8/weave-admin.8", "/usr/share/man/man5/weave.conf.5",
                 "/usr/share/bash-completion/completions/weave-admin", "/usr/share/doc/weave-server"):
        assert sh(f"test -e {path}", check=False).returncode != 0, f"{path} is still there"
    for words in ("rm -r /etc/weave", "a2dissite weave-ssl; a2disconf weave", "DROP DATABASE weave",
                  "rm -f /dev/shm/weave-server-*"):
        assert words in out, (words, out)
    # What it names is really there to remove.
    assert sh("test -f /etc/weave/weave.conf && ls /dev/shm/weave-server-*", check=False).returncode == 0


# ---- the host --------------------------------------------------------------------------------------

def test_nothing_reached_the_host():
    b = S["box"]
    b.stop()
    after = {p: os.path.exists(p) for p in HOST_PATHS}
    assert after == S["host_before"], (S["host_before"], after)
    assert not os.path.exists(b.top)
    # The host's port 443 is as it was (Apache ran in its own network).
    assert port_443_open() == S["host_443"]
    if "build_tmp" in S:
        shutil.rmtree(S["build_tmp"], ignore_errors=True)
