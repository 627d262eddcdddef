"""Storage on two databases (docs/shards.md): the stack's own, which is
also the account database, and a storage node "n2" on a second MariaDB
server of its own, served by a second Apache whose weave.conf names it.

What must hold: an account's records live on its node's database only;
'weave-admin user move' under live writes loses no acknowledged write and
a reader following newer= misses nothing across the switch; the account
answers 503 + Retry-After only while its last changes are copied; a mover
killed (-9) in any phase is finished by running it again; 'node drain'
empties a node; deleting an account deletes its records on its node."""

import atexit
import contextlib
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import threading
import time

import loadkit
import weave
from weave import request

_shard = {}


def shard():
    """Set up once: the second MariaDB, the config naming it, its schema,
    and the Apache serving both. Returns the dict of what tests need."""
    if _shard:
        return _shard
    stack = weave.STACK_DIR
    assert stack, "WEAVE_STACK_DIR is not set (tests/run sets it)"
    dbdir = os.path.join(stack, "node2-db")
    shutil.rmtree(dbdir, ignore_errors=True)
    dbport = loadkit.stack_lib_run("stack_free_port").strip()
    loadkit.stack_lib_run('stack_mariadb_start "$1" "$2"', dbdir, dbport)
    atexit.register(loadkit.stack_lib_run, 'stack_mariadb_stop "$1"', dbdir)
    with open(os.path.join(dbdir, "db-password")) as f:
        dbpw = f.read().strip()
    port = int(loadkit.stack_lib_run('stack_free_port "$1"', dbport).strip())
    node_url = f"http://localhost:{port}{weave.BASE_PATH}"
    settings = {
        "node.n2.url": node_url,
        "node.n2.db_host": "127.0.0.1",
        "node.n2.db_port": dbport,
        "node.n2.db_password": dbpw,
        "retry_after": "7",
    }
    port, apache = loadkit.second_apache("shards", settings, port=port)
    atexit.register(loadkit.stack_lib_run, 'stack_apache_stop "$1"', apache)
    _shard.update(port=port, node=node_url, dbdir=dbdir,
                  config=os.path.join(stack, "shards", "weave.conf"))
    admin("db", "init")
    return _shard


def admin(*args, check=True, input=None):
    cmd = [weave.ADMIN, "--config", shard()["config"], *map(str, args)]
    p = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=180)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {p.returncode}\n{p.stdout}{p.stderr}")
    return p


def node_sql(statement):
    """Rows of statement on node n2's database (as its MariaDB root)."""
    cmd = ["mariadb", "--no-defaults", f"--socket={shard()['dbdir']}/mysqld.sock",
           "--user=root", "--batch", "--skip-column-names", "weave", "-e", statement]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, (statement, p.stderr)
    return [line.split("\t") for line in p.stdout.splitlines()]


def records_on(place, user_id):
    run = node_sql if place == "n2" else weave.sql
    return int(run(f"SELECT COUNT(*) FROM wbo WHERE user_id = {user_id}")[0][0])


def new_user(prefix, node=None):
    name, pw = weave.new_user(prefix)
    if node is not None:
        admin("user", "node", name, node)
    uid = int(weave.sql(f"SELECT id FROM users WHERE username = '{name}'")[0][0])
    return name, pw, uid


def call(method, user, pw, path, body=None):
    return request(method, f"1.1/{user}/{path}", body=body, user=user, password=pw,
                   port=shard()["port"])


def post(user, pw, coll, recs):
    return call("POST", user, pw, f"storage/{coll}", recs)


def stored(user, pw, coll):
    r = call("GET", user, pw, f"storage/{coll}?full=1")
    assert r.status == 200, (r.status, r.body)
    return {o["id"]: o["payload"] for o in r.json()}


