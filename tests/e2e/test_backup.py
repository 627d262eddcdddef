"""weave-admin backup and restore (docs/backup.md), end to end.

Accounts are made and filled through the API on the main stack, backed up
while a client writes, and restored onto fresh databases of the stack's
MariaDB; a second Apache (loadkit.second_apache) serves the restored copy,
so what is checked is what a client of the restored server would see.
Every second server and database made here is removed at exit.
"""

import atexit
import gzip
import json
import os
import secrets
import shutil
import subprocess
import tempfile
import threading
import time

import loadkit
import weave
from weave import new_user, request

TMP = tempfile.mkdtemp(prefix="weave-backup-test.")
atexit.register(shutil.rmtree, TMP, True)      # backups hold password hashes
_servers = {}


def run(conf, *args):
    """weave-admin --config CONF ARGS...: the CompletedProcess."""
    return subprocess.run([weave.ADMIN, "--config", conf, *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def ok(conf, *args):
    p = run(conf, *args)
    assert p.returncode == 0, (args, p.stdout, p.stderr)
    return p


def show(conf, name):
    return json.loads(ok(conf, "user", "show", name, "--json").stdout)


def fresh_database(tag):
    """A new empty database with the weave schema; returns its name."""
    db = f"weave_bk_{tag}_{secrets.token_hex(3)}"
    weave.sql(f"CREATE DATABASE {db}")
    for host in ("127.0.0.1", "localhost"):
        weave.sql(f"GRANT ALL ON {db}.* TO 'weave'@'{host}'")
    atexit.register(weave.sql, f"DROP DATABASE IF EXISTS {db}")
    return db


def config_for(db):
    """A copy of the stack's weave.conf on database db (its own cache file)."""
    path = os.path.join(TMP, f"{db}.conf")
    with open(weave.CONFIG, encoding="utf-8") as f:
        kept = [l for l in f if l.split("=", 1)[0].strip() not in ("db_name",
                                                                   "account_cache_file")]
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(kept)
        f.write(f"db_name = {db}\naccount_cache_file = {TMP}/{db}.cache\n")
    ok(path, "db", "init")
    return path


def server_for(db):
    """A second Apache serving database db, keeping account rows for 300 s
    (so a row kept past a restore would show). (port, its weave.conf)."""
    name = f"srv-{db}"
    # account_cache_file unset: the default, named after the database.
    port, apache = loadkit.second_apache(name, {
        "db_name": db, "account_cache_file": None, "account_cache_seconds": 300})
    atexit.register(loadkit.stack_lib_run, 'stack_apache_stop "$1"', apache)
    conf = os.path.join(weave.STACK_DIR, name, "weave.conf")
    ok(conf, "db", "init")
    # The default file is in /dev/shm, named after this run's database:
    # removed afterwards, or every run would leave one (about 32 MiB).
    atexit.register(remove_cache_file, conf)
    return port, conf


def remove_cache_file(conf):
    p = run(conf, "cache", "--json")
    if p.returncode == 0:
        path = json.loads(p.stdout)["file"]
        for f in (path, path + ".changes", path + ".metrics"):
            if os.path.exists(f):
                os.remove(f)


def call(method, user, password, path, body=None, port=None):
    return request(method, f"1.0/{user}/{path}", body=body, user=user, password=password,
                   port=port)


def everything(user, password, port=None):
    """info/collections and every record of every collection, as the API
    gives them (raw bytes, so byte-identical means identical)."""
    r = call("GET", user, password, "info/collections", port=port)
    assert r.status == 200, r
    out = {"info/collections": r.body}
    for coll in sorted(r.json()):
        g = call("GET", user, password, f"storage/{coll}?full=1&sort=index", port=port)
        assert g.status == 200, g
        out[coll] = sorted(json.dumps(o, sort_keys=True) for o in json.loads(g.body))
        out[coll + " raw ids"] = call("GET", user, password, f"storage/{coll}",
                                      port=port).body
    return out


def populate():
    """Accounts of every kind, filled through the API. name -> password."""
    accounts = {}
    a, pa = new_user("bkfull")
    accounts[a] = pa
    recs = [{"id": f"b{i}", "payload": json.dumps({"n": i, "t": "é\u2603"}),
             "sortindex": i * 7 - 20, "parentid": "menu", "predecessorid": f"b{i - 1}"}
            for i in range(40)]
    recs.append({"id": "short", "payload": "gone soon", "ttl": 3600})
    assert call("POST", a, pa, "storage/bookmarks", recs).status == 200
    assert call("PUT", a, pa, "storage/meta/global", {"payload": "{\"v\":5}"}).status == 200
    # Overwrites and a delete: record history to carry over.
    assert call("PUT", a, pa, "storage/bookmarks/b3", {"payload": "second"}).status == 200
    assert call("DELETE", a, pa, "storage/bookmarks/b4").status == 200
    weave.admin("user", "email", a, "full@example.org")
    weave.admin("user", "quota", a, "20000")

    b, pb = new_user("bkoff")
    accounts[b] = pb
    assert call("PUT", b, pb, "storage/tabs/t1", {"payload": "tab"}).status == 200
    weave.admin("user", "quota", b, "0")
    weave.admin("user", "disable", b)

    c, pc = new_user("bknode")
    accounts[c] = pc
    assert call("PUT", c, pc, "storage/prefs/p", {"payload": "x" * 5000}).status == 200
    weave.admin("user", "node", c, "https://node2.example.org/")
    weave.admin("user", "alert", c, '{"code":"soft-eol","message":"moving"}')
    return accounts


def writer(name, password, stop, written):
    """PUTs w0, w1, ... one at a time until stop is set."""
    i = 0
    while not stop.is_set():
        r = call("PUT", name, password, f"storage/forms/w{i}", {"payload": f"w{i}"})
        assert r.status == 200, r
        written.append(i)
        i += 1


def test_backup_while_writing_restores_onto_a_fresh_database():
    accounts = populate()
    w, pw = new_user("bkwriter")
    accounts[w] = pw
    names = sorted(accounts)
    stop, written = threading.Event(), []
    t = threading.Thread(target=writer, args=(w, pw, stop, written))
    t.start()
    try:
        while len(written) < 5:
            time.sleep(0.05)
        target = os.path.join(TMP, "server.wbk")
        p = ok(weave.CONFIG, "backup", target, "--json")
        summary = json.loads(p.stdout)
        time.sleep(0.3)
    finally:
        stop.set()
        t.join()
    assert summary["accounts"] >= len(accounts) and summary["records"] > 40, summary
    assert oct(os.stat(target).st_mode & 0o777) == "0o600"     # it holds password hashes
    assert not [f for f in os.listdir(TMP) if f.startswith("server.wbk.")]   # no temp left

    db = fresh_database("two")
    port, conf = server_for(db)
    p = ok(conf, "restore", target, "--user", ",".join(names), "--json")
    assert json.loads(p.stdout)["accounts"] == len(names), p.stdout

    for name in names:
        mine = show(weave.CONFIG, name) if name != w else None
        restored = show(conf, name)
        if mine is not None:
            # E-mail, quota, status, node, alert, counts, timestamps: all equal.
            assert restored == mine, (name, restored, mine)
    b = next(n for n in names if n.startswith("bkoff"))
    for name in names:
        r = call("GET", name, accounts[name], "info/collections", port=port)
        if name == b:
            src = call("GET", name, accounts[name], "info/collections")
            assert r.status == src.status == 401, (r, src)   # still disabled
            continue
        assert r.status == 200, (name, r)                    # the same password opens
        assert call("GET", name, accounts[name] + "x", "info/collections",
                    port=port).status == 401
        if name != w:
            assert everything(name, accounts[name], port) == everything(name, accounts[name])
    # The writer's copy is one moment of it: w0..wk with no gap, and the
    # account's clock is the newest of them.
    ids = sorted(int(i[1:]) for i in call("GET", w, pw, "storage/forms", port=port).json())
    assert ids == list(range(len(ids))) and 5 <= len(ids) <= len(written), (ids, len(written))
    newest = call("GET", w, pw, f"storage/forms/w{ids[-1]}", port=port).json()["modified"]
    assert show(conf, w)["last_write"] == newest
    assert show(conf, w)["records"] == len(ids)
    # A write to the restored copy is stamped after everything restored.
    r = call("PUT", w, pw, "storage/forms/after", {"payload": "a"}, port=port)
    assert r.status == 200 and float(r.body) > newest, r

    # The restored server backed up whole (with a node) onto a third database.
    ok(conf, "node", "add", "https://node3.example.org/", "--capacity", "50")
    again = os.path.join(TMP, "two.wbk")
    ok(conf, "backup", again)
    db3 = fresh_database("three")
    conf3 = config_for(db3)
    p = ok(conf3, "restore", again, "--dry-run")
    assert "is whole" in p.stdout and "4 accounts to restore" in p.stdout, p.stdout
    assert json.loads(ok(conf3, "user", "list", "--json").stdout) == []
    ok(conf3, "restore", again)
    for cmd in (("stats", "--json"), ("node", "list", "--json"), ("user", "list", "--json")):
        assert json.loads(ok(conf3, *cmd).stdout) == json.loads(ok(conf, *cmd).stdout), cmd
    for name in names:
        assert show(conf3, name) == show(conf, name)
    # History came along: the record b3 was overwritten once on the source.
    a = next(n for n in names if n.startswith("bkfull"))
    hist = ok(conf3, "user", "history", a, "--json").stdout
    assert json.loads(hist) == json.loads(ok(weave.CONFIG, "user", "history", a,
                                             "--json").stdout)


def damaged_copies(good):
    """(label, bytes, the message restore must give) for a whole file."""
    raw = open(good, "rb").read()
    lines = gzip.decompress(raw).split(b"\n")
    altered = b"\n".join(l.replace(b'"payload":"tab"', b'"payload":"tac"') for l in lines)
    assert altered != b"\n".join(lines)
    flipped = bytearray(raw)
    flipped[len(raw) // 2] ^= 0x40
    return [
        ("cut in half", raw[:len(raw) // 2], "damaged or truncated"),
        ("without its trailer", gzip.compress(b"\n".join(lines[:-2]) + b"\n"), "truncated"),
        ("a flipped byte", bytes(flipped), "damaged"),
        ("a changed payload", gzip.compress(altered), "checksum does not match"),
        ("a line dropped", gzip.compress(b"\n".join(lines[:3] + lines[4:])), "checksum"),
        ("not a backup", gzip.compress(b'{"collection":"c","id":"x","modified":1}\n'),
         "not a line of a weave-admin backup"),
        ("not gzip", b"hello\n", "not a weave-admin backup"),
        ("empty", b"", "truncated"),
    ]


def test_a_damaged_backup_is_refused_and_writes_nothing():
    name, pw = new_user("bkdmg")
    assert call("PUT", name, pw, "storage/tabs/t", {"payload": "tab"}).status == 200
    for i in range(30):
        call("PUT", name, pw, f"storage/forms/f{i}", {"payload": secrets.token_hex(200)})
    good = os.path.join(TMP, "dmg.wbk")
    ok(weave.CONFIG, "backup", good, "--user", name)
    conf = config_for(fresh_database("dmg"))
    for label, data, message in damaged_copies(good):
        path = os.path.join(TMP, "damaged.wbk")
        with open(path, "wb") as f:
            f.write(data)
        p = run(conf, "restore", path)
        assert p.returncode == 1, (label, p)
        assert message in p.stderr and "nothing was written" in p.stderr, (label, p.stderr)
        assert json.loads(ok(conf, "user", "list", "--json").stdout) == [], label
        assert json.loads(ok(conf, "stats", "--json").stdout)["records"] == 0, label
    ok(conf, "restore", good)
    assert show(conf, name)["records"] == 31


def test_restore_over_a_running_server_refuses_then_replaces_and_drops_kept_rows():
    name, pw = new_user("bkrun")
    assert call("PUT", name, pw, "storage/tabs/t", {"payload": "old"}).status == 200
    first = os.path.join(TMP, "run1.wbk")
    ok(weave.CONFIG, "backup", first, "--user", name)
    db = fresh_database("run")
    port, conf = server_for(db)
    ok(conf, "restore", first)
    # The second server now keeps the row, the verified password and the
    # info/collections answer.
    for _ in range(3):
        assert call("GET", name, pw, "info/collections", port=port).status == 200
    old_info = call("GET", name, pw, "info/collections", port=port).body

    new_pw = pw + "-new"
    weave.admin("user", "passwd", name, "--password-file", "-", input=new_pw + "\n")
    weave.PASSWORDS.append(new_pw)
    assert call("PUT", name, new_pw, "storage/tabs/t", {"payload": "new"}).status == 200
    second = os.path.join(TMP, "run2.wbk")
    ok(weave.CONFIG, "backup", second, "--user", name)

    p = run(conf, "restore", second)
    assert p.returncode == 1 and "exist already" in p.stderr and name in p.stderr, p
    assert "--replace" in p.stderr and "nothing was written" in p.stderr, p.stderr
    assert call("GET", name, pw, "storage/tabs/t", port=port).json()["payload"] == "old"

    started = time.monotonic()
    ok(conf, "restore", second, "--replace")
    # Well inside the 300 s the server keeps rows for: nothing old is served.
    assert call("GET", name, pw, "info/collections", port=port).status == 401
    r = call("GET", name, new_pw, "storage/tabs/t", port=port)
    assert r.status == 200 and r.json()["payload"] == "new", r
    assert call("GET", name, new_pw, "info/collections", port=port).body != old_info
    assert time.monotonic() - started < 60


def test_backup_and_restore_usage_errors():
    for cmd in ("backup", "restore"):
        assert run(weave.CONFIG, cmd).returncode == 2
        p = run(weave.CONFIG, cmd, "-")
        assert p.returncode == 2 and "FILE" in p.stderr, p
    target = os.path.join(TMP, "exists.wbk")
    open(target, "w").close()
    p = run(weave.CONFIG, "backup", target)
    assert p.returncode == 1 and "--force" in p.stderr, p
    missing = os.path.join(TMP, "ghost.wbk")
    p = run(weave.CONFIG, "backup", missing, "--user", "nobody-" + secrets.token_hex(3))
    assert p.returncode == 1 and "no such user" in p.stderr, p
    assert not os.path.exists(missing) and not [f for f in os.listdir(TMP)
                                                if f.startswith("ghost.wbk.")]
    p = run(weave.CONFIG, "restore", os.path.join(TMP, "nonexistent.wbk"))
    assert p.returncode == 1 and "cannot open" in p.stderr, p
    name, _ = new_user("bkusage")
    good = os.path.join(TMP, "usage.wbk")
    ok(weave.CONFIG, "backup", good, "--user", name)
    p = run(weave.CONFIG, "restore", good, "--user", "someone-else")
    assert p.returncode == 1 and "holds no account someone-else" in p.stderr, p
    for cmd in ("backup", "restore"):
        h = ok(weave.CONFIG, cmd, "--help").stdout
        assert "--user" in h and "--users-file" in h, h


def hand_made(path, account, records):
    """A backup file written from docs/backup.md alone: header, lines,
    trailer with the counts and the SHA-256 of everything before it."""
    import hashlib
    lines = [{"weave_backup": 1, "schema": 1, "server": "by hand", "created": 1,
              "created_utc": "1970-01-01T00:00:01Z", "database": "x", "scope": "accounts",
              "accounts": 1},
             {"t": "account", **account}] + [{"t": "record", **r} for r in records]
    body = b"".join(json.dumps(l, separators=(",", ":")).encode() + b"\n" for l in lines)
    trailer = {"t": "end", "accounts": 1, "nodes": 0, "records": len(records),
               "versions": 0, "writes": 0, "usages": 0,
               "sha256": hashlib.sha256(body).hexdigest()}
    with open(path, "wb") as f:
        f.write(gzip.compress(body + json.dumps(trailer).encode() + b"\n"))


def test_a_hand_made_backup_is_checked_like_client_input():
    name, pw = new_user("bkhand")
    stored = weave.sql(f"SELECT password_hash FROM users WHERE username = '{name}'")[0][0]
    now = int(time.time() * 100)
    account = {"username": name + "c", "password_hash": stored, "email": None, "status": 1,
               "quota_kb": None, "node": None, "alert": None, "last_write": 0, "created": 5}
    record = {"collection": "forms", "id": "f", "parentid": None, "predecessorid": None,
              "sortindex": None, "modified": now - 1000, "expires": None, "payload": "p"}
    conf = config_for(fresh_database("hand"))
    path = os.path.join(TMP, "hand.wbk")
    for key, value, why in (("id", "a/b", "printable ASCII"),
                            ("sortindex", 10 ** 9, "out of range"),
                            ("modified", now + 3600 * 100, "ahead of this server's clock")):
        hand_made(path, account, [{**record, key: value}])
        p = run(conf, "restore", path)
        assert p.returncode == 1 and f':3: "{key}"' in p.stderr and why in p.stderr, p
        assert json.loads(ok(conf, "user", "list", "--json").stdout) == []
    for key, value in (("username", "Upper"), ("email", "not-an-address"),
                       ("node", "ftp://x/"), ("status", 2), ("created", 10 ** 12),
                       # KDF parameters no login may run: 1 GiB scrypt, bcrypt cost 31.
                       ("password_hash", "$scrypt$ln=20,r=8,p=1$c2FsdHNhbHQ$"
                                         "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
                       ("password_hash", "$2b$31$" + "a" * 53)):
        hand_made(path, {**account, key: value}, [record])
        p = run(conf, "restore", path)
        assert p.returncode == 1 and f':2: "{key}"' in p.stderr, (key, p.stderr)
    # A clock below its records: the restored account's is the newest record's.
    hand_made(path, account, [record])
    ok(conf, "restore", path)
    got = show(conf, name + "c")
    assert got["last_write"] == round((now - 1000) / 100, 2) and got["created"] == 5, got


def test_a_users_file_chooses_the_accounts_of_a_backup_and_a_restore():
    names = [new_user("bkfile")[0] for _ in range(3)]
    listing = os.path.join(TMP, "names.txt")
    with open(listing, "w") as f:
        f.write(f"# moving to the new server\n{names[0]}\n\n  {names[1].upper()}  \n")
    path = os.path.join(TMP, "file.wbk")
    summary = json.loads(ok(weave.CONFIG, "backup", path, "--users-file", listing,
                            "--json").stdout)
    assert summary["accounts"] == 2 and summary["nodes"] == 0, summary
    conf = config_for(fresh_database("file"))
    p = ok(conf, "restore", path, "--user", names[1], "--json")
    assert json.loads(p.stdout)["accounts"] == 1, p.stdout
    listed = [u["username"] for u in json.loads(ok(conf, "user", "list", "--json").stdout)]
    assert listed == [names[1]], listed
    p = run(conf, "restore", path, "--user", names[2])
    assert p.returncode == 1 and f"holds no account {names[2]}" in p.stderr, p
