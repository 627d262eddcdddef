"""weave-admin migrate end to end (docs/migration.md): data written with each
old server's own schema (the DDL of its source, in this file), migrated into
the stack's MariaDB, then a real login through Apache with the old password
and every record read back through the Storage API.

Sources: FSyncMS on SQLite and MySQL (md5 and bcrypt hashes; its fork's
PREFIX_ tables), the PHP 1.0 server on MySQL and on its SQLite engine
(_users and a/b/c/MD5 files), weave-minimal (Python: one NAME.HASH SQLite
file per user, a table per collection). MySQL sources are scratch databases
on the stack's MariaDB (as root through its socket), read by weave-admin as
a SELECT-only user whose password never appears on a command line.

Hostile sources (issue 27): hashes over the KDF caps, a 12 KB SQLite file
whose generated column is zeroblob(2000000000), tables of the wrong shape.
"""

import base64
import crypt  # noqa: deprecated in 3.11, still libxcrypt's crypt(3): bcrypt vectors
import hashlib
import os
import secrets
import socket
import sqlite3
import subprocess
import tempfile
import time
import warnings

import weave
from admin_kit import (admin_json, auth_get, config_value, full, password_hash_of,
                       root_sql, scalar, unique)
from weave import ADMIN, CONFIG, admin

HERE = os.path.dirname(os.path.abspath(__file__))
STACK = os.environ.get("WEAVE_STACK_DIR", "")
SOCKET = os.path.join(STACK, "db", "mysqld.sock")
WEAVE_FCGI = os.environ.get("WEAVE_FCGI", "weave.fcgi")

warnings.filterwarnings("ignore", category=DeprecationWarning)


# ---- helpers ---------------------------------------------------------------

def run(*args, input=None, env=None):
    """weave-admin without raising: the CompletedProcess. env adds variables."""
    cmd = [ADMIN, "--config", CONFIG, *map(str, args)]
    return subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def expect(code, *args, input=None, env=None):
    p = run(*args, input=input, env=env)
    assert p.returncode == code, (
        f"weave-admin {' '.join(map(str, args))}: exit {p.returncode}, wanted {code}\n"
        f"stdout: {p.stdout}\nstderr: {p.stderr}")
    return p


def bcrypt(pw, variant, cost):
    """A bcrypt hash as PHP's crypt() writes it ($2a$ / $2y$ / $2b$)."""
    salt = base64.b64encode(secrets.token_bytes(16), b"./").decode()[:22]
    h = crypt.crypt(pw, f"${variant}${cost:02d}${salt}")
    assert h and h.startswith(f"${variant}$") and len(h) == 60, h
    return h


def md5(pw):
    return hashlib.md5(pw.encode()).hexdigest()


def ssha256(pw):
    salt = secrets.token_bytes(8)
    return "{SSHA-256}" + base64.b64encode(hashlib.sha256(pw.encode() + salt).digest()
                                           + salt).decode()


def check_legacy_login(name, pw, expected):
    """Log in through Apache with the old password and compare every record
    with the legacy rows: {coll: {id: (payload, sortindex, "modified")}}.
    The password joins those the log scan (test_logs_hold_no_secrets.py)
    looks for: a legacy hash's verify and re-hash must not log it either."""
    weave.PASSWORDS.append(pw)
    r = auth_get(name, pw, "info/collections")
    assert r.status == 200, r
    assert set(r.json()) == set(expected), (r.json(), expected)
    for coll, records in expected.items():
        rows = full(name, pw, coll)
        assert set(rows) == set(records), (coll, rows)
        for rid, (payload, sortindex, modified, parentid) in records.items():
            row = rows[rid]
            assert row.get("payload") == payload, (rid, row)
            assert row.get("sortindex") == sortindex, (rid, row)
            assert row["modified"] == modified, (rid, row)
            assert row.get("parentid") == parentid, (rid, row)


# FSyncMS (balu-/FSyncMS setup.php), SQLite: the PHP "Weave Minimal" layout.
FSYNCMS_SQLITE_SCHEMA = """
create table wbo (username text, id text, collection text, parentid text,
  predecessorid int, modified real, sortindex int, payload text, payload_size int,
  ttl int, primary key (username, collection, id));
create index parentindex on wbo (username, parentid);
create index predecessorindex on wbo (username, predecessorid);
create index modifiedindex on wbo (username, collection, modified);
create table users (username text primary key, md5 text);
"""


def test_migrate_fsyncms_sqlite_md5_and_bcrypt_users_keep_their_passwords():
    tag = secrets.token_hex(3)
    alice, bob, carol = f"alice{tag}", f"Bob{tag}", f"carol{tag}"
    erin, frank = f"erin{tag}", f"frank{tag}"
    pw = {alice: "alice-old-password", bob: "bob-old-password", carol: "carol-password",
          erin: "erin-bcrypt-pässword", frank: "frank-bcrypt-password"}
    mail = f"dave{tag}@example.net"
    pw[mail] = "dave-old-password"
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "weave_db")
        db = sqlite3.connect(path)
        db.executescript(FSYNCMS_SQLITE_SCHEMA)
        db.execute("insert into users values (?, ?)", (alice, md5(pw[alice])))
        db.execute("insert into users values (?, ?)", (bob, md5(pw[bob]).upper()))
        db.execute("insert into users values (?, ?)", (carol, md5(pw[carol])))  # no records
        db.execute("insert into users values (?, ?)", (mail, md5(pw[mail])))
        # FSyncMS's default: bcrypt, "$2a$12$" as its WeaveHashBCrypt writes.
        db.execute("insert into users values (?, ?)", (erin, bcrypt(pw[erin], "2a", 12)))
        db.execute("insert into users values (?, ?)", (frank, bcrypt(pw[frank], "2y", 10)))
        rows = [
            (alice, "b1", "bookmarks", None, None, 1265402837.12, 3, '{"ciphertext":"x"}'),
            (alice, "b2", "bookmarks", "b1", "b1", 1265402837.1, None, "é ünïcode ✓"),
            (alice, "b3", "bookmarks", None, None, 1265402837.125, -4, ""),
            (alice, "b4", "bookmarks", None, None, 1265402838.0, None, None),
            (alice, "global", "meta", None, None, 1265402800.99, None, '{"syncID":"abc"}'),
            (bob, "h1", "history", None, None, 1265400000.5, 100, "visit"),
            (mail, "t1", "tabs", None, None, 1265400000.01, None, "tab"),
            (erin, "c1", "clients", None, None, 1300000000.5, None, '{"ciphertext":"e"}'),
            ("ghost" + tag, "x", "history", None, None, 1265400000.0, None, "orphan"),
        ]
        for r in rows:
            db.execute("insert into wbo (username, id, collection, parentid, predecessorid,"
                       " modified, sortindex, payload, payload_size) values (?,?,?,?,?,?,?,?,?)",
                       r + (len(r[7] or ""),))
        db.commit()
        db.close()

        src = f"sqlite:{path}"
        p = expect(0, "migrate", "--from", src, "--dry-run")
        assert "dry run: would migrate 6 accounts and 8 records" in p.stdout, p.stdout
        assert "bookmarks 4" in p.stdout and "history 1" in p.stdout, p.stdout
        assert "ghost" + tag in p.stderr, p.stderr        # orphans are reported
        expect(1, "user", "show", alice)                  # nothing written
        p = expect(0, "migrate", "--from", src)
        assert "migrated 6 accounts and 8 records" in p.stdout, p.stdout
        assert "(fsyncms schema)" in p.stdout, p.stdout
        assert "bcrypt" not in p.stderr, p.stderr          # no "cannot log in" warning
        # Again, through the old format name: everything exists, nothing changes.
        p = expect(0, "migrate", "--from", src, "--format", "minimal")
        assert "migrated 0 accounts" in p.stdout and "skipped 6" in p.stdout, p.stdout

    assert password_hash_of(alice) == md5(pw[alice])      # kept as it was
    check_legacy_login(alice, pw[alice], {
        "bookmarks": {
            "b1": ('{"ciphertext":"x"}', 3, "1265402837.12", None),
            "b2": ("é ünïcode ✓", None, "1265402837.10", "b1"),
            "b3": ("", -4, "1265402837.13", None),          # .125 rounds half up
            "b4": (None, None, "1265402838.00", None),
        },
        "meta": {"global": ('{"syncID":"abc"}', None, "1265402800.99", None)},
    })
    # Re-hashed with scrypt at that first login.
    assert password_hash_of(alice).startswith("$scrypt$")
    b = bob.lower()
    check_legacy_login(b, pw[bob], {"history": {"h1": ("visit", 100, "1265400000.50", None)}})
    check_legacy_login(carol, pw[carol], {})
    hashed = admin_json("user", "show", mail)["username"]
    check_legacy_login(hashed, pw[mail], {"tabs": {"t1": ("tab", None, "1265400000.01", None)}})
    assert auth_get(alice, "wrong-password", "info/collections").status == 401
    # Last write is the newest legacy timestamp: new writes go above it.
    assert admin_json("user", "show", alice)["last_write"] == 1265402838.0
    # bcrypt: the same password opens the account, a wrong one does not, and
    # the first good login stores scrypt in its place.
    assert password_hash_of(erin).startswith("$2a$12$")
    assert auth_get(erin, "erin-bcrypt-passw0rd", "info/collections").status == 401
    assert password_hash_of(erin).startswith("$2a$12$")
    check_legacy_login(erin, pw[erin], {
        "clients": {"c1": ('{"ciphertext":"e"}', None, "1300000000.50", None)}})
    assert password_hash_of(erin).startswith("$scrypt$")
    check_legacy_login(erin, pw[erin], {
        "clients": {"c1": ('{"ciphertext":"e"}', None, "1300000000.50", None)}})
    check_legacy_login(frank, pw[frank], {})
    assert password_hash_of(frank).startswith("$scrypt$")
    for u in (alice, b, carol, mail, erin, frank):
        admin("user", "delete", u, "--yes")


