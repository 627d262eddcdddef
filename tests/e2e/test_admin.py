"""weave-admin end to end (issue 5; docs/admin.md, Administration; docs/protocol.md,
Data from older servers): every command against the stack's real MariaDB,
checked through Apache where the server sees the change.

Exit codes: 0 success, 1 the operation failed (unknown user, ...), 2 usage
error, 3 configuration error, 4 database error.

`migrate` has its own file, test_migrate.py.

Settings, nodes and schema changes are global to the stack: every test
that makes one undoes it in a finally block.
"""

import json
import os
import re
import secrets
import subprocess
import tempfile
import threading
import time

import weave
from admin_kit import admin_json, auth_get, config_value, full, root_sql, scalar, unique
from terminal import run_on_terminal
from weave import CONFIG, admin, new_user, request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
STACK = os.environ.get("WEAVE_STACK_DIR", "")
SOCKET = os.path.join(STACK, "db", "mysqld.sock")


# ---- helpers ---------------------------------------------------------------

def run(*args, input=None):
    """weave-admin without raising: the CompletedProcess."""
    return admin(*args, input=input, check=False)


def expect(code, *args, input=None):
    p = run(*args, input=input)
    assert p.returncode == code, (
        f"weave-admin {' '.join(map(str, args))}: exit {p.returncode}, wanted {code}\n"
        f"stdout: {p.stdout}\nstderr: {p.stderr}")
    return p


def post(user, password, coll, records):
    r = request("POST", f"1.0/{user}/storage/{coll}", body=records, user=user,
                password=password)
    assert r.status == 200, r
    assert r.json()["failed"] == {}, r
    return r


