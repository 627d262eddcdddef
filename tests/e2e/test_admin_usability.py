"""weave-admin's rough edges, each fixed and held here:
export into a closed pipe, commands before `db init`, the user list header
on failure, --json before the command (and on db check and purge), status,
help and did-you-mean, a locked account, maintenance's Retry-After, export
over an existing file, a quota below usage, and progress bars that fit the
terminal and show sizes."""

import json
import os
import re
import subprocess
import tempfile

import weave
from terminal import run_on_terminal
from weave import new_user, request

CONFIG = weave.CONFIG


def run(*args, input=None, config=None):
    return subprocess.run([weave.ADMIN, "--config", config or CONFIG, *map(str, args)],
                          input=input, capture_output=True, text=True, timeout=120)


def post(name, pw, coll, records):
    r = request("POST", f"1.0/{name}/storage/{coll}", body=records, user=name, password=pw)
    assert r.status == 200, r


def test_export_into_a_closed_pipe_ends_quietly():
    name, pw = new_user("pipe")
    # More than a pipe holds (64 KiB), so the writer meets the closed end.
    for batch in range(3):
        post(name, pw, "history", [{"id": f"h{batch}-{i}", "payload": "x" * 1000}
                                   for i in range(100)])
    p = subprocess.Popen([weave.ADMIN, "--config", CONFIG, "export", name],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = p.stdout.read(10)
    p.stdout.close()
    err = p.stderr.read()
    p.wait(timeout=60)
    assert first.startswith(b'{"collecti'), first
    assert err == b"", err
    assert p.returncode == -13, p.returncode      # SIGPIPE, as cat ends


def empty_database_config(d):
    weave.sql("CREATE DATABASE IF NOT EXISTS weave_no_schema")
    weave.sql("GRANT ALL ON weave_no_schema.* TO 'weave'@'127.0.0.1'")
    weave.sql("GRANT ALL ON weave_no_schema.* TO 'weave'@'localhost'")
    text = open(CONFIG).read()
    path = os.path.join(d, "weave.conf")
    with open(path, "w") as f:
        f.write(re.sub(r"(?m)^db_name = .*$", "db_name = weave_no_schema", text))
    return path


def test_commands_before_db_init_say_so_and_print_no_header():
    with tempfile.TemporaryDirectory() as d:
        conf = empty_database_config(d)
        for args in (("user", "list"), ("user", "show", "nobody"), ("stats",), ("node", "list"),
                     ("throttle", "list")):
            p = run(*args, config=conf)
            assert p.returncode == 4, (args, p)
            assert "run 'weave-admin db init'" in p.stderr, (args, p.stderr)
            assert p.stdout == "", (args, p.stdout)     # no table header
        p = run("status", config=conf)
        assert p.returncode == 0 and "run 'weave-admin db init'" in p.stdout, p


def test_json_anywhere_and_on_db_check_and_purge():
    name, _ = new_user("js")
    for args in (("--json", "user", "list"), ("user", "list", "--json")):
        p = run(*args)
        assert p.returncode == 0, p
        assert name in [u["username"] for u in json.loads(p.stdout)]
    p = run("--json", "db", "check")
    assert p.returncode == 0, p
    o = json.loads(p.stdout)
    assert o["version"] == o["current_version"] and o["missing"] == [], o
    p = run("--json", "purge", "--dry-run")
    assert p.returncode == 0 and "expired_records" in json.loads(p.stdout), p
    p = run("purge", "--json")
    assert p.returncode == 0 and "purged_records" in json.loads(p.stdout), p
    p = run("--json", "user", "enable", name)
    assert p.returncode == 2 and "has no JSON output" in p.stderr, p


def test_status_shows_the_server_not_only_settings():
    p = run("status")
    assert p.returncode == 0, p
    for words in ("database", "schema version", "accounts", "sign-up", "maintenance", "backoff"):
        assert words in p.stdout, (words, p.stdout)
    o = json.loads(run("status", "--json").stdout)
    assert o["schema_version"] == o["schema_current"] and o["accounts"] >= 1, o
    assert "maintenance" in o and "source" in o, o


def test_help_command_and_did_you_mean():
    assert run("help", "user", "add").stdout == run("user", "add", "--help").stdout
    p = run("help")
    assert p.returncode == 0 and "Commands:" in p.stdout
    assert run("help", "user").stdout == run("user", "--help").stdout
    p = run("usr", "add", "x")
    assert p.returncode == 2 and "did you mean 'user add'" in p.stderr, p.stderr
    p = run("user", "ad", "x")
    assert p.returncode == 2 and "did you mean 'user add'" in p.stderr, p.stderr
    p = run("stat")
    assert p.returncode == 2 and "did you mean 'stats'" in p.stderr, p.stderr


def test_a_locked_account_shows_locked():
    # The account's daily budget spent, spread over addresses so that no
    # (account, address) pair locks first.
    name, pw = new_user("lock")
    config = weave.read_config()
    per_pair = int(config.get("login_limit", "10")) - 1
    budget = int(config.get("login_account_limit", "100"))
    for i in range(budget):
        source = f"127.0.{100 + i // per_pair}.{1 + i % per_pair}"
        r = request("GET", f"1.0/{name}/info/collections", user=name,
                    password="wrong" + pw, source=source)
        assert r.status == 401
    try:
        p = run("user", "show", name)
        assert p.returncode == 0 and "LOCKED to new addresses until" in p.stdout and "user unlock" in p.stdout, p.stdout
        assert json.loads(run("user", "show", name, "--json").stdout)["locked_until"] is not None
        row = run("user", "list", "--name-like", name).stdout.splitlines()[1].split()
        assert row[:2] == [name, "locked"], row
        assert json.loads(run("user", "list", "--name-like", name, "--json").stdout)[0]["locked"] is True
    finally:
        assert run("user", "unlock", name).returncode == 0
    p = run("user", "show", name)
    assert "LOCKED" not in p.stdout
    assert run("user", "list", "--name-like", name).stdout.splitlines()[1].split()[1] == "enabled"
    assert json.loads(run("user", "show", name, "--json").stdout)["locked_until"] is None


def test_maintenance_retry_after_ends_with_maintenance():
    try:
        assert run("maintenance", "on", "--retry-after", "1234").returncode == 0
        s = json.loads(run("settings", "--json").stdout)
        assert s["retry_after"] == 1234 and s["source"]["retry_after"] == "database", s
        assert run("maintenance", "off").returncode == 0
        s = json.loads(run("settings", "--json").stdout)
        assert s["source"]["retry_after"] == "weave.conf", s
        p = run("maintenance", "off", "--retry-after", "5")
        assert p.returncode == 2 and "goes with 'maintenance on'" in p.stderr, p
    finally:
        run("maintenance", "default")


def test_export_refuses_to_overwrite_without_force():
    name, pw = new_user("ovr")
    post(name, pw, "tabs", [{"id": "t", "payload": "x"}])
    with tempfile.TemporaryDirectory() as d:
        target = os.path.join(d, "out.jsonl")
        with open(target, "w") as f:
            f.write("precious\n")
        p = run("export", name, target)
        assert p.returncode == 1 and "exists" in p.stderr and "--force" in p.stderr, p
        assert open(target).read() == "precious\n"
        p = run("export", name, target, "--force")
        assert p.returncode == 0, p
        assert '"id":"t"' in open(target).read()


def test_quota_below_usage_is_warned():
    name, pw = new_user("quo")
    post(name, pw, "history", [{"id": f"h{i}", "payload": "y" * 1000} for i in range(10)])
    p = run("user", "quota", name, "2")
    assert p.returncode == 0 and "warning" in p.stderr and "above the quota of 2 KB" in p.stderr, p
    p = run("user", "quota", name, "100")
    assert p.returncode == 0 and p.stderr == "", p


def terminal_run(args, columns):
    return run_on_terminal([weave.ADMIN, "--config", CONFIG, *args], columns)


def test_progress_bars_fit_the_terminal_and_show_sizes():
    name, pw = new_user("bar")
    post(name, pw, "history", [{"id": f"h{i}", "payload": "z" * 500} for i in range(60)])
    with tempfile.TemporaryDirectory() as d:
        target = os.path.join(d, "x.jsonl")
        for columns in (40, 80):
            p, text = terminal_run(["export", name, target, "--force"], columns)
            assert p.returncode == 0
            frames = [re.sub(r"\x1b\[K", "", f) for f in re.split(r"[\r\n]", text) if f.strip()]
            assert frames and all(len(f) < columns for f in frames), (columns, frames)
            assert any("60/60 records" in f for f in frames) or columns < 60, frames
        p, text = terminal_run(["import", name, target], 80)
        assert p.returncode == 0, text
        assert re.search(r"\d+(\.\d)? (B|KB|MB)/\d+(\.\d)? (B|KB|MB)", text), text