def test_migrate_reports_records_it_cannot_store():
    tag = secrets.token_hex(3)
    good, bad = f"good{tag}", f"bad{tag}"
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "weave_db")
        db = sqlite3.connect(path)
        db.executescript(FSYNCMS_SQLITE_SCHEMA)
        db.execute("insert into users values (?, ?)", (good, md5("good-password")))
        db.execute("insert into users values (?, ?)", (bad, md5("bad-password")))
        db.execute("insert into users values (?, ?)", ("not valid!", md5("x")))
        db.execute("insert into wbo (username, id, collection, modified, payload) values "
                   "(?, 'a', 'bookmarks', 1265402837.12, 'p')", (good,))
        db.execute("insert into wbo (username, id, collection, modified, payload) values "
                   "(?, 'a', 'bookmarks', 1265402837.12, 'p')", (bad,))
        db.execute("insert into wbo (username, id, collection, modified, payload) values "
                   "(?, 'b', 'no spaces allowed', 1265402837.12, 'p')", (bad,))
        db.commit()
        db.close()
        p = expect(1, "migrate", "--from", f"sqlite:{path}")
        assert f"{bad}: NOT migrated" in p.stderr and "collection" in p.stderr, p.stderr
        assert "not valid!" in p.stderr, p.stderr
        assert "migrated 1 accounts and 1 records" in p.stdout, p.stdout
    expect(1, "user", "show", bad)                        # rolled back whole
    assert admin_json("user", "show", good)["records"] == 1
    admin("user", "delete", good, "--yes")
    expect(1, "migrate", "--from", "sqlite:/nonexistent/weave_db")
    with tempfile.NamedTemporaryFile(suffix=".db") as f:
        sqlite3.connect(f.name).execute("create table other (x)").connection.commit()
        p = expect(1, "migrate", "--from", f"sqlite:{f.name}")
        assert "not an FSyncMS or PHP server database" in p.stderr, p.stderr
    expect(2, "migrate", "--from", "sqlite:/x", "--format", "oracle")
    # No users at all, only records nobody owns: nothing copied, said so.
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "weave_db")
        db = sqlite3.connect(path)
        db.executescript(FSYNCMS_SQLITE_SCHEMA)
        db.execute("insert into wbo (username, id, collection, modified, payload) values "
                   "('nobody', 'a', 'bookmarks', 1265402837.12, 'p')")
        db.commit()
        db.close()
        p = expect(0, "migrate", "--from", f"sqlite:{path}")
        assert "migrated 0 accounts and 0 records" in p.stdout, p.stdout
        assert "'nobody', who is not in the users table" in p.stderr, p.stderr


# PHP server (docs/protocol.md, Data from older servers; PHP-1.x users table).
PHP_SCHEMA = """
CREATE TABLE collections (
  userid int(11) NOT NULL, collectionid smallint(6) NOT NULL, name varchar(32) NOT NULL,
  PRIMARY KEY (userid, collectionid), KEY nameindex (userid, name)) ENGINE=InnoDB;
CREATE TABLE wbo (
  username int(11) NOT NULL, collection smallint(6) NOT NULL default '0',
  id varbinary(64) NOT NULL default '', parentid varbinary(64) default NULL,
  predecessorid varbinary(64) default NULL, sortindex int(11) default NULL,
  modified bigint(20) default NULL, payload longtext, payload_size int(11) default NULL,
  PRIMARY KEY (username, collection, id),
  KEY parentindex (username, collection, parentid),
  KEY modified (username, collection, modified),
  KEY weightindex (username, collection, sortindex),
  KEY predecessorindex (username, collection, predecessorid),
  KEY size_index (username, payload_size)) ENGINE=InnoDB;
CREATE TABLE users (
  id int(11) NOT NULL auto_increment, username varchar(32) NOT NULL,
  password_hash varbinary(128) default NULL, email varbinary(64) default NULL,
  status tinyint(4) default '1', alert text, reset varbinary(32) default NULL,
  reset_expiration datetime, PRIMARY KEY (id), UNIQUE KEY username (username)) ENGINE=InnoDB;
"""

# FSyncMS on MySQL (docs/protocol.md, Data from older servers): Weave Minimal's
# columns, modified in seconds.
FSYNCMS_SCHEMA = """
CREATE TABLE wbo (
  username varchar(100), id varchar(65), collection varchar(100), parentid varchar(65),
  predecessorid int, modified real, sortindex int, payload text, payload_size int, ttl int,
  PRIMARY KEY (username, collection, id)) ENGINE=InnoDB;
CREATE TABLE users (username varchar(255), md5 varchar(124), PRIMARY KEY (username)) ENGINE=InnoDB;
"""


def _sql_str(s):
    return "NULL" if s is None else "'" + s.replace("\\", "\\\\").replace("'", "''") + "'"