def wait_for(check, timeout=12.0, step=0.25):
    """Poll until check() is truthy (processes read settings every 5 s)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(step)


# ---- conventions: help, usage errors, config ----------------------------------

COMMANDS = [
    "db init", "db upgrade", "db check",
    "user add", "user delete", "user list", "user show", "user passwd",
    "user email", "user quota", "user disable", "user enable", "user alert",
    "user node", "user move",
    "node add", "node capacity", "node list", "node remove", "node assign", "node drain",
    "purge", "stats", "export", "import", "backup", "restore", "migrate",
    "backoff", "maintenance", "status", "settings", "setup", "check", "cache",
]


def test_help_for_every_command():
    top = expect(0, "--help").stdout
    for words in COMMANDS:
        assert words in top, f"{words} missing from --help:\n{top}"
        p = expect(0, *words.split(), "--help")
        assert p.stdout.startswith(f"Usage: weave-admin [--config FILE] {words}"), p.stdout
        assert "Exit status" in p.stdout, p.stdout
    for group in ("user", "node", "db"):
        p = expect(0, group, "--help")
        assert f"{group} " in p.stdout


def test_usage_errors_exit_2():
    expect(2)                                  # no command
    expect(2, "frobnicate")
    expect(2, "user")                          # group without subcommand
    expect(2, "user", "frob")
    expect(2, "user", "show")                  # missing NAME
    expect(2, "user", "show", "a", "b")        # too many
    expect(2, "user", "list", "--bogus")
    expect(2, "user", "list", "--yes")         # an option of another command
    expect(2, "user", "list", "--sort", "size")
    expect(2, "user", "list", "--limit", "0")
    expect(2, "user", "list", "--enabled", "--disabled")
    expect(2, "user", "add", "bad name!", "--password-file", "-", input="x" * 12)
    expect(2, "user", "show", "no/slash")
    expect(2, "user", "quota", "x", "lots")
    expect(2, "user", "quota", "x", "-5")
    expect(2, "stats", "--top", "many")
    expect(2, "purge", "--batch", "0")
    expect(2, "node", "add", "ftp://example.com/")
    expect(2, "node", "add", "https://example.com/", "--capacity", "-1")
    expect(2, "backoff", "soon")
    expect(2, "backoff", "999999")
    expect(2, "maintenance", "maybe")
    expect(2, "maintenance", "on", "--retry-after", "0")
    expect(2, "migrate")                       # --from is required
    expect(2, "migrate", "--from", "postgres://x@y/z")
    expect(2, "import", "someone")


def test_config_errors_exit_3():
    p = subprocess.run([weave.ADMIN, "--config", "/nonexistent/weave.conf", "user", "list"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 3, p
    p = subprocess.run([weave.ADMIN, "user", "list", "--config", "/nonexistent/weave.conf"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 3, p
    # --help never needs the config.
    p = subprocess.run([weave.ADMIN, "--config", "/nonexistent", "user", "add", "--help"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p


def test_database_unreachable_exit_4():
    with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as f:
        f.write("db_host = 127.0.0.1\ndb_port = 1\ndb_connect_timeout = 2\n")
    try:
        p = subprocess.run([weave.ADMIN, "--config", f.name, "user", "list"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 4, p
        assert "cannot reach the database" in p.stderr, p.stderr
    finally:
        os.unlink(f.name)


def test_cache_reads_the_board_while_the_database_refuses():
    """cache needs weave.conf but not the database: its row says so."""
    with open(CONFIG) as src:
        lines = [l for l in src if not l.startswith("db_password")]
    with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as f:
        f.writelines(lines + ["db_password = not-the-password\n"])
    try:
        p = subprocess.run([weave.ADMIN, "--config", f.name, "user", "list"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 4, p  # the database really refuses this config
        p = subprocess.run([weave.ADMIN, "--config", f.name, "cache"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p
        assert "password verifications (KDF runs)" in p.stdout, p.stdout
        assert p.stderr == "", p.stderr
    finally:
        os.unlink(f.name)


# ---- db ----------------------------------------------------------------------------

def test_db_init_upgrade_check():
    assert "up to date" in expect(0, "db", "init").stdout
    assert "up to date" in expect(0, "db", "upgrade").stdout
    p = expect(0, "db", "check")
    assert re.search(r"schema version \d+", p.stdout), p.stdout
    assert " 0 missing" in p.stdout, p.stdout


def test_db_check_finds_missing_table_and_index():
    # A missing table: check fails, upgrade adds it back. (No test is using
    # the nodes table right now; it is empty outside the node test.)
    assert scalar("SELECT COUNT(*) FROM nodes") == "0"
    root_sql("DROP TABLE nodes", "weave")
    try:
        p = expect(1, "db", "check")
        assert "missing table nodes" in p.stdout, p.stdout
        expect(0, "db", "upgrade")
        expect(0, "db", "check")
    finally:
        root_sql("CREATE TABLE IF NOT EXISTS nodes (url VARCHAR(255) CHARACTER SET ascii "
                 "COLLATE ascii_bin NOT NULL, capacity INT UNSIGNED NULL, created BIGINT "
                 "NOT NULL DEFAULT 0, PRIMARY KEY (url)) ENGINE=InnoDB", "weave")
    # A missing index of an existing table (information_schema.statistics).
    root_sql("ALTER TABLE registration_log DROP INDEX by_created", "weave")
    try:
        p = expect(1, "db", "check")
        assert "missing index registration_log.by_created" in p.stdout, p.stdout
    finally:
        root_sql("ALTER TABLE registration_log ADD INDEX by_created (created)", "weave")
    expect(0, "db", "check")


# ---- users ----------------------------------------------------------------------------

def test_user_add_show_and_json_shape():
    name = unique("adm")
    pw = secrets.token_urlsafe(12)
    p = expect(0, "user", "add", name, "--email", f"{name}@example.com",
               "--password-file", "-", input=pw + "\n")
    assert name in p.stdout
    expect(1, "user", "add", name, "--password-file", "-", input=pw + "\n")  # exists
    assert auth_get(name, pw, "info/collections").status == 200
    post(name, pw, "bookmarks", [{"id": "a", "payload": "12345"}, {"id": "b", "payload": "xy"}])
    post(name, pw, "tabs", [{"id": "t", "payload": "t", "ttl": 1}])

    info = admin_json("user", "show", name)
    for key in ("username", "email", "enabled", "records", "bytes", "quota_kb", "node",
                "last_write", "created", "node_effective", "quota_effective_kb",
                "quota_source", "usage_kb", "expired_records", "alert", "collections"):
        assert key in info, (key, info)
    assert info["username"] == name and info["email"] == f"{name}@example.com"
    assert info["enabled"] is True and info["alert"] is None
    assert info["collections"]["bookmarks"]["records"] == 2
    assert info["collections"]["bookmarks"]["bytes"] == 7
    assert info["node_effective"] == weave.BASE_URL
    assert isinstance(info["last_write"], float) and info["last_write"] > 1e9
    text = expect(0, "user", "show", name).stdout
    for word in ("status", "node", "quota", "usage", "last write", "bookmarks"):
        assert word in text, text
    # The ttl'd record counts as expired once its second has passed.
    time.sleep(1.2)
    info = admin_json("user", "show", name)
    assert "tabs" not in info["collections"] and info["expired_records"] == 1, info
    expect(1, "user", "show", unique("nobody"))
    expect(1, "user", "show", unique("nobody"), "--json")


def test_user_add_email_login_is_hashed_name():
    email = f"{unique('mail')}@Example.com"
    pw = secrets.token_urlsafe(12)
    expect(0, "user", "add", email, "--password-file", "-", input=pw + "\n")
    info = admin_json("user", "show", email)
    assert re.fullmatch(r"[a-z2-7]{32}", info["username"]), info
    assert info["email"] == email
    # Sync 1.1 clients log in with the hashed name.
    assert auth_get(info["username"], pw, "info/collections").status == 200
    expect(0, "user", "delete", email, "--yes")


def test_user_passwd():
    name, pw = new_user("pw")
    new = secrets.token_urlsafe(12)
    expect(0, "user", "passwd", name, "--password-file", "-", input=new + "\n")
    assert auth_get(name, pw, "info/collections").status == 401
    assert auth_get(name, new, "info/collections").status == 200
    expect(1, "user", "passwd", name, "--password-file", "-", input="short\n")   # weak
    expect(1, "user", "passwd", unique("ghost"), "--password-file", "-", input=new + "\n")
    expect(2, "user", "passwd", name)          # no terminal and no file


def test_user_email():
    name, _ = new_user("em")
    expect(0, "user", "email", name, "new@example.org")
    assert admin_json("user", "show", name)["email"] == "new@example.org"
    expect(0, "user", "email", name, "--clear")
    assert admin_json("user", "show", name)["email"] is None
    expect(2, "user", "email", name, "not-an-address")
    expect(2, "user", "email", name)                           # neither
    expect(2, "user", "email", name, "a@b.example", "--clear")  # both
    expect(1, "user", "email", unique("ghost"), "x@example.org")


def test_user_quota():
    name, pw = new_user("quota")
    expect(0, "user", "quota", name, "100")
    r = auth_get(name, pw, "info/quota")
    assert r.status == 200 and r.json()[1] == 100, r
    info = admin_json("user", "show", name)
    assert info["quota_kb"] == 100 and info["quota_source"] == "account"
    # 1 KB: the first 600 bytes fit, the next 600 do not (400 14, rolled back).
    expect(0, "user", "quota", name, "1")
    post(name, pw, "history", [{"id": "first", "payload": "x" * 600}])
    r = request("POST", f"1.0/{name}/storage/history", user=name, password=pw,
                body=[{"id": "more", "payload": "x" * 600}])
    assert r.status == 400 and r.body == b"14", r
    assert set(full(name, pw, "history")) == {"first"}
    expect(0, "user", "quota", name, "none")
    assert admin_json("user", "show", name)["quota_kb"] == 0
    expect(0, "user", "quota", name, "default")
    info = admin_json("user", "show", name)
    assert info["quota_kb"] is None and info["quota_source"] == "default"
    expect(1, "user", "quota", unique("ghost"), "5")


def test_user_disable_enable():
    name, pw = new_user("dis")
    expect(0, "user", "disable", name)
    assert auth_get(name, pw, "info/collections").status == 401
    assert admin_json("user", "show", name)["enabled"] is False
    names = [u["username"] for u in admin_json("user", "list", "--disabled")]
    assert name in names
    names = [u["username"] for u in admin_json("user", "list", "--enabled")]
    assert name not in names
    expect(0, "user", "enable", name)
    assert auth_get(name, pw, "info/collections").status == 200
    expect(1, "user", "disable", unique("ghost"))
    expect(1, "user", "enable", unique("ghost"))


def test_user_alert():
    name, pw = new_user("alert")
    text = "Server moves on Friday: see https://example.org/news"
    expect(0, "user", "alert", name, text)
    r = auth_get(name, pw, "info/collections")
    assert r.headers.get("X-Weave-Alert") == text, r
    assert admin_json("user", "show", name)["alert"] == text
    expect(0, "user", "alert", name, "--clear")
    r = auth_get(name, pw, "info/collections")
    assert r.headers.get("X-Weave-Alert") is None, r
    expect(2, "user", "alert", name, "two\nlines")      # header injection refused
    expect(2, "user", "alert", name)
    expect(2, "user", "alert", name, "x", "--clear")
    expect(2, "user", "alert", name, "x" * 1025)
    expect(1, "user", "alert", unique("ghost"), "hello")


def test_user_node():
    name, _ = new_user("unode")
    expect(0, "user", "node", name, "https://node7.example.com/weave")
    r = request("GET", f"user/1.0/{name}/node/weave")
    assert r.status == 200 and r.body == b"https://node7.example.com/weave/", r
    assert admin_json("user", "show", name)["node"] == "https://node7.example.com/weave/"
    expect(0, "user", "node", name, "default")
    r = request("GET", f"user/1.0/{name}/node/weave")
    assert r.body.decode() == weave.BASE_URL, r
    expect(2, "user", "node", name, "node7.example.com")
    expect(2, "user", "node", name, "https://bad host/")
    expect(1, "user", "node", unique("ghost"), "https://node7.example.com/")


def test_user_list_filters_sort_limit_json():
    prefix = unique("ls")
    users = []
    for i, size in enumerate((10, 3000, 200)):
        name = f"{prefix}{i}"
        pw = secrets.token_urlsafe(12)
        admin("user", "add", name, "--password-file", "-", input=pw + "\n")
        post(name, pw, "prefs", [{"id": "p", "payload": "x" * size}])
        users.append((name, pw))
        time.sleep(0.02)
    # Write to the first one last: most recent activity.
    post(users[0][0], users[0][1], "prefs", [{"id": "q", "payload": "y"}])

    rows = admin_json("user", "list", "--name-like", f"{prefix}%")
    assert [r["username"] for r in rows] == [u for u, _ in users], rows
    for key in ("username", "email", "enabled", "records", "bytes", "quota_kb", "node",
                "last_write", "created"):
        assert key in rows[0], rows[0]
    rows = admin_json("user", "list", "--name-like", f"{prefix}%", "--sort", "usage")
    assert [r["username"] for r in rows] == [users[1][0], users[2][0], users[0][0]], rows
    assert rows[0]["bytes"] == 3000 and rows[0]["records"] == 1
    rows = admin_json("user", "list", "--name-like", f"{prefix}%", "--sort", "activity")
    assert rows[0]["username"] == users[0][0], rows
    rows = admin_json("user", "list", "--name-like", f"{prefix}%", "--limit", "1")
    assert len(rows) == 1
    # Upper case in the pattern matches the lower-case names.
    rows = admin_json("user", "list", "--name-like", f"{prefix.upper()}_")
    assert len(rows) == 3
    text = expect(0, "user", "list", "--name-like", f"{prefix}%").stdout
    assert text.splitlines()[0].startswith("USER") and users[1][0] in text


def test_user_delete_removes_everything():
    name, pw = new_user("del")
    post(name, pw, "bookmarks", [{"id": f"b{i}", "payload": "p"} for i in range(5)])
    expect(2, "user", "delete", name)          # not a terminal: needs --yes
    expect(0, "user", "delete", name, "--yes")
    assert auth_get(name, pw, "info/collections").status == 401
    assert scalar(f"SELECT COUNT(*) FROM users WHERE username = '{name}'") == "0"
    expect(1, "user", "delete", name, "--yes")


# ---- nodes -------------------------------------------------------------------------------

def _clear_nodes(users):
    for u in users:
        run("user", "node", u, "default")
    for n in admin_json("node", "list"):
        run("node", "remove", n["url"])


def test_nodes_spread_new_accounts():
    n1 = f"https://{unique('n1')}.example.com/weave"
    n2 = f"https://{unique('n2')}.example.com/"
    made = []
    assert admin_json("node", "list") == [], "the node table must start empty"
    try:
        p = expect(0, "node", "add", n1, "--capacity", "1")
        assert n1 + "/" in p.stdout
        expect(1, "node", "add", n1 + "/")                    # exists (normalised)
        nodes = admin_json("node", "list")
        assert nodes == [{"url": n1 + "/", "capacity": 1, "users": 0, "full": False,
                          "created": nodes[0]["created"]}], nodes

        pw = secrets.token_urlsafe(12)
        a = unique("na")
        made.append(a)
        expect(0, "user", "add", a, "--password-file", "-", input=pw + "\n")
        assert admin_json("user", "show", a)["node"] == n1 + "/"
        r = request("GET", f"user/1.0/{a}/node/weave")
        assert r.body.decode() == n1 + "/", r
        # n1 is full now: no node has room.
        b = unique("nb")
        p = expect(1, "user", "add", b, "--password-file", "-", input=pw + "\n")
        assert "full" in p.stderr
        expect(0, "node", "capacity", n1, "2")
        made.append(b)
        expect(0, "user", "add", b, "--password-file", "-", input=pw + "\n")
        assert admin_json("user", "show", b)["node"] == n1 + "/"

        expect(0, "node", "add", n2)                            # unlimited
        c = unique("nc")
        made.append(c)
        expect(0, "user", "add", c, "--password-file", "-", input=pw + "\n")
        assert admin_json("user", "show", c)["node"] == n2, "fewest accounts wins"
        # --node on add; node list counts and full flag.
        d = unique("nd")
        made.append(d)
        expect(0, "user", "add", d, "--node", "default", "--password-file", "-",
               input=pw + "\n")
        assert admin_json("user", "show", d)["node"] is None
        by_url = {n["url"]: n for n in admin_json("node", "list")}
        assert by_url[n1 + "/"]["users"] == 2 and by_url[n1 + "/"]["full"] is True
        assert by_url[n2]["users"] == 1 and by_url[n2]["capacity"] is None

        # Registration through the User API picks a node too (needs the
        # stack's admin secret to bypass registration being off / captcha).
        secret = config_value("admin_secret")
        if secret:
            e = unique("ne")
            made.append(e)
            r = request("PUT", f"user/1.0/{e}", body={"password": pw},
                        headers={"X-Weave-Secret": secret})
            assert r.status == 200, r
            r = request("GET", f"user/1.0/{e}/node/weave")
            assert r.body.decode() == n2, r

        # assign: explicit, then to the emptiest.
        expect(0, "node", "assign", a, n2)
        assert admin_json("user", "show", a)["node"] == n2
        expect(0, "node", "assign", d)
        assert admin_json("user", "show", d)["node"] == n1 + "/"
        expect(1, "node", "assign", a, "https://not-a-node.example.com/")
        expect(1, "node", "assign", unique("ghost"))
        expect(2, "node", "assign", a, "mailto:x")

        # remove: refused while accounts use the node.
        p = expect(1, "node", "remove", n1)
        assert "accounts" in p.stderr
        for u in (b, d):
            expect(0, "user", "node", u, "default")
        expect(0, "node", "remove", n1)
        expect(1, "node", "remove", n1)
        expect(1, "node", "capacity", n1, "5")
        assert [n["url"] for n in admin_json("node", "list")] == [n2]
    finally:
        _clear_nodes(made)
    assert admin_json("node", "list") == []


# ---- data: export / import ---------------------------------------------------------------

RECORDS = [
    {"id": "plain", "payload": "hello", "sortindex": 5},
    {"id": "escapes", "payload": "é \" \\ \n \t \u0001 \u007f \U0001F600", "parentid": "plain"},
    {"id": "tomb", "payload": ""},
    {"id": "meta-only", "sortindex": -999999999},
    {"id": "ttl", "payload": "expires later", "ttl": 3600, "predecessorid": "plain"},
    {"id": "Case", "payload": "upper"},
    {"id": "case", "payload": "lower"},
]


def test_export_import_round_trip_is_byte_identical():
    name, pw = new_user("exp")
    post(name, pw, "bookmarks", RECORDS)
    post(name, pw, "history", [{"id": f"h{i}", "payload": f"visit {i}", "sortindex": i}
                               for i in range(50)])
    before = {c: full(name, pw, c) for c in ("bookmarks", "history")}
    with tempfile.TemporaryDirectory() as d:
        f1, f2, f3 = (os.path.join(d, n) for n in ("one.jsonl", "two.jsonl", "three.jsonl"))
        p = expect(0, "export", name, f1)
        assert "57 records" in p.stdout, p.stdout
        data = open(f1, "rb").read()
        assert os.stat(f1).st_mode & 0o077 == 0, "export files are private"
        lines = data.decode("utf-8").splitlines()
        assert len(lines) == 57
        row = json.loads(lines[0])
        assert list(row) == ["collection", "id", "parentid", "predecessorid", "sortindex",
                             "modified", "expires", "payload"], row
        assert isinstance(row["modified"], int)
        by_id = {json.loads(l)["id"]: json.loads(l) for l in lines}
        assert by_id["meta-only"]["payload"] is None
        assert by_id["tomb"]["payload"] == ""
        assert by_id["ttl"]["expires"] == by_id["ttl"]["modified"] + 360000
        assert by_id["plain"]["expires"] is None
        # Standard output gives the same bytes.
        out = subprocess.run([weave.ADMIN, "--config", CONFIG, "export", name],
                             capture_output=True, timeout=60)
        assert out.returncode == 0 and out.stdout == data

        # Delete the data through the API, import, export again.
        r = request("DELETE", f"1.0/{name}/storage", user=name, password=pw,
                    headers={"X-Confirm-Delete": "1"})
        assert r.status == 200, r
        assert auth_get(name, pw, "info/collections").json() == {}
        expect(0, "import", name, f1)
        expect(0, "export", name, f2)
        assert open(f2, "rb").read() == data
        after = {c: full(name, pw, c) for c in ("bookmarks", "history")}
        assert after == before

        # Delete the whole account, create it again, import.
        expect(0, "user", "delete", name, "--yes")
        expect(1, "import", name, f1)              # no such user
        admin("user", "add", name, "--password-file", "-", input=pw + "\n")
        expect(0, "import", name, "-", input=data.decode("utf-8"))
        expect(0, "export", name, f3)
        assert open(f3, "rb").read() == data
        assert {c: full(name, pw, c) for c in ("bookmarks", "history")} == before
    expect(1, "export", unique("ghost"))


def test_import_restores_exactly_and_raises_last_write():
    name, pw = new_user("imp")
    future = int(time.time() * 100) + 20000             # 200 s ahead: within the skew
    lines = [
        {"collection": "forms", "id": "f1", "parentid": None, "predecessorid": None,
         "sortindex": 7, "modified": future, "expires": None, "payload": "a"},
        {"collection": "forms", "id": "f2", "modified": 126540283712, "payload": "b"},
    ]
    body = "".join(json.dumps(l) + "\n" for l in lines)
    expect(0, "import", name, "-", input=body)
    rows = full(name, pw, "forms")
    assert rows["f1"]["modified"] == f"{future // 100}.{future % 100:02d}"
    assert rows["f1"]["sortindex"] == 7
    assert rows["f2"]["modified"] == "1265402837.12"
    # A new write is stamped above the newest imported record.
    r = request("PUT", f"1.0/{name}/storage/forms/f3", body={"payload": "c"},
                user=name, password=pw)
    assert r.status == 200, r
    assert int(round(float(r.body) * 100)) > future, r

    # A bad line anywhere: nothing of the file is imported.
    bad = body.replace('"f1"', '"g1"') + '{"collection": "forms", "id": "g9"}\n'
    p = expect(1, "import", name, "-", input=bad)
    assert ":3:" in p.stderr and "modified" in p.stderr, p.stderr
    assert "g1" not in full(name, pw, "forms")
    for broken in ('{"collection": "forms", "id": "x", "modified": 1, "extra": 1}\n',
                   '{"collection": "bad name", "id": "x", "modified": 1}\n',
                   '{"collection": "forms", "id": "x", "modified": 1.5}\n',
                   '{"collection": "forms", "id": "' + "x" * 65 + '", "modified": 1}\n',
                   '[1, 2]\n', 'not json\n', '{"collection": "forms"} trailing\n'):
        expect(1, "import", name, "-", input=broken)
    # --replace: only the file's records remain.
    expect(0, "import", name, "-", "--replace", input=json.dumps(lines[1]) + "\n")
    assert set(full(name, pw, "forms")) == {"f2"}
    expect(1, "import", name, "/nonexistent/file.jsonl")


def test_import_refuses_what_the_api_refuses_and_far_future_modified():
    name, pw = new_user("impv")
    now = int(time.time() * 100)
    good = {"collection": "forms", "id": "ok", "modified": now, "payload": "p"}
    expect(0, "import", name, "-", input=json.dumps(good) + "\n")
    cases = {
        "id": {"id": "a/b"},                       # '/' is never in an id
        "id ": {"id": "a,b"},                      # ',' is the ids= separator
        "id  ": {"id": "caf\u00e9"},                # not printable ASCII
        "parentid": {"parentid": "p/q"},
        "predecessorid": {"predecessorid": "x\ty"},
        "sortindex": {"sortindex": 1000000000},    # API: at most 999 999 999
        "modified": {"modified": now + 3600 * 100},  # an hour ahead
    }
    for key, change in cases.items():
        line = {**good, "id": "new-" + key.strip(), **change}
        p = expect(1, "import", name, "-", input=json.dumps(good) + "\n" + json.dumps(line) + "\n")
        assert f':2: "{key.strip()}"' in p.stderr, (key, p.stderr)
        assert "nothing was imported" in p.stderr, p.stderr
    # Nothing of the refused files was written, the good first lines included.
    rows = full(name, pw, "forms")
    assert set(rows) == {"ok"}, rows
    r = request("PUT", f"1.0/{name}/storage/forms/later", body={"payload": "c"},
                user=name, password=pw)
    assert r.status == 200 and float(r.body) < now / 100 + 3600, r


def vm_hwm_kb(pid):
    """The process's own peak resident memory (VmHWM), or 0 once it is gone.
    Not wait4's ru_maxrss: that also counts the forking Python's pages."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def test_import_of_a_huge_line_fails_fast_with_bounded_memory():
    """2 GB without a newline: refused once the cap (128 MiB) is passed,
    not after reading it all, and weave-admin's peak memory stays near the
    cap instead of the line's size."""
    name, _ = new_user("imph")
    cmd = [weave.ADMIN, "--config", CONFIG, "import", name, "-"]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    chunk = b'{"collection":"c","id":"x","payload":"' + b"a" * (1 << 20)
    sent = peak = 0
    try:
        while sent < 2 << 30:
            p.stdin.write(chunk)
            sent += len(chunk)
            peak = max(peak, vm_hwm_kb(p.pid))
    except BrokenPipeError:
        pass
    p.stdin.close()
    err = p.stderr.read().decode()
    p.wait()
    assert p.returncode == 1, err
    assert "line too long" in err and "nothing was imported" in err, err
    assert sent < 1 << 30, f"weave-admin read {sent} bytes of the line"
    assert 100 * 1024 < peak < 400 * 1024, f"peak {peak} KB"


