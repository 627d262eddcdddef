"""weave-admin's data as the admin and migrate tests read it: SQL as the
stack's MariaDB root, records back through the Storage API, unique names."""

import json
import os
import secrets
import subprocess

from weave import admin, read_config, request

SOCKET = os.path.join(os.environ.get("WEAVE_STACK_DIR", ""), "db", "mysqld.sock")


def admin_json(*args):
    return json.loads(admin(*args, "--json").stdout)


def config_value(key):
    return read_config().get(key)


def root_sql(sql, database=None):
    """Run SQL as MariaDB root through the stack's socket; tab-separated rows."""
    cmd = ["mariadb", "--no-defaults", f"--socket={SOCKET}", "-u", "root", "-N", "-B"]
    if database:
        cmd.append(database)
    p = subprocess.run(cmd, input=sql, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, f"mariadb failed: {p.stderr}\nSQL: {sql[:500]}"
    return p.stdout


def scalar(sql):
    return root_sql(sql, "weave").strip()


def auth_get(user, password, path):
    return request("GET", f"1.0/{user}/{path}", user=user, password=password)


def full(user, password, coll):
    """GET storage/coll?full=1 with modified kept as the exact wire text."""
    r = auth_get(user, password, f"storage/{coll}?full=1")
    assert r.status == 200, r
    rows = json.loads(r.body, parse_float=str)
    return {row["id"]: row for row in rows}


def unique(prefix):
    return f"{prefix}{secrets.token_hex(4)}"


def password_hash_of(name):
    return scalar(f"SELECT password_hash FROM users WHERE username = '{name}'")