class LegacyMySQL:
    """A scratch database on the stack's MariaDB and a SELECT-only user."""

    def __init__(self, schema):
        self.db = unique("legacy_")
        self.user = unique("leg")
        self.password = secrets.token_hex(12)
        weave.PASSWORDS.append(self.password)   # the log scan looks for it too
        root_sql(f"CREATE DATABASE {self.db} CHARACTER SET utf8mb4")
        root_sql(schema, self.db)
        for host in ("127.0.0.1", "localhost"):
            root_sql(f"CREATE USER '{self.user}'@'{host}' IDENTIFIED BY '{self.password}';"
                     f"GRANT SELECT ON {self.db}.* TO '{self.user}'@'{host}';")
        self.port = config_value("db_port")

    def url(self):
        """No password in it: migrate reads it from WEAVE_MIGRATE_PASSWORD
        (env()) or --password-file."""
        return f"mysql://{self.user}@127.0.0.1:{self.port}/{self.db}"

    def env(self):
        return {"WEAVE_MIGRATE_PASSWORD": self.password}

    def sql(self, text):
        root_sql(text, self.db)

    def drop(self):
        root_sql(f"DROP DATABASE IF EXISTS {self.db}")
        for host in ("127.0.0.1", "localhost"):
            root_sql(f"DROP USER IF EXISTS '{self.user}'@'{host}'")


def test_migrate_php_server_mysql():
    tag = secrets.token_hex(3)
    names = {"md5": f"phpmd5{tag}", "ssha": f"phpssha{tag}", "off": f"phpoff{tag}"}
    pws = {k: f"{k}-legacy-password" for k in names}
    legacy = LegacyMySQL(PHP_SCHEMA)
    try:
        legacy.sql(
            "INSERT INTO users (id, username, password_hash, email, status, alert) VALUES "
            f"(11, '{names['md5']}', '{md5(pws['md5'])}', 'md5@example.com', 1, NULL),"
            f"(12, '{names['ssha']}', '{ssha256(pws['ssha'])}', NULL, 1, 'Please upgrade'),"
            f"(13, '{names['off']}', '{md5(pws['off'])}', NULL, 0, NULL);"
            "INSERT INTO collections VALUES (11, 101, 'addons'), (12, 101, 'other');")
        rows = [
            (11, 7, "bm1", None, None, 3, 126540283712, '{"ciphertext":"bm"}'),
            (11, 7, "bm2", "bm1", "bm1", None, 126540283713, "second ✓"),
            (11, 4, "hist", None, None, 250, 126540000001, "history"),
            (11, 101, "ad1", None, None, None, 126540283799, "addon"),
            (11, 6, "global", None, None, None, 126540280000, '{"storageVersion":3}'),
            (12, 2, "keys", None, None, None, 126540283700, "crypto"),
            (12, 101, "o", None, None, None, 126540283701, "custom other"),
            (13, 9, "tab", None, None, None, 126540283702, "tab"),
            (99, 7, "lost", None, None, None, 126540283702, "orphan"),
        ]
        values = ",".join(
            f"({u}, {c}, {_sql_str(i)}, {_sql_str(p)}, {_sql_str(q)}, "
            f"{'NULL' if s is None else s}, {m}, {_sql_str(pl)}, {len(pl.encode())})"
            for u, c, i, p, q, s, m, pl in rows)
        legacy.sql("INSERT INTO wbo (username, collection, id, parentid, predecessorid, "
                   f"sortindex, modified, payload, payload_size) VALUES {values};")

        p = expect(0, "migrate", "--from", legacy.url(), "--dry-run", env=legacy.env())
        assert "would migrate 3 accounts and 8 records" in p.stdout, p.stdout
        assert "(php schema)" in p.stdout, p.stdout
        assert "addons 1" in p.stdout and "bookmarks 2" in p.stdout, p.stdout
        expect(1, "user", "show", names["md5"])
        p = expect(0, "migrate", "--from", legacy.url(), "--format", "php", env=legacy.env())
        assert "migrated 3 accounts and 8 records" in p.stdout, p.stdout

        check_legacy_login(names["md5"], pws["md5"], {
            "bookmarks": {"bm1": ('{"ciphertext":"bm"}', 3, "1265402837.12", None),
                          "bm2": ("second ✓", None, "1265402837.13", "bm1")},
            "history": {"hist": ("history", 250, "1265400000.01", None)},
            "addons": {"ad1": ("addon", None, "1265402837.99", None)},
            "meta": {"global": ('{"storageVersion":3}', None, "1265402800.00", None)},
        })
        assert admin_json("user", "show", names["md5"])["email"] == "md5@example.com"
        check_legacy_login(names["ssha"], pws["ssha"], {
            "crypto": {"keys": ("crypto", None, "1265402837.00", None)},
            "other": {"o": ("custom other", None, "1265402837.01", None)},
        })
        r = auth_get(names["ssha"], pws["ssha"], "info/collections")
        assert r.headers.get("X-Weave-Alert") == "Please upgrade", r
        assert password_hash_of(names["ssha"]).startswith("$scrypt$")
        # Disabled in the PHP server, disabled here.
        assert auth_get(names["off"], pws["off"], "info/collections").status == 401
        assert admin_json("user", "show", names["off"])["enabled"] is False
        # The MySQL source is read-only for weave-admin; a wrong password is exit 1.
        expect(1, "migrate", "--from", legacy.url(), env={"WEAVE_MIGRATE_PASSWORD": "wrong"})
        expect(1, "migrate", "--from", legacy.url(), "--format", "fsyncms", env=legacy.env())
    finally:
        legacy.drop()
        for u in names.values():
            run("user", "delete", u, "--yes")


def test_migrate_fsyncms_mysql_over_socket_with_password_file():
    tag = secrets.token_hex(3)
    name, pw = f"fsync{tag}", "fsyncms-old-pass"
    legacy = LegacyMySQL(FSYNCMS_SCHEMA)
    try:
        legacy.sql(f"INSERT INTO users VALUES ('{name}', '{bcrypt(pw, '2a', 12)}');"
                   "INSERT INTO wbo (username, id, collection, parentid, predecessorid, "
                   "modified, sortindex, payload, payload_size) VALUES "
                   f"('{name}', 'p1', 'passwords', NULL, NULL, 1265402837.12, 1, 'secret', 6),"
                   f"('{name}', 'p2', 'passwords', 'p1', NULL, 1300000000.07, NULL, 'two', 3),"
                   f"('{name}', 'f', 'forms', NULL, NULL, 1265402837, -3, 'form', 4);")
        url = f"mysql://{legacy.user}@localhost/{legacy.db}?socket={SOCKET}"
        p = expect(0, "migrate", "--from", url, "--password-file", "-",
                   input=legacy.password + "\n")
        assert "migrated 1 accounts and 3 records" in p.stdout, p.stdout
        assert "fsyncms" in p.stdout, p.stdout
        check_legacy_login(name, pw, {
            "passwords": {"p1": ("secret", 1, "1265402837.12", None),
                          "p2": ("two", None, "1300000000.07", "p1")},
            "forms": {"f": ("form", -3, "1265402837.00", None)},
        })
        assert password_hash_of(name).startswith("$scrypt$")
    finally:
        legacy.drop()
        run("user", "delete", name, "--yes")



# ---- FSyncMS's fork: PREFIX_ tables -----------------------------------------

# martok/FSyncMS setup.php: the same columns under DATABASE_TABLE_PREFIX.
FSYNCMS_FORK_SCHEMA = """
CREATE TABLE fsync_wbo (username varchar(100), id varchar(65), collection varchar(100),
  parentid varchar(65), predecessorid int, modified double precision, sortindex int,
  payload text, payload_size int, ttl int, PRIMARY KEY (username,collection,id));
CREATE TABLE fsync_users (username varchar(255), md5 varchar(124), primary key (username));
CREATE INDEX parentindex ON fsync_wbo (username, parentid);
CREATE TABLE wordpress_posts (id int);
"""