def test_progress_bar_only_on_a_terminal():
    name, pw = new_user("prog")
    post(name, pw, "history", [{"id": f"h{i}", "payload": "x"} for i in range(20)])
    with tempfile.TemporaryDirectory() as d:
        target = os.path.join(d, "out.jsonl")
        # stderr not a terminal: quiet.
        p = expect(0, "export", name, target)
        assert p.stderr == "", p.stderr
        # stderr a terminal: a bar with the count, a rate and a time.
        p, text = run_on_terminal([weave.ADMIN, "--config", CONFIG, "export", name, target,
                                   "--force"], timeout=60)
        assert p.returncode == 0
        assert "export [" in text and "20/20 records" in text and "/s" in text, text


# ---- data: purge, stats ---------------------------------------------------------------------

def test_purge_while_serving():
    name, pw = new_user("purge")
    # 2000 expired records (written with import: quicker than 2000 PUTs),
    # and live ones beside them, one with a ttl that has not run out.
    past = int(time.time() * 100) - 100000
    expect(0, "import", name, "-", input="".join(
        json.dumps({"collection": "history", "id": f"e{i}", "modified": past - 5000,
                    "expires": past, "payload": "gone"}) + "\n" for i in range(2000)))
    post(name, pw, "history", [{"id": f"live{i}", "payload": f"stays {i}"} for i in range(30)])
    post(name, pw, "bookmarks", [{"id": "bm", "payload": "stays", "ttl": 86400}])
    p = expect(0, "purge", "--dry-run")
    assert int(p.stdout.split()[0]) >= 2000, p.stdout

    busy, busy_pw = new_user("busy")
    statuses, errors = [], []
    stop = threading.Event()

    def traffic():
        i = 0
        while not stop.is_set():
            i += 1
            try:
                r = request("POST", f"1.0/{busy}/storage/history", user=busy,
                            password=busy_pw,
                            body=[{"id": f"b{i}-{k}", "payload": "x", "ttl": 1}
                                  for k in range(5)])
                statuses.append(r.status)
                statuses.append(auth_get(busy, busy_pw, "info/collections").status)
                statuses.append(auth_get(name, pw, "storage/history?full=1").status)
            except Exception as exc:  # a dropped connection is a failure too
                errors.append(repr(exc))

    thread = threading.Thread(target=traffic)
    thread.start()
    try:
        time.sleep(0.3)
        p = expect(0, "purge", "--batch", "100", "--pause", "20")
        assert re.search(r"purged \d+ expired records in \d+ batches", p.stdout), p.stdout
        assert int(p.stdout.split()[1]) >= 2000, p.stdout
        time.sleep(0.3)
    finally:
        stop.set()
        thread.join(60)
    assert not errors, errors[:5]
    assert statuses and all(s < 500 for s in statuses), [s for s in statuses if s >= 500]
    assert statuses.count(200) == len(statuses), sorted(set(statuses))
    left = scalar("SELECT COUNT(*) FROM wbo w JOIN users u ON u.id = w.user_id "
                  f"WHERE u.username = '{name}' AND w.id LIKE 'e%'")
    assert left == "0", left
    rows = full(name, pw, "history")
    assert sorted(rows) == sorted(f"live{i}" for i in range(30))
    assert rows["live7"]["payload"] == "stays 7"
    assert set(full(name, pw, "bookmarks")) == {"bm"}
    # --quiet: nothing on success (cron mails stay empty).
    p = expect(0, "purge", "--quiet")
    assert p.stdout == "" and p.stderr == ""