class Load:
    """Writers that each post new records and overwrite one record of their
    own, remembering what was acknowledged (200 and listed in success), and
    a reader that follows newer= with each answer's X-Weave-Timestamp."""

    def __init__(self, user, pw, writers=3):
        self.user, self.pw = user, pw
        self.acked = {}          # id -> payload acknowledged last
        self.unavailable = []    # (status, Retry-After) of 503 answers
        self.other = []          # anything else that was not 200
        self.seen = {}           # what the reader saw: id -> payload
        self.stop = threading.Event()
        self.writers_done = threading.Event()
        self.lock = threading.Lock()
        self.writers = [threading.Thread(target=self.write, args=(k,), daemon=True)
                        for k in range(writers)]
        self.reader = threading.Thread(target=self.read, daemon=True)

    def __enter__(self):
        for t in self.writers + [self.reader]:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.writers:
            t.join(60)
        self.writers_done.set()  # the reader reads once more, then ends
        self.reader.join(60)

    def note(self, r):
        if r.status == 503:
            self.unavailable.append(r.headers.get("Retry-After"))
        elif r.status != 200:
            self.other.append((r.status, r.body[:200]))

    def write(self, k):
        n = 0
        while not self.stop.is_set():
            recs = [{"id": f"w{k}n{n}", "payload": f"new {k}.{n}"},
                    {"id": f"mine{k}", "payload": f"round {n}"}]
            r = post(self.user, self.pw, "load", recs)
            self.note(r)
            if r.status == 200:
                with self.lock:
                    for rec in recs:
                        if rec["id"] in r.json()["success"]:
                            self.acked[rec["id"]] = rec["payload"]
            else:
                time.sleep(0.05)
            n += 1

    def read(self):
        since = "0"
        while True:
            last = self.writers_done.is_set()
            r = call("GET", self.user, self.pw, f"storage/load?full=1&newer={since}")
            self.note(r)
            if r.status != 200:
                time.sleep(0.05)
                continue
            for o in r.json():
                self.seen[o["id"]] = o["payload"]
            since = r.headers.get("X-Weave-Timestamp")
            if last:
                return
            time.sleep(0.02)

    def check(self, final):
        assert not self.other, f"answers other than 200 and 503: {self.other[:5]}"
        assert all(ra for ra in self.unavailable), "a 503 without Retry-After"
        lost = {i: p for i, p in self.acked.items() if final.get(i) != p}
        assert not lost, f"{len(lost)} acknowledged writes lost or stale: {list(lost.items())[:5]}"
        assert self.acked, "no write was acknowledged"


def test_records_of_an_account_on_a_node_live_in_its_database():
    shard()
    here, here_pw, here_id = new_user("shhere")
    there, there_pw, there_id = new_user("shthere", shard()["node"])
    for user, pw in ((here, here_pw), (there, there_pw)):
        r = post(user, pw, "tabs", [{"id": f"r{i}", "payload": f"p{i}"} for i in range(5)])
        assert r.status == 200 and len(r.json()["success"]) == 5, (r.status, r.body)
        assert stored(user, pw, "tabs") == {f"r{i}": f"p{i}" for i in range(5)}
        r = call("GET", user, pw, "info/collections")
        assert r.status == 200 and "tabs" in r.json(), (r.status, r.body)
    assert (records_on("here", here_id), records_on("n2", here_id)) == (5, 0)
    assert (records_on("here", there_id), records_on("n2", there_id)) == (0, 5)
    # The write log and the account's last write: the node, and the account database.
    assert node_sql(f"SELECT COUNT(*) FROM write_log WHERE user_id = {there_id}") == [["1"]]
    last = weave.sql(f"SELECT last_write FROM users WHERE id = {there_id}")[0][0]
    assert int(last) > 0
    r = request("GET", f"user/1.0/{there}/node/weave")
    assert r.status == 200 and r.body.decode() == shard()["node"], (r.status, r.body)