def test_migrate_fsyncms_fork_with_a_table_prefix():
    tag = secrets.token_hex(3)
    name, pw = f"fork{tag}", "fork-bcrypt-password"
    legacy = LegacyMySQL(FSYNCMS_FORK_SCHEMA)
    try:
        legacy.sql(f"INSERT INTO fsync_users VALUES ('{name}', '{bcrypt(pw, '2a', 12)}');"
                   "INSERT INTO fsync_wbo (username, id, collection, modified, sortindex, "
                   f"payload, payload_size) VALUES ('{name}', 'form.with-dots_and~{{tilde}}', "
                   "'forms', 1400000000.25, 2, 'form', 4);")
        p = expect(0, "migrate", "--from", legacy.url(), env=legacy.env())
        assert "migrated 1 accounts and 1 records" in p.stdout, p.stdout
        assert "tables fsync_users and fsync_wbo" in p.stdout, p.stdout
        check_legacy_login(name, pw, {
            "forms": {"form.with-dots_and~{tilde}": ("form", 2, "1400000000.25", None)}})
    finally:
        legacy.drop()
        run("user", "delete", name, "--yes")


# ---- weave-minimal (Python) -------------------------------------------------

# posativ/weave-minimal: a user's data is DATA_DIR/NAME.HEX, HEX the first 16
# hex digits of SHA-1(SALT + password), SALT this raw string of its app.
WM_SALT = r"\x14Q\xd4JbDk\x1bN\x84J\xd0\x05\x8a\x1b\x8b\xa6&V\x1b\xc5\x91\x97\xc4"
# storage.py set_item(): a table per collection, created on its first write.
WM_TABLE = ("CREATE table IF NOT EXISTS main.{} (id VARCHAR(64) PRIMARY KEY, modified FLOAT,"
            "sortindex INTEGER, payload VARCHAR(256),payload_size INTEGER, parentid VARCHAR(64),"
            "predecessorid VARCHAR(64), ttl INTEGER);")


def wm_path(d, name, pw):
    return os.path.join(d, name + "." + hashlib.sha1((WM_SALT + pw).encode()).hexdigest()[:16])


def wm_write(path, coll, records):
    """Rows as set_item() writes them: modified rounded to 2 places."""
    db = sqlite3.connect(path)
    db.execute(WM_TABLE.format(coll))
    for r in records:
        payload = r.get("payload")
        db.execute("INSERT INTO %s (id, modified, payload, payload_size, sortindex, parentid,"
                   " predecessorid, ttl) VALUES (?,?,?,?,?,?,?,?)" % coll,
                   (r["id"], round(r["modified"], 2), payload, len(payload) if payload else 0,
                    r.get("sortindex"), r.get("parentid"), r.get("predecessorid"),
                    r.get("ttl")))
    db.commit()
    db.close()


def test_migrate_weave_minimal_data_directory():
    tag = secrets.token_hex(3)
    alice, bob, carol = f"alice{tag}", f"bob.smith{tag}", f"carol{tag}"
    pw = {alice: "alice-minimal-pw", bob: "bob-minimal-pw", carol: "carol-minimal-pw"}
    now = time.time()
    with tempfile.TemporaryDirectory() as d:
        wm_write(wm_path(d, alice, pw[alice]), "bookmarks", [
            {"id": "b1", "modified": 1265402837.12, "sortindex": 3,
             "payload": '{"ciphertext":"x"}'},
            {"id": "b2", "modified": 1265402837.1, "payload": "é ünïcode ✓", "parentid": "b1",
             "predecessorid": "b1"},
        ])
        wm_write(wm_path(d, alice, pw[alice]), "tabs", [
            {"id": "fresh", "modified": now, "payload": "kept", "ttl": 3600},
            # weave-minimal deletes a row past its ttl on the next access: gone here too.
            {"id": "stale", "modified": 1265402800.5, "payload": "expired", "ttl": 60},
        ])
        wm_write(wm_path(d, bob, pw[bob]), "history", [
            {"id": "h1", "modified": 1265400000.5, "sortindex": 100, "payload": "visit"}])
        sqlite3.connect(wm_path(d, carol, pw[carol])).commit()   # registered, no data
        for junk in ("README", os.path.basename(wm_path(d, alice, pw[alice])) + "-journal",
                     "x.notahexhash0000"):
            open(os.path.join(d, junk), "w").close()

        p = expect(0, "migrate", "--from", f"sqlite:{d}", "--dry-run")
        assert "would migrate 3 accounts and 5 records" in p.stdout, p.stdout
        assert "(weave-minimal schema)" in p.stdout, p.stdout
        expect(1, "user", "show", alice)
        p = expect(0, "migrate", "--from", f"sqlite:{d}", "--format", "weave-minimal")
        assert "migrated 3 accounts and 5 records" in p.stdout, p.stdout
        # One file is not the data directory.
        p = expect(1, "migrate", "--from", f"sqlite:{wm_path(d, bob, pw[bob])}",
                   "--format", "weave-minimal")
        assert "data directory" in p.stderr, p.stderr

    assert password_hash_of(alice).startswith("$weave-minimal$")
    assert auth_get(alice, "alice-minimal-pX", "info/collections").status == 401
    fresh = f"{round(now, 2):.2f}"
    check_legacy_login(alice, pw[alice], {
        "bookmarks": {"b1": ('{"ciphertext":"x"}', 3, "1265402837.12", None),
                      "b2": ("é ünïcode ✓", None, "1265402837.10", "b1")},
        "tabs": {"fresh": ("kept", None, fresh, None)},
    })
    assert password_hash_of(alice).startswith("$scrypt$")   # re-hashed at that login
    check_legacy_login(bob, pw[bob], {"history": {"h1": ("visit", 100, "1265400000.50", None)}})
    check_legacy_login(carol, pw[carol], {})
    for u in (alice, bob, carol):
        admin("user", "delete", u, "--yes")


# ---- the PHP server's SQLite engine -----------------------------------------

# weaveserver-obsolote user/1/weave_user.php create_user_table(), in DIR/_users.
PHP_SQLITE_USERS = ("create table users (username text primary key, md5 text, email text,"
                    " status integer, alert text)")
# sync/1.0/weave_storage.php WeaveStorageSqlite::create_user(), one file per user.
PHP_SQLITE_WBO = """
create table wbo
(
 id text,
 collection text,
 parentid text,
 predecessorid int,
 modified real,
 sortindex int,
 payload text,
 payload_size int,
 primary key (collection,id)
);
create index idindex on wbo (id);
create index parentindex on wbo (parentid);
create index predecessorindex on wbo (predecessorid);
create index modifiedindex on wbo (modified);
"""


def php_store(d, name):
    """DIR/a/b/c/MD5(name), as the PHP server lays out its user files."""
    h = hashlib.md5(name.encode()).hexdigest()
    sub = os.path.join(d, h[0], h[1], h[2])
    os.makedirs(sub, exist_ok=True)
    return os.path.join(sub, h)