def test_purge_walks_every_account_in_batches():
    # There is no expiry key: purge walks the records in key order, and
    # deletes collection by collection from the first expired id on. An
    # account with nothing expired sits between two with five expired
    # records in each of two collections, among live ones before, between
    # and after them; --batch 2 takes three statements per collection.
    users = [new_user(f"walk{i}") for i in range(3)]
    past = int(time.time() * 100) - 100000
    live = {"forms": ["a-kept", "old2-kept", "z-kept"], "tabs": ["kept"]}
    for i, (name, pw) in enumerate(users):
        if i != 1:
            expect(0, "import", name, "-", input="".join(
                json.dumps({"collection": coll, "id": f"old{k}", "modified": past - 10,
                            "expires": past, "payload": "gone"}) + "\n"
                for coll in ("forms", "tabs") for k in range(5)))
        for coll, ids in live.items():
            post(name, pw, coll, [{"id": rid, "payload": f"{rid} of {name}"} for rid in ids])
    p = expect(0, "purge", "--batch", "2")
    m = re.search(r"purged (\d+) expired records in (\d+) batches", p.stdout)
    assert m and int(m.group(1)) >= 20 and int(m.group(2)) >= 12, p.stdout
    names = ", ".join(f"'{name}'" for name, _ in users)
    left = scalar("SELECT COUNT(*) FROM wbo w JOIN users u ON u.id = w.user_id "
                  f"WHERE u.username IN ({names}) AND w.expires <= {past}")
    assert left == "0", left
    for name, pw in users:
        for coll, ids in live.items():
            rows = full(name, pw, coll)
            assert sorted(rows) == sorted(ids), (coll, sorted(rows))
            assert all(rows[rid]["payload"] == f"{rid} of {name}" for rid in ids), rows