def test_a_move_under_writes_loses_no_acknowledged_write():
    user, pw, uid = new_user("shmove")
    for start in range(0, 300, 100):  # max_post_records is 100
        r = post(user, pw, "load", [{"id": f"old{i}", "payload": f"old {i}"}
                                    for i in range(start, start + 100)])
        assert r.status == 200 and len(r.json()["success"]) == 100, (r.status, r.body)
    with Load(user, pw) as load:
        time.sleep(1)
        out = admin("user", "move", user, "--to", "n2", "--pause", "1500").stdout
        time.sleep(1)
    print(f"    {len(load.acked)} writes acknowledged, {len(load.unavailable)} answered 503")
    final = stored(user, pw, "load")
    load.check(final)
    assert all(final[f"old{i}"] == f"old {i}" for i in range(300))
    assert load.seen == final, "the reader following newer= missed records"
    assert load.unavailable, "no request met the frozen phase (the pause is 1.5 s)"
    assert set(load.unavailable) == {"7"}, load.unavailable
    assert "switched to" in out, out
    assert (records_on("here", uid), records_on("n2", uid)) == (0, len(final))
    assert weave.sql(f"SELECT node, status FROM users WHERE id = {uid}") == [[shard()["node"], "1"]]
    assert weave.sql(f"SELECT COUNT(*) FROM moves WHERE user_id = {uid}") == [["0"]]


def wait_for_phase(uid, phase, proc):
    for _ in range(300):
        rows = weave.sql(f"SELECT phase FROM moves WHERE user_id = {uid}")
        if rows and rows[0][0] == str(phase):
            return
        assert proc.poll() is None, f"the mover ended before phase {phase}: {proc.communicate()}"
        time.sleep(0.05)
    raise AssertionError(f"the move never reached phase {phase}")