def test_migrate_php_server_sqlite_engine():
    tag = secrets.token_hex(3)
    a, off, empty = f"phplite{tag}", f"phpliteoff{tag}", f"phpliteempty{tag}"
    pws = {a: "php-lite-password", off: "php-lite-off-pw", empty: "php-lite-empty-pw"}
    with tempfile.TemporaryDirectory() as d:
        db = sqlite3.connect(os.path.join(d, "_users"))
        db.execute(PHP_SQLITE_USERS)
        db.execute("insert into users values (?,?,?,?,?)",
                   (a, md5(pws[a]), "lite@example.com", 1, "Moving soon"))
        db.execute("insert into users values (?,?,?,?,?)", (off, md5(pws[off]), None, 0, None))
        db.execute("insert into users values (?,?,?,?,?)", (empty, md5(pws[empty]), None, 1,
                                                             None))
        db.commit()
        db.close()
        for name, rows in ((a, [("bm1", "bookmarks", None, None, 126540283712.0, 3, "bm"),
                                ("bm2", "bookmarks", "bm1", None, 126540283713.0, None, "two ✓"),
                                ("ad1", "addons", None, None, 126540283799.0, None, "addon")]),
                           (off, [("t", "tabs", None, None, 126540283702.0, None, "tab")])):
            db = sqlite3.connect(php_store(d, name))
            db.executescript(PHP_SQLITE_WBO)
            for r in rows:
                db.execute("replace into wbo (id, collection, parentid, predecessorid, modified,"
                           " sortindex, payload, payload_size) values (?,?,?,?,?,?,?,?)",
                           r + (len(r[6].encode()),))
            db.commit()
            db.close()
        p = expect(0, "migrate", "--from", f"sqlite:{d}")
        assert "migrated 3 accounts and 4 records" in p.stdout, p.stdout
        assert "(php schema)" in p.stdout, p.stdout
    check_legacy_login(a, pws[a], {
        "bookmarks": {"bm1": ("bm", 3, "1265402837.12", None),
                      "bm2": ("two ✓", None, "1265402837.13", "bm1")},
        "addons": {"ad1": ("addon", None, "1265402837.99", None)},
    })
    r = auth_get(a, pws[a], "info/collections")
    assert r.headers.get("X-Weave-Alert") == "Moving soon", r
    assert admin_json("user", "show", a)["email"] == "lite@example.com"
    assert auth_get(off, pws[off], "info/collections").status == 401   # disabled there
    check_legacy_login(empty, pws[empty], {})
    for u in (a, off, empty):
        run("user", "delete", u, "--yes")


# ---- hostile sources (issue 27) ---------------------------------------------

SALT16 = "MDEyMzQ1Njc4OWFiY2RlZg=="
KEY32 = "ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw="
HUGE_SCRYPT = f"$scrypt$ln=20,r=8,p=1${SALT16}${KEY32}"     # 1 GiB per verification


def test_migrate_refuses_hashes_over_the_kdf_caps():
    tag = secrets.token_hex(3)
    good, huge, slow = f"capok{tag}", f"caphuge{tag}", f"capslow{tag}"
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "weave_db")
        db = sqlite3.connect(path)
        db.executescript(FSYNCMS_SQLITE_SCHEMA)
        db.execute("insert into users values (?, ?)", (good, md5("cap-ok-password")))
        db.execute("insert into users values (?, ?)", (huge, HUGE_SCRYPT))
        # Cost 31: days of CPU per login.
        db.execute("insert into users values (?, ?)",
                   (slow, "$2y$31$abcdefghijklmnopqrstuuWG29KuyeAicPCJODk1zjyGvyQUU2awu"))
        db.execute("insert into wbo (username, id, collection, modified, payload) values "
                   "(?, 'r', 'prefs', 1265402837.12, 'p')", (huge,))
        db.commit()
        db.close()
        p = expect(1, "migrate", "--from", f"sqlite:{path}")
    assert f"{huge}: NOT migrated: its password hash is refused: its scrypt memory" in p.stderr, \
        p.stderr
    assert f"{slow}: NOT migrated: its password hash is refused: its bcrypt cost" in p.stderr, \
        p.stderr
    assert "migrated 1 accounts and 0 records" in p.stdout, p.stdout
    expect(1, "user", "show", huge)
    expect(1, "user", "show", slow)
    check_legacy_login(good, "cap-ok-password", {})
    run("user", "delete", good, "--yes")


def fcgi_peaks():
    """Peak resident memory (VmHWM, KiB) of every weave.fcgi process."""
    want = os.path.realpath(WEAVE_FCGI)
    peaks = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.path.realpath(f"/proc/{pid}/exe") != want:
                continue
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peaks[int(pid)] = int(line.split()[1])
        except OSError:
            continue
    return peaks


def test_login_against_a_huge_stored_scrypt_hash_is_refused_within_small_memory():
    name = unique("hugehash")
    pw = "huge-hash-password"
    admin("user", "add", name, "--password-file", "-", input=pw + "\n")
    try:
        # Planted behind the server's back (as an old migrate or import could).
        scalar(f"UPDATE users SET password_hash = '{HUGE_SCRYPT}' WHERE username = '{name}'")
        time.sleep(1.5)   # the change log reaches the board within about a second
        for _ in range(3):
            assert auth_get(name, pw, "info/collections").status == 401
        peaks = fcgi_peaks()
        assert peaks, "no weave.fcgi process found"
        # Verifying that hash would take 1 GiB; refused, no process grew near it.
        assert max(peaks.values()) < 256 * 1024, peaks
        with open(os.environ["WEAVE_APACHE_LOG"], errors="replace") as f:
            assert "stored password hash refused: its scrypt memory" in f.read()
    finally:
        run("user", "delete", name, "--yes")


# A sanitizer build reserves terabytes of address space for its shadow
# memory, so RLIMIT_AS would stop it at start; there the peak RSS alone
# shows the bound.
SANITIZED = "ASAN_OPTIONS" in os.environ