def test_stats_json_shape():
    name, pw = new_user("stats")
    post(name, pw, "clients", [{"id": "c", "payload": "x" * 5000}])
    s = admin_json("stats", "--top", "500")
    for key in ("users", "disabled_users", "records", "bytes", "expired_records",
                "collections", "largest_users"):
        assert key in s, s
    assert s["users"] >= 1 and s["records"] >= 1
    colls = {c["collection"]: c for c in s["collections"]}
    assert set(colls["clients"]) == {"collection", "users", "records", "bytes"}
    assert colls["clients"]["bytes"] >= 5000
    top = [u["username"] for u in s["largest_users"]]
    assert name in top
    sizes = [u["bytes"] for u in s["largest_users"]]
    assert sizes == sorted(sizes, reverse=True)
    assert len(admin_json("stats", "--top", "1")["largest_users"]) == 1
    text = expect(0, "stats").stdout
    assert "accounts" in text and "COLLECTION" in text


# ---- operator settings --------------------------------------------------------------------

def test_backoff_maintenance_and_status():
    name, pw = new_user("ops")
    try:
        expect(0, "backoff", "30")
        s = admin_json("settings")
        assert s["backoff"] == 30 and s["source"]["backoff"] == "database", s
        assert set(s) == {"backoff", "maintenance", "retry_after", "source"}
        # status adds the server's state (database, accounts) to the settings.
        status = admin_json("status")
        assert {k: status[k] for k in s} == s, status
        r = wait_for(lambda: (lambda r: r if r.headers.get("X-Weave-Backoff") == "30" else None)(
            auth_get(name, pw, "info/collections")))
        assert r, "X-Weave-Backoff never appeared"
        expect(0, "backoff", "off")
        assert admin_json("status")["backoff"] == 0
        assert wait_for(lambda: auth_get(name, pw, "info/collections").headers.get(
            "X-Weave-Backoff") is None)

        expect(0, "maintenance", "on", "--retry-after", "120")
        s = admin_json("status")
        assert s["maintenance"] is True and s["retry_after"] == 120, s
        r = wait_for(lambda: (lambda r: r if r.status == 503 else None)(
            auth_get(name, pw, "info/collections")))
        assert r, "maintenance never gave 503"
        assert r.headers.get("Retry-After") == "120", r
        assert "maintenance" in expect(0, "status").stdout
        expect(0, "maintenance", "off")
        assert wait_for(lambda: auth_get(name, pw, "info/collections").status == 200)
    finally:
        run("maintenance", "default")
        run("backoff", "default")
        root_sql("DELETE FROM settings WHERE name = 'retry_after'", "weave")
    s = admin_json("status")
    assert set(s["source"].values()) == {"weave.conf"}, s
    assert wait_for(lambda: auth_get(name, pw, "info/collections").status == 200)