def test_a_mover_killed_in_any_phase_is_finished_by_running_it_again():
    for phase in (1, 2, 3):
        user, pw, uid = new_user(f"shkill{phase}", shard()["node"])
        assert post(user, pw, "load", [{"id": f"old{i}", "payload": f"v{i}"}
                                       for i in range(50)]).status == 200
        with Load(user, pw, writers=2) as load:
            proc = subprocess.Popen([weave.ADMIN, "--config", shard()["config"], "user", "move",
                                     user, "--to", "default", "--pause", "4000"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            wait_for_phase(uid, phase, proc)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            time.sleep(0.5)
            if phase == 2:
                r = call("GET", user, pw, "info/collections")
                assert r.status == 503 and r.headers.get("Retry-After") == "7", (r.status,
                                                                                  r.headers)
            out = admin("user", "move", user, "--to", "default").stdout
            assert "going on with the move" in out, out
            time.sleep(0.5)
        final = stored(user, pw, "load")
        load.check(final)
        assert all(final[f"old{i}"] == f"v{i}" for i in range(50))
        assert (records_on("here", uid), records_on("n2", uid)) == (len(final), 0), phase
        assert weave.sql(f"SELECT node, status FROM users WHERE id = {uid}") == [["NULL", "1"]]
        assert weave.sql(f"SELECT COUNT(*) FROM moves WHERE user_id = {uid}") == [["0"]]


def test_a_second_move_elsewhere_waits_for_the_unfinished_one():
    user, pw, uid = new_user("shbusy", shard()["node"])
    weave.sql(f"INSERT INTO moves (user_id, source, target, phase, status_before, started) "
              f"VALUES ({uid}, '{shard()['node']}', NULL, 1, 1, 0)")
    p = admin("user", "move", user, "--to", "http://elsewhere.example/", check=False)
    assert p.returncode == 1 and "unfinished move to default" in p.stderr, p.stderr
    admin("user", "move", user, "--to", "default")
    assert weave.sql(f"SELECT node FROM users WHERE id = {uid}") == [["NULL"]]


def test_node_drain_moves_every_account_off_the_node():
    users = [new_user(f"shdrain{k}", shard()["node"]) for k in range(3)]
    for user, pw, _ in users:
        assert post(user, pw, "forms", [{"id": "f", "payload": user}]).status == 200
    out = admin("node", "drain", "n2", "--to", "default").stdout
    assert "drained" in out, out
    for user, pw, uid in users:
        assert stored(user, pw, "forms") == {"f": user}
        assert (records_on("here", uid), records_on("n2", uid)) == (1, 0)
    rows = weave.sql(f"SELECT COUNT(*) FROM users WHERE node = '{shard()['node']}'")
    assert rows == [["0"]], rows


def test_deleting_an_account_on_a_node_deletes_its_records_there():
    user, pw, uid = new_user("shdel", shard()["node"])
    assert post(user, pw, "tabs", [{"id": "t", "payload": "x"}]).status == 200
    assert records_on("n2", uid) == 1
    r = request("DELETE", f"user/1.0/{user}", user=user, password=pw, port=shard()["port"])
    assert r.status == 200, (r.status, r.body)
    assert records_on("n2", uid) == 0
    assert node_sql(f"SELECT COUNT(*) FROM write_log WHERE user_id = {uid}") == [["0"]]
    assert weave.sql(f"SELECT COUNT(*) FROM users WHERE id = {uid}") == [["0"]]


def test_a_storage_node_is_checked_when_weave_conf_is_read():
    bad = os.path.join(weave.STACK_DIR, "shards", "bad.conf")
    with open(shard()["config"]) as f:
        text = f.read()
    cases = {
        "node.n3.db_name = other\n": "has no node.n3.url",
        "node.n3.url = " + shard()["node"] + "\nnode.n3.db_name = x\n": "the same url",
        "node.N3.url = http://x.example/\n": "a-z, 0-9",
        "node.n3.colour = blue\n": "unknown key 'node.n3.colour'",
        "node.n2.db_name = again\nnode.n2.db_name = twice\n": "set twice",
    }
    for extra, message in cases.items():
        with open(bad, "w") as f:
            f.write(text + extra)
        p = subprocess.run([weave.ADMIN, "--config", bad, "node", "list"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 3 and message in p.stderr, (extra, p.returncode, p.stderr)


def test_admin_commands_reach_the_records_on_a_node():
    user, pw, uid = new_user("shadmin", shard()["node"])
    recs = [{"id": f"k{i}", "payload": f"v{i}"} for i in range(20)]
    recs.append({"id": "brief", "payload": "gone soon", "ttl": 1})
    assert post(user, pw, "shadmin", recs).status == 200
    time.sleep(1.5)
    assert records_on("n2", uid) == 21
    # user show and stats read the node's records; db check the node's schema.
    show = json.loads(admin("user", "show", user, "--json").stdout)
    assert show["collections"]["shadmin"]["records"] == 20, show
    stats = json.loads(admin("stats", "--json").stdout)
    mine = [c for c in stats["collections"] if c["collection"] == "shadmin"]
    assert mine and mine[0]["records"] == 20, mine
    check = json.loads(admin("db", "check", "--json").stdout)
    assert check["nodes"]["n2"]["missing"] == [], check
    # purge removes the node's expired record.
    admin("purge")
    assert records_on("n2", uid) == 20
    # export reads them; 'user node' refuses to leave them behind.
    lines = admin("export", user).stdout.splitlines()
    assert len(lines) == 20, lines[:3]
    # import writes them back on the node (here: 5 of them, replacing all).
    admin("import", user, "-", "--replace", input="\n".join(lines[:5]) + "\n")
    assert (records_on("here", uid), records_on("n2", uid)) == (0, 5)
    admin("import", user, "-", "--replace", input="\n".join(lines) + "\n")
    assert records_on("n2", uid) == 20
    p = admin("user", "node", user, "default", check=False)
    assert p.returncode == 1 and "user move" in p.stderr, p.stderr
    # backup, delete, restore: the records come back on the node.
    path = os.path.join(weave.STACK_DIR, "shards", "backup.gz")
    admin("backup", path, "--user", user, "--force")
    r = request("DELETE", f"user/1.0/{user}", user=user, password=pw, port=shard()["port"])
    assert r.status == 200 and records_on("n2", uid) == 0
    admin("restore", path)
    uid2 = int(weave.sql(f"SELECT id FROM users WHERE username = '{user}'")[0][0])
    assert (records_on("here", uid2), records_on("n2", uid2)) == (0, 20)
    assert stored(user, pw, "shadmin") == {f"k{i}": f"v{i}" for i in range(20)}


def test_a_move_between_nodes_sharing_a_database_changes_only_the_node():
    """A node URL without a database of its own keeps its records in the
    account database, as default does: nothing to copy, nothing cleared."""
    user, pw, uid = new_user("shsame", "http://elsewhere.example/")
    assert post(user, pw, "tabs", [{"id": "t", "payload": "stays"}]).status == 200
    out = admin("user", "move", user, "--to", "default").stdout
    assert "same database" in out, out
    assert stored(user, pw, "tabs") == {"t": "stays"}
    assert (records_on("here", uid), records_on("n2", uid)) == (1, 0)
    assert weave.sql(f"SELECT node FROM users WHERE id = {uid}") == [["NULL"]]


def test_deleting_an_account_mid_move_leaves_no_copy_behind():
    user, pw, uid = new_user("shmid")
    assert post(user, pw, "tabs", [{"id": f"t{i}", "payload": "x"} for i in range(10)]).status == 200
    proc = subprocess.Popen([weave.ADMIN, "--config", shard()["config"], "user", "move",
                             user, "--to", "n2", "--pause", "4000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for _ in range(200):  # the copy is made, the mover pauses before the freeze
            if records_on("n2", uid) == 10:
                break
            time.sleep(0.05)
        assert records_on("n2", uid) == 10, "the copy never reached n2"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    r = request("DELETE", f"user/1.0/{user}", user=user, password=pw, port=shard()["port"])
    assert r.status == 200, (r.status, r.body)
    assert (records_on("here", uid), records_on("n2", uid)) == (0, 0)


def test_user_history_and_restore_work_on_a_node():
    user, pw, uid = new_user("shhist", shard()["node"])
    r = post(user, pw, "bookmarks", [{"id": f"b{i}", "payload": f"first {i}"} for i in range(10)])
    assert r.status == 200
    first = r.json()["modified"]
    time.sleep(0.05)
    assert post(user, pw, "bookmarks", [{"id": f"b{i}", "payload": f"second {i}"}
                                        for i in range(5)]).status == 200
    history = json.loads(admin("user", "history", user, "--json").stdout)
    assert [(w["written"], w["replaced"]) for w in history["writes"]] == [(10, 0), (5, 5)], history
    dry = admin("user", "restore", user, "--as-of", f"{first:.2f}", "--dry-run").stdout
    assert "5 replaced records to put back" in dry, dry
    admin("user", "restore", user, "--as-of", f"{first:.2f}", "--yes")
    assert stored(user, pw, "bookmarks") == {f"b{i}": f"first {i}" for i in range(10)}
    assert (records_on("here", uid), records_on("n2", uid)) == (0, 10)
    assert int(node_sql(f"SELECT COUNT(*) FROM write_log WHERE user_id = {uid}")[0][0]) == 3


def test_user_list_and_stats_count_an_accounts_records_on_its_node():
    prefix = "sl" + os.urandom(3).hex()  # this test's accounts only
    there, there_pw, _ = new_user(prefix, shard()["node"])
    here, here_pw, _ = new_user(prefix)
    assert post(there, there_pw, "tabs",
                [{"id": f"t{i}", "payload": "x" * 200} for i in range(30)]).status == 200
    assert post(here, here_pw, "tabs",
                [{"id": f"h{i}", "payload": "y" * 10} for i in range(10)]).status == 200

    def listed(*args):
        out = admin("user", "list", "--name-like", prefix + "%", "--json", *args).stdout
        return [(u["username"], u["records"], u["bytes"] > 0) for u in json.loads(out)]

    rows = dict((name, (records, has_bytes)) for name, records, has_bytes in listed())
    assert rows == {there: (30, True), here: (10, True)}, rows
    # The order and the limit follow the node's figures: the larger account first.
    assert [name for name, _, _ in listed("--sort", "usage", "--limit", "1")] == [there]
    assert [name for name, _, _ in listed("--node", "default")] == [here]
    largest = json.loads(admin("stats", "--top", "100000", "--json").stdout)["largest_users"]
    mine = {u["username"]: u["records"] for u in largest if u["username"] in (there, here)}
    assert mine == {there: 30, here: 10}, mine
    text = admin("user", "list", "--name-like", there).stdout
    assert f"{there} " in text and " 30 " in text, text


@contextlib.contextmanager
def n2_the_only_node():
    """The nodes table names n2 alone while the block runs, so that every
    account made then (registration, migrate) is given n2."""
    kept = weave.sql("SELECT url, COALESCE(capacity, 'NULL'), created FROM nodes")
    weave.sql("DELETE FROM nodes")
    weave.sql(f"INSERT INTO nodes (url, capacity, created) VALUES ('{shard()['node']}', NULL, 0)")
    try:
        yield
    finally:
        weave.sql("DELETE FROM nodes")
        for url, capacity, created in kept:
            weave.sql(f"INSERT INTO nodes (url, capacity, created) "
                      f"VALUES ('{url}', {capacity}, {created})")


def migrate_from_fsyncms(users, records, expect_rc=0):
    """weave-admin migrate from an FSyncMS SQLite file holding users (name,
    password) and records (name, collection, id, payload), in that order."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "weave_db")
        db = sqlite3.connect(path)
        db.executescript(
            "create table wbo (username text, id text, collection text, parentid text,"
            " predecessorid int, modified real, sortindex int, payload text,"
            " payload_size int, ttl int, primary key (username, collection, id));"
            "create table users (username text primary key, md5 text);")
        for name, pw in users:
            db.execute("insert into users values (?, ?)",
                       (name, hashlib.md5(pw.encode()).hexdigest()))
        for i, (name, coll, rid, payload) in enumerate(records):
            db.execute("insert into wbo (username, id, collection, modified, payload,"
                       " payload_size) values (?, ?, ?, ?, ?, ?)",
                       (name, rid, coll, 1265402837.0 + i, payload, len(payload)))
        db.commit()
        db.close()
        p = admin("migrate", "--from", f"sqlite:{path}", check=False)
    assert p.returncode == expect_rc, (p.returncode, p.stdout, p.stderr)
    return p


def test_migrate_puts_records_on_the_node_it_gives_an_account():
    """With storage nodes, migrate gives each account a node as registration
    does, and its records must be in that node's database."""
    tag = os.urandom(3).hex()
    names, pw = [f"shmig{tag}a", f"shmig{tag}b"], "an-old-password"
    weave.PASSWORDS.append(pw)
    with n2_the_only_node():
        p = migrate_from_fsyncms([(n, pw) for n in names],
                                 [(n, "bookmarks", f"b{i}", f"p{i}")
                                  for n in names for i in range(3)])
    assert "migrated 2 accounts and 6 records" in p.stdout, p.stdout
    for name in names:
        uid, node = weave.sql(f"SELECT id, node FROM users WHERE username = '{name}'")[0]
        assert node == shard()["node"], node
        assert (records_on("here", uid), records_on("n2", uid)) == (0, 3)
        assert stored(name, pw, "bookmarks") == {f"b{i}": f"p{i}" for i in range(3)}


def records_of_no_account_on_n2():
    """How many records n2 holds for user ids the account database lacks."""
    ids = {int(r[0]) for r in weave.sql("SELECT id FROM users")}
    return sum(int(n) for uid, n in
               node_sql("SELECT user_id, COUNT(*) FROM wbo GROUP BY user_id")
               if int(uid) not in ids)


def test_migrate_leaves_nothing_of_a_failed_account_on_its_node():
    """An account refused half-way (a record no client could read, after
    more records than one insert takes) leaves none of its records on its
    node, also when the next account's transaction opens there."""
    tag = os.urandom(3).hex()
    bad, good, pw = f"shfail{tag}a", f"shfail{tag}b", "an-old-password"
    weave.PASSWORDS.append(pw)
    before = records_of_no_account_on_n2()
    records = [(bad, "bookmarks", f"b{i:02d}", f"p{i}") for i in range(40)]
    records.append((bad, "tabs", "a/b", "p"))  # no GET or DELETE could name it
    records += [(good, "bookmarks", f"g{i}", f"q{i}") for i in range(3)]
    with n2_the_only_node():
        p = migrate_from_fsyncms([(bad, pw), (good, pw)], records, expect_rc=1)
    assert f"{bad}: NOT migrated" in p.stderr, p.stderr
    assert "migrated 1 accounts and 3 records" in p.stdout, p.stdout
    assert admin("user", "show", bad, check=False).returncode == 1
    assert stored(good, pw, "bookmarks") == {f"g{i}": f"q{i}" for i in range(3)}
    assert records_of_no_account_on_n2() == before, "the failed account's records stayed"