# Runs argv[2:] as its own child under RLIMIT_AS argv[1] (0: none) and
# prints the child's peak RSS last on stderr. The measured process must be
# forked from a small process: a child's ru_maxrss starts at the RSS of the
# process it was forked from, here the test runner's.
MEASURE = r"""
import os, resource, sys
limit = int(sys.argv[1])
pid = os.fork()
if pid == 0:
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
sys.stderr.write(f"\nPEAK_KB {usage.ru_maxrss}\n")
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def run_bounded(args, limit_bytes, env=None):
    """weave-admin under RLIMIT_AS; (exit code, stderr, peak RSS in KiB)."""
    limit = 0 if SANITIZED else limit_bytes
    proc = subprocess.run(["/usr/bin/python3", "-c", MEASURE, str(limit),
                           ADMIN, "--config", CONFIG, *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})})
    err, _, peak = proc.stderr.rpartition("\nPEAK_KB ")
    assert peak.strip().isdigit(), proc.stderr[-2000:]
    return proc.returncode, err, int(peak)


def test_migrate_bounds_a_hostile_sqlite_file():
    tag = secrets.token_hex(3)
    victim = f"zero{tag}"
    with tempfile.TemporaryDirectory() as d:
        # A wbo whose payload is a generated column of 2 GB of zeros: 12 KB on disk.
        path = os.path.join(d, "weave_db")
        db = sqlite3.connect(path)
        db.executescript("""
            create table users (username text primary key, md5 text);
            create table wbo (username text, id text, collection text, parentid text,
              predecessorid int, modified real, sortindex int, payload_size int, ttl int);
        """)
        db.execute("insert into users values (?, ?)", (victim, md5("zero-password")))
        db.execute("insert into wbo (username, id, collection, modified) values "
                   "(?, 'z', 'bookmarks', 1265402837.12)", (victim,))
        # Added after the row: nothing computes it until a reader asks.
        db.execute("alter table wbo add column payload blob "
                   "generated always as (zeroblob(2000000000)) virtual")
        db.commit()
        db.close()
        assert os.path.getsize(path) <= 16 * 1024
        code, err, peak = run_bounded(["migrate", "--from", f"sqlite:{path}"], 1 << 30)
        assert code == 1, (code, err)            # refused, not killed
        assert "string or blob too big" in err, err
        assert peak < 200 * 1024, peak           # KiB: nothing near 2 GB was built
        expect(1, "user", "show", victim)        # its account rolled back

        # The same zeros as a user's hash, and a view in wbo's place.
        path2 = os.path.join(d, "users_db")
        db = sqlite3.connect(path2)
        db.executescript("""
            create table users (username text primary key);
            create table wbo (username text, id text, collection text, parentid text,
              predecessorid int, modified real, sortindex int, payload text);
            insert into users (username) values ('zz');
            alter table users add column md5 blob
              generated always as (zeroblob(2000000000)) virtual;
        """)
        db.commit()
        db.close()
        code, err, peak = run_bounded(["migrate", "--from", f"sqlite:{path2}"], 1 << 30)
        # A generated column is no column of the table to us: never selected.
        assert code == 1 and "users needs username and md5" in err, (code, err)
        assert peak < 200 * 1024, peak
        path3 = os.path.join(d, "view_db")
        db = sqlite3.connect(path3)
        db.executescript("""
            create table users (username text primary key, md5 text);
            create view wbo as select 'zz' as username, 'i' as id, 'c' as collection,
              null as parentid, null as predecessorid, null as sortindex, 1 as modified,
              zeroblob(2000000000) as payload;
        """)
        db.close()
        code, err, _ = run_bounded(["migrate", "--from", f"sqlite:{path3}"], 1 << 30)
        assert code == 1 and "has no users and wbo tables" in err, (code, err)

        # weave-minimal: the zeros in one user's collection; the other user is copied.
        wm = os.path.join(d, "wm")
        os.mkdir(wm)
        db = sqlite3.connect(wm_path(wm, victim, "zero-password"))
        db.execute("create table bookmarks (id text, modified float, sortindex int,"
                   " payload_size int, parentid text, predecessorid text, ttl int)")
        db.execute("insert into bookmarks (id, modified) values ('z', 1265402837.12)")
        db.execute("alter table bookmarks add column payload blob "
                   "generated always as (zeroblob(2000000000)) virtual")
        db.commit()
        db.close()
        fine = f"fine{tag}"
        wm_write(wm_path(wm, fine, "fine-password"), "tabs",
                 [{"id": "t", "modified": 1265402837.5, "payload": "tab"}])
        code, err, peak = run_bounded(["migrate", "--from", f"sqlite:{wm}"], 1 << 30)
        assert code == 1 and f"{victim}: NOT migrated" in err and "too big" in err, (code, err)
        assert peak < 200 * 1024, peak
    expect(1, "user", "show", victim)
    check_legacy_login(fine, "fine-password", {"tabs": {"t": ("tab", None, "1265402837.50",
                                                              None)}})
    run("user", "delete", fine, "--yes")


def test_migrate_tables_of_the_wrong_shape_are_reported_not_read_short():
    tag = secrets.token_hex(3)
    short, quoted, fine = f"short{tag}", f"quoted{tag}", f"shape{tag}"
    with tempfile.TemporaryDirectory() as d:
        # A collection table without most columns: no row reaches us short.
        db = sqlite3.connect(wm_path(d, short, "short-password"))
        db.execute("create table bookmarks (id text)")
        db.execute("insert into bookmarks values ('b')")
        db.commit()
        db.close()
        # A table name that is no collection name never goes into SQL.
        db = sqlite3.connect(wm_path(d, quoted, "quoted-password"))
        db.execute('create table "x"" ; drop table y; --" (id text)')
        db.commit()
        db.close()
        wm_write(wm_path(d, fine, "shape-password"), "prefs",
                 [{"id": "p", "modified": 1265402837.5, "payload": "pref"}])
        p = expect(1, "migrate", "--from", f"sqlite:{d}")
    assert f"{short}: NOT migrated" in p.stderr and "no such column" in p.stderr, p.stderr
    assert f"{quoted}: NOT migrated" in p.stderr and "not a collection name" in p.stderr, \
        p.stderr
    assert "migrated 1 accounts and 1 records" in p.stdout, p.stdout
    expect(1, "user", "show", short)
    expect(1, "user", "show", quoted)
    run("user", "delete", fine, "--yes")

    # The PHP server's collections table with a column missing.
    legacy = LegacyMySQL(PHP_SCHEMA.replace(" name varchar(32) NOT NULL,", "").replace(
        ", KEY nameindex (userid, name)", ""))
    try:
        legacy.sql("INSERT INTO users (id, username, password_hash) VALUES "
                   f"(1, 'phpshort{tag}', '{md5('x')}')")
        p = expect(1, "migrate", "--from", legacy.url(), env=legacy.env())
        assert "cannot read the collections" in p.stderr, p.stderr
    finally:
        legacy.drop()


def oversized_users_source(path, fine, size):
    """16 users with a name and a hash of size bytes, 8 with a hash, e-mail
    and alert of size bytes (all over their bounds), and one fine user."""
    db = sqlite3.connect(path)
    db.executescript("""
        create table users (username text primary key, md5 text, email text, alert text);
        create table wbo (username text, id text, collection text, parentid text,
          predecessorid int, modified real, sortindex int, payload text);
    """)
    db.execute("insert into users values (?, ?, null, null)", (fine, md5("big-ok-password")))
    for i in range(16):
        db.execute("insert into users values (?, ?, null, null)",
                   (f"{i:02d}" + "n" * size, "a" * size))
    for i in range(8):
        db.execute("insert into users values (?, ?, ?, ?)",
                   (f"bighash{i}x", "a" * size, "e" * size + "@example.org", "b" * size))
    db.commit()
    db.close()


def test_migrate_keeps_no_oversized_user_value_in_memory():
    """Names, hashes, e-mail and alerts past their bounds are refused before a
    copy is kept: memory does not grow with what a hostile users table holds.
    Measured against the same table with values of 300 bytes (also over the
    bounds, so the same paths run): kept whole, the 1 MiB values would add
    40 MiB to the peak."""
    fine = unique("bigok")
    # ASan would hold SQLite's freed row buffers in its quarantine.
    env = {"ASAN_OPTIONS": os.environ["ASAN_OPTIONS"] + ":quarantine_size_mb=0"} \
        if SANITIZED else None
    peaks = {}
    with tempfile.TemporaryDirectory() as d:
        for size in (300, 1 << 20):
            path = os.path.join(d, f"weave_db_{size}")
            oversized_users_source(path, fine, size)
            code, err, peaks[size] = run_bounded(
                ["migrate", "--dry-run", "--from", f"sqlite:{path}"], 1 << 30, env)
            assert code == 1, (code, err)
            assert err.count("NOT migrated: the user name is longer than 254 bytes") == 16, \
                err[-3000:]
            assert err.count("NOT migrated: the password hash is longer than 255 bytes") == 8, \
                err[-3000:]
        assert peaks[1 << 20] - peaks[300] < 16 * 1024, peaks
        expect(1, "migrate", "--from", f"sqlite:{path}")
    check_legacy_login(fine, "big-ok-password", {})
    run("user", "delete", fine, "--yes")


def test_migrate_two_weave_minimal_files_of_one_name_are_both_refused():
    """Two NAME.HASH files (weave-minimal made one per password it was given)
    cannot be told apart: neither is migrated, and SQLite's own tables in a
    user's file (ANALYZE's sqlite_stat1) are no collection."""
    tag = secrets.token_hex(3)
    twice, fine = f"twice{tag}", f"once{tag}"
    with tempfile.TemporaryDirectory() as d:
        wm_write(wm_path(d, twice, "first-password"), "tabs",
                 [{"id": "t1", "modified": 1265402837.5, "payload": "one"}])
        wm_write(wm_path(d, twice, "second-password"), "tabs",
                 [{"id": "t2", "modified": 1265402838.5, "payload": "two"}])
        wm_write(wm_path(d, fine, "once-password"), "prefs",
                 [{"id": "p", "modified": 1265402837.5, "payload": "pref"}])
        db = sqlite3.connect(wm_path(d, fine, "once-password"))
        db.execute("ANALYZE")
        db.commit()
        assert db.execute("select count(*) from sqlite_master where name = 'sqlite_stat1'"
                          ).fetchone()[0] == 1
        db.close()
        p = expect(1, "migrate", "--from", f"sqlite:{d}")
    assert p.stderr.count(f"{twice}: NOT migrated: its name has 2 files") == 2, p.stderr
    assert "migrated 1 accounts and 1 records" in p.stdout, p.stdout
    expect(1, "user", "show", twice)
    check_legacy_login(fine, "once-password",
                       {"prefs": {"p": ("pref", None, "1265402837.50", None)}})
    run("user", "delete", fine, "--yes")


def test_migrate_refuses_records_no_client_could_read_and_prints_source_bytes_safely():
    tag = secrets.token_hex(3)
    slash, latin, future, fine = f"slash{tag}", f"latin{tag}", f"future{tag}", f"clean{tag}"
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "weave_db")
        db = sqlite3.connect(path)
        db.executescript(FSYNCMS_SQLITE_SCHEMA)
        # Stamped in 2100: the account's clock would start there.
        db.execute("insert into wbo (username, id, collection, modified, payload) values "
                   "(?, 'late', 'tabs', 4102444800.5, 'p')", (future,))
        for n in (slash, latin, future, fine, "bad\x1b[2Jname"):
            db.execute("insert into users values (?, ?)", (n, md5(n + "-password")))
        rows = [
            (slash, "a/b", None, "p"),          # no GET or DELETE could name it
            (latin, "x", None, b"caf\xe9"),     # Latin-1: no JSON listing could carry it
            (fine, "f", "", "ok"),              # an empty parentid is none
            ("\x1b]0;owned\x07evil", "o", None, "p"),   # an orphan whose name is escapes
        ]
        for user, rid, parent, payload in rows:
            db.execute("insert into wbo (username, id, collection, parentid, modified, payload)"
                       " values (?, ?, 'bookmarks', ?, 1265402837.12, ?)",
                       (user, rid, parent, payload))
        db.commit()
        db.close()
        p = expect(1, "migrate", "--from", f"sqlite:{path}")
    assert f"{slash}: NOT migrated" in p.stderr and "the id is not 1-64 printable" in p.stderr, \
        p.stderr
    assert f"{latin}: NOT migrated" in p.stderr and "a payload is not UTF-8" in p.stderr, \
        p.stderr
    assert f"{future}: NOT migrated" in p.stderr and "more than a day in the future" in \
        p.stderr, p.stderr
    # The source's bytes reach the terminal as text, never as its commands.
    assert "\x1b" not in p.stderr + p.stdout and "\x07" not in p.stderr, p.stderr
    assert "'?]0;owned?evil', who is not in the users table" in p.stderr, p.stderr
    assert "bad?[2Jname: NOT migrated" in p.stderr, p.stderr
    assert "migrated 1 accounts and 1 records" in p.stdout, p.stdout
    for name in (slash, latin, future):
        expect(1, "user", "show", name)
    check_legacy_login(fine, fine + "-password",
                       {"bookmarks": {"f": ("ok", None, "1265402837.12", None)}})
    run("user", "delete", fine, "--yes")


def test_migrate_finds_its_tables_among_many_others():
    """A database the old server shared with other applications: its users and
    wbo tables after 300 others are found, and the others are never read."""
    tag = secrets.token_hex(3)
    name = f"shared{tag}"
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "weave_db")
        db = sqlite3.connect(path)
        db.executescript("".join(f"create table app_{i} (x);" for i in range(300)))
        db.executescript(FSYNCMS_SQLITE_SCHEMA)
        db.execute("insert into users values (?, ?)", (name, md5("shared-password")))
        db.execute("insert into wbo (username, id, collection, modified, payload) values "
                   "(?, 'm', 'meta', 1265402837.12, 'global')", (name,))
        db.commit()
        db.close()
        p = expect(0, "migrate", "--from", f"sqlite:{path}")
    assert "migrated 1 accounts and 1 records" in p.stdout, p.stdout
    check_legacy_login(name, "shared-password",
                       {"meta": {"m": ("global", None, "1265402837.12", None)}})
    run("user", "delete", name, "--yes")


def test_migrate_an_account_is_one_transaction_whatever_the_source_collation():
    """wbo.username declared NOCASE: "Bob" and "bob" rows would come
    interleaved; Bob's bad record must still roll back all of Bob."""
    tag = secrets.token_hex(3)
    upper, lower = f"Bob{tag}", f"bob{tag}"
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "weave_db")
        db = sqlite3.connect(path)
        db.executescript(FSYNCMS_SQLITE_SCHEMA.replace(
            "create table wbo (username text,", "create table wbo (username text collate nocase,"))
        for n in (upper, lower):
            db.execute("insert into users values (?, ?)", (n, md5("nocase-password")))
        for user, rid, coll in ((upper, "good", "tabs"), (lower, "x", "tabs"),
                                (upper, "bad", "not a collection")):
            db.execute("insert into wbo (username, id, collection, modified, payload) values "
                       "(?, ?, ?, 1265402837.12, 'p')", (user, rid, coll))
        db.commit()
        db.close()
        p = expect(1, "migrate", "--from", f"sqlite:{path}")
    assert f"{upper.lower()}: NOT migrated" in p.stderr, p.stderr
    assert "migrated 0 accounts" in p.stdout, p.stdout
    expect(1, "user", "show", upper.lower())     # nothing of it stayed