# ---- man page and completion ---------------------------------------------------------

def test_man_page_renders_and_covers_every_command():
    page = os.path.join(ROOT, "tools", "weave-admin.8")
    p = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", page],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    p = subprocess.run(["man", "-l", page], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "MANPAGER": "cat", "PAGER": "cat", "COLUMNS": "100"})
    assert p.returncode == 0, p.stderr
    text = re.sub(r"\s+", " ", re.sub(r".\x08", "", p.stdout))
    for words in COMMANDS:
        assert words in text, f"man page lacks {words}"
    for section in ("EXIT STATUS", "FILES", "EXAMPLES", "OPTIONS"):
        assert section in text, section


def test_bash_completion():
    script = os.path.join(ROOT, "tools", "weave-admin.bash-completion")

    def complete(*words):
        line = " ".join(words)
        cmd = (f"source {script}; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; "
               "_weave_admin; printf '%s\\n' \"${COMPREPLY[@]}\"")
        p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=30)
        assert p.returncode == 0, p.stderr
        return p.stdout.split()

    assert {"user", "node", "db", "purge", "migrate"} <= set(complete("weave-admin", "''"))
    assert complete("weave-admin", "user", "a") == ["add", "alert"]
    assert "--sort" in complete("weave-admin", "user", "list", "--")
    assert complete("weave-admin", "user", "list", "--sort", "''") == ["name", "usage",
                                                                       "activity"]
    assert "--dry-run" in complete("weave-admin", "migrate", "--")
    assert {"--user", "--users-file", "--replace", "--dry-run"} <= set(
        complete("weave-admin", "restore", "--"))
    assert set(complete("weave-admin", "ba")) == {"backoff", "backup"}