def test_migrate_large_records_fit_the_targets_packet_limit():
    """Five 4 MiB payloads (20 MiB) of one account: inserted in batches that
    each fit max_allowed_packet (16 MiB on the stack), not refused whole."""
    tag = secrets.token_hex(3)
    name = f"large{tag}"
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "weave_db")
        db = sqlite3.connect(path)
        db.executescript(FSYNCMS_SQLITE_SCHEMA)
        db.execute("insert into users values (?, ?)", (name, md5("large-password")))
        for i in range(5):
            db.execute("insert into wbo (username, id, collection, modified, payload) values "
                       "(?, ?, 'history', 1265402837.12, ?)", (name, f"r{i}", "a" * (4 << 20)))
        db.commit()
        db.close()
        p = expect(0, "migrate", "--from", f"sqlite:{path}")
    assert "migrated 1 accounts and 5 records" in p.stdout, p.stdout
    assert scalar("SELECT @@max_allowed_packet") == str(16 << 20)
    assert admin_json("user", "show", name)["records"] == 5
    run("user", "delete", name, "--yes")


def test_migrate_source_password_never_on_the_command_line():
    legacy = LegacyMySQL(FSYNCMS_SCHEMA)
    try:
        with_pw = legacy.url().replace("@", f":{legacy.password}@", 1)
        p = expect(2, "migrate", "--from", with_pw, "--dry-run")
        assert "--password-file" in p.stderr and "WEAVE_MIGRATE_PASSWORD" in p.stderr, p.stderr
        assert legacy.password not in p.stderr + p.stdout
        with tempfile.TemporaryDirectory() as d:
            fifo = os.path.join(d, "pw")
            os.mkfifo(fifo, 0o600)
            proc = subprocess.Popen([ADMIN, "--config", CONFIG, "migrate", "--from",
                                     legacy.url(), "--password-file", fifo, "--dry-run"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                # It waits on the pipe: what every user of the machine can see now.
                cmdline = b""
                for _ in range(100):
                    assert proc.poll() is None, proc.communicate()
                    with open(f"/proc/{proc.pid}/cmdline", "rb") as f:
                        cmdline = f.read()
                    if legacy.user.encode() in cmdline:
                        break
                    time.sleep(0.05)
                assert b"migrate" in cmdline and legacy.user.encode() in cmdline, cmdline
                assert legacy.password.encode() not in cmdline, cmdline
                ps = subprocess.run(["ps", "-eo", "args"], capture_output=True,
                                    text=True).stdout
                assert legacy.password not in ps
                with open(fifo, "w") as f:
                    f.write(legacy.password + "\n")
                out, err = proc.communicate(timeout=60)
            finally:
                if proc.poll() is None:
                    proc.kill()
            assert proc.returncode == 0, err
            assert "dry run: would migrate 0 accounts" in out, out
    finally:
        legacy.drop()


def test_migrate_tls_to_the_source():
    legacy = LegacyMySQL(FSYNCMS_SCHEMA)
    port = legacy.port
    base = f"mysql://{legacy.user}@127.0.0.1:{port}/{legacy.db}"
    try:
        # The stack's MariaDB has no TLS: asking for it fails, never falls back.
        for q in ("?tls=on", "?tls=verify"):
            p = expect(1, "migrate", "--from", base + q, "--dry-run", env=legacy.env())
            assert "SSL" in p.stderr or "TLS" in p.stderr, p.stderr
        expect(0, "migrate", "--from", base + "?tls=off", "--dry-run", env=legacy.env())
        expect(2, "migrate", "--from", base + "?tls=maybe", "--dry-run", env=legacy.env())
        # Another host (by address) gets TLS with a verified certificate unless told.
        other = f"mysql://{legacy.user}@[::ffff:127.0.0.1]:{port}/{legacy.db}"
        p = expect(1, "migrate", "--from", other, "--dry-run", env=legacy.env())
        assert "TLS with a verified certificate is required" in p.stderr, p.stderr
        expect(0, "migrate", "--from", other + "?tls=off", "--dry-run", env=legacy.env())
    finally:
        legacy.drop()


def test_migrate_help_man_page_and_completion_name_every_format():
    p = expect(0, "migrate", "--help")
    for word in ("fsyncms", "php", "weave-minimal", "WEAVE_MIGRATE_PASSWORD", "tls="):
        assert word in p.stdout, (word, p.stdout)
    assert max(map(len, p.stdout.splitlines())) < 80, p.stdout
    expect(2, "migrate", "--from", "sqlite:/x", "--format", "oracle")
    page = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools", "weave-admin.8")
    with open(page) as f:
        man = f.read()
    assert "weave\\-minimal" in man and "WEAVE_MIGRATE_PASSWORD" in man
    script = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools",
                          "weave-admin.bash-completion")
    cmd = (f"source {script}; COMP_WORDS=(weave-admin migrate --format ''); COMP_CWORD=3; "
           "_weave_admin; printf '%s\\n' \"${COMPREPLY[@]}\"")
    out = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=30)
    assert set(out.stdout.split()) == {"fsyncms", "php", "weave-minimal", "minimal"}, out


class TlsMariaDB:
    """A private MariaDB with TLS (a CA and a server certificate for
    127.0.0.1 made here), started and stopped by the test, FSyncMS's tables
    in it and a SELECT-only user."""

    def __init__(self, d):
        self.dir, self.user, self.password = d, "tlsreader", secrets.token_hex(12)
        self.sock = os.path.join(d, "s.sock")
        self.ca = os.path.join(d, "ca.pem")
        self._certs()
        data = os.path.join(d, "data")
        subprocess.run(["mariadb-install-db", "--no-defaults", "--user=root",
                        f"--datadir={data}", "--auth-root-authentication-method=socket",
                        "--skip-test-db"], check=True, capture_output=True, timeout=120)
        with socket_free_port() as port:
            self.port = port
        self.proc = subprocess.Popen(
            ["mariadbd", "--no-defaults", "--user=root", f"--datadir={data}",
             f"--socket={self.sock}", f"--pid-file={d}/m.pid", f"--log-error={d}/m.log",
             "--bind-address=127.0.0.1", f"--port={self.port}", "--skip-name-resolve",
             "--innodb-buffer-pool-size=16M", "--skip-log-bin",
             f"--ssl-ca={self.ca}", f"--ssl-cert={d}/server.pem", f"--ssl-key={d}/server.key"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(600):
            if subprocess.run(["mariadb-admin", "--no-defaults", f"--socket={self.sock}",
                               "--user=root", "--connect-timeout=2", "ping"],
                              capture_output=True).returncode == 0:
                break
            assert self.proc.poll() is None, open(f"{d}/m.log").read()[-2000:]
            time.sleep(0.1)
        self.sql(f"CREATE DATABASE legacy; USE legacy; {FSYNCMS_SCHEMA}"
                 f"CREATE USER '{self.user}'@'127.0.0.1' IDENTIFIED BY '{self.password}';"
                 f"GRANT SELECT ON legacy.* TO '{self.user}'@'127.0.0.1';")

    def _certs(self):
        d = self.dir

        def ssl(*args):
            subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)
        ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
            "/CN=test migrate CA", "-keyout", f"{d}/ca.key", "-out", self.ca)
        ssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", f"{d}/server.key", "-out", f"{d}/server.csr")
        with open(f"{d}/ext", "w") as f:
            f.write("subjectAltName=IP:127.0.0.1\n")
        ssl("x509", "-req", "-in", f"{d}/server.csr", "-CA", self.ca, "-CAkey", f"{d}/ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", f"{d}/ext", "-out", f"{d}/server.pem")

    def sql(self, text):
        p = subprocess.run(["mariadb", "--no-defaults", f"--socket={self.sock}", "-u", "root"],
                           input=text, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr

    def url(self, query):
        return f"mysql://{self.user}@127.0.0.1:{self.port}/legacy?{query}"

    def stop(self):
        subprocess.run(["mariadb-admin", "--no-defaults", f"--socket={self.sock}",
                        "--user=root", "shutdown"], capture_output=True, timeout=60)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class socket_free_port:
    """A port nobody listens on (bound and released)."""

    def __enter__(self):
        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        return self.s.getsockname()[1]

    def __exit__(self, *exc):
        self.s.close()


def test_migrate_over_tls_checks_the_source_certificate():
    tag = secrets.token_hex(3)
    name, pw = f"tls{tag}", "tls-legacy-password"
    with tempfile.TemporaryDirectory() as d:
        db = TlsMariaDB(d)
        try:
            db.sql(f"USE legacy; INSERT INTO users VALUES ('{name}', '{md5(pw)}');"
                   "INSERT INTO wbo (username, id, collection, modified, payload) VALUES "
                   f"('{name}', 'k', 'crypto', 1265402837.12, 'keys');")
            env = {"WEAVE_MIGRATE_PASSWORD": db.password}
            # Not signed by a CA the system trusts: refused.
            p = expect(1, "migrate", "--from", db.url("tls=verify"), "--dry-run", env=env)
            assert "cannot connect" in p.stderr and "certificate" in p.stderr.lower(), p.stderr
            # Encrypted without a check, and encrypted and checked against its CA.
            expect(0, "migrate", "--from", db.url("tls=on"), "--dry-run", env=env)
            p = expect(0, "migrate", "--from", db.url(f"tls=verify&ca={db.ca}"), env=env)
            assert "migrated 1 accounts and 1 records" in p.stdout, p.stdout
        finally:
            db.stop()
    check_legacy_login(name, pw, {"crypto": {"k": ("keys", None, "1265402837.12", None)}})
    run("user", "delete", name, "--yes")
