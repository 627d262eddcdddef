"""Monitoring and upgrades (issue 25 items 5 and 8): the health URL, the
metrics URL (off by default, restricted, host-wide counters in Prometheus
text format), `status --json` with the database down, the version, and
the upgrade window in which writes answer 503 with a short Retry-After.

The metrics tests run a second Apache (loadkit.second_apache) on the same
binary, database and account cache file as the main stack with
`metrics = on`: the counters are the host's, so requests answered by the
main stack's processes show up in the second one's page.
"""

import atexit
import json
import os
import re
import subprocess
import time

import loadkit
import weave
from weave import admin, db_start, db_stop, new_user, request, sql

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKEN = "metrics-token-0123456789abcdef"
_servers = {}


def server(name, settings):
    if name not in _servers:
        port, apache = loadkit.second_apache(name, settings)
        atexit.register(loadkit.stack_lib_run, 'stack_apache_stop "$1"', apache)
        _servers[name] = port
    return _servers[name]


def metrics_server():
    return server("metrics", {"metrics": "on", "metrics_allow": "127.0.0.1",
                              "metrics_token": TOKEN})


def scrape(port=None, **kw):
    r = request("GET", "metrics", port=port or metrics_server(), **kw)
    assert r.status == 200, r
    assert r.headers.get("Content-Type").startswith("text/plain; version=0.0.4"), r
    return r.text


def value(text, name, **labels):
    """The sample of metric name whose labels include labels; 0 when absent."""
    total = None
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        m = re.match(r"^([a-z_]+)(?:\{(.*)\})? (\S+)$", line)
        assert m, f"not Prometheus text: {line!r}"
        if m.group(1) != name:
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        if all(got.get(k) == v for k, v in labels.items()):
            total = (total or 0) + float(m.group(3))
    return total or 0


def test_health_says_ok_with_version_and_schema():
    for path in ("health", "__heartbeat__"):
        r = request("GET", path)
        assert r.status == 200, r
        body = r.json()
        assert body["status"] == "ok" and body["database"] == "ok", body
        assert body["schema_version"] == body["schema_needed"] >= 4, body
        assert body["version"] == admin("--version").stdout.split()[-1], body
    assert request("POST", "health", body="x").status == 405


def test_both_programs_print_the_version_from_git():
    out = admin("--version").stdout.strip()
    m = re.match(r"^weave-admin (\d+\.\d+\.\d+\S*)$", out)
    assert m, out
    fcgi = subprocess.run([weave.FCGI, "--version"], capture_output=True, text=True, timeout=30)
    assert fcgi.returncode == 0 and fcgi.stdout.strip() == f"weave.fcgi (weave-server) {m.group(1)}"
    # Not the old fixed 0.1.0: the commit it was built from is in it, and it
    # is this checkout's (or an ancestor, when committed since the build).
    built = re.search(r"\.g([0-9a-f]{7,})", m.group(1))
    if m.group(1).startswith("0.1.0+") and built:
        p = subprocess.run(["git", "-C", ROOT, "merge-base", "--is-ancestor", built.group(1),
                            "HEAD"], capture_output=True, text=True)
        assert p.returncode == 0, (m.group(1), p.stderr)
        count = subprocess.run(["git", "-C", ROOT, "rev-list", "--count", built.group(1)],
                               capture_output=True, text=True).stdout.strip()
        assert m.group(1).startswith(f"0.1.0+{count}.g"), (m.group(1), count)


def test_metrics_are_off_by_default():
    r = request("GET", "metrics")
    assert r.status == 404, r
    assert b"weave_requests_total" not in r.body


def test_metrics_count_requests_by_route_and_status_host_wide():
    user, pw = new_user("metrics")
    before = scrape()
    # Answered by the main stack's processes, counted in the shared file.
    for _ in range(3):
        assert request("GET", f"1.0/{user}/info/collections", user=user, password=pw).status == 200
    assert request("GET", f"1.0/{user}/info/collections", user=user, password="wrong").status == 401
    assert request("PUT", f"1.0/{user}/storage/tabs/one", {"payload": "x"},
                   user=user, password=pw).status == 200
    after = scrape()
    sample = re.compile(r'^[a-z_]+(\{[a-z_]+="[^"\\]*"(,[a-z_]+="[^"\\]*")*\})? [0-9.e+]+$')
    for line in after.splitlines():
        assert line.startswith("# ") or sample.match(line), f"not Prometheus text: {line!r}"
    grew = lambda name, **l: value(after, name, **l) - value(before, name, **l)  # noqa: E731
    assert grew("weave_requests_total", route="info_collections", method="GET",
                status="200") >= 3
    assert grew("weave_requests_total", route="info_collections", method="GET",
                status="401") >= 1
    assert grew("weave_requests_total", route="record", method="PUT", status="200") >= 1
    # The histogram: every request of a route lands in +Inf, buckets only grow.
    inf = value(after, "weave_request_duration_seconds_bucket", route="info_collections", le="+Inf")
    count = value(after, "weave_request_duration_seconds_count", route="info_collections")
    assert inf == count >= 4, (inf, count)
    assert value(after, "weave_request_duration_seconds_sum", route="info_collections") > 0
    buckets = [float(v) for v in re.findall(
        r'^weave_request_duration_seconds_bucket\{route="record",le="[^"]+"\} (\S+)$',
        after, re.M)]
    assert buckets and buckets == sorted(buckets), buckets
    # KDF runs and cache hits come from the account cache file.
    assert grew("weave_kdf_runs_total") >= 1
    assert "weave_cache_hits_total{cache=\"credentials\"}" in after
    assert "weave_db_errors_total " in after
    assert value(after, "weave_build_info", version=admin("--version").stdout.split()[-1]) == 1


def test_metrics_are_refused_outside_metrics_allow_without_the_token():
    port = metrics_server()
    r = request("GET", "metrics", port=port, source="127.0.0.9")
    assert r.status == 403 and b"weave_" not in r.body, r
    r = request("GET", "metrics", port=port, source="127.0.0.9",
                headers={"Authorization": "Bearer wrong-" + TOKEN})
    assert r.status == 403, r
    text = scrape(port, source="127.0.0.9", headers={"Authorization": "Bearer " + TOKEN})
    assert "weave_requests_total" in text


def test_health_and_status_json_say_when_the_database_is_down():
    port = metrics_server()
    user, _ = new_user("outage")
    before = value(scrape(), "weave_db_errors_total")
    db_stop()
    try:
        r = request("GET", "health")
        assert r.status == 503 and r.headers.get("Retry-After"), r
        body = r.json()
        assert body["status"] == "error" and body["database"] == "unreachable", body
        assert "schema_version" not in body
        # The node lookup needs the database: a 503, counted as a database error.
        assert request("GET", f"user/1.0/{user}/node/weave").status == 503
        assert value(scrape(port), "weave_db_errors_total") >= before + 1
        p = admin("status", "--json", check=False)
        assert p.returncode == 4, (p.returncode, p.stdout, p.stderr)
        state = json.loads(p.stdout)
        assert state["database_state"] == "unreachable" and state["database_error"], state
        assert state["version"] and state["config"] == weave.CONFIG, state
    finally:
        db_start()
    assert request("GET", "health").status == 200
    state = json.loads(admin("status", "--json").stdout)
    assert state["database_state"] == "ok" and state["database_error"] is None, state


def wait_for_settings():
    """Every process re-reads the settings and schema version at most 5 s apart."""
    time.sleep(6)


def test_writes_answer_503_with_retry_after_until_db_upgrade():
    user, pw = new_user("upgrade")
    assert request("PUT", f"1.0/{user}/storage/a/one", {"payload": "x"},
                   user=user, password=pw).status == 200
    # As after installing a binary whose schema is newer than the database's.
    sql("UPDATE weave_schema SET version = 3 WHERE version >= 4")
    try:
        wait_for_settings()
        for i in range(4):
            r = request("PUT", f"1.0/{user}/storage/a/w{i}", {"payload": "y"},
                        user=user, password=pw)
            assert r.status == 503 and r.headers.get("Retry-After") == "30", r
        # Reads go on.
        r = request("GET", f"1.0/{user}/storage/a", user=user, password=pw)
        assert r.status == 200 and r.json() == ["one"], r
        h = request("GET", "health")
        assert h.status == 503 and h.json()["status"] == "upgrade", h
        p = admin("db", "upgrade")
        assert "upgrading schema version 3 to" in p.stdout and "Retry-After 30" in p.stdout, p.stdout
        assert "upgraded schema from version 3" in p.stdout, p.stdout
    finally:
        if sql("SELECT MAX(version) FROM weave_schema")[0][0] == "3":
            admin("db", "upgrade")
    wait_for_settings()
    r = request("PUT", f"1.0/{user}/storage/a/two", {"payload": "z"}, user=user, password=pw)
    assert r.status == 200, r
    assert sql(f"SELECT COUNT(*) FROM wbo w JOIN users u ON u.id = w.user_id "
               f"WHERE u.username = '{user}' AND w.id LIKE 'w%'") == [["0"]]


def test_log_lines_carry_address_method_path_status_and_time():
    offset = os.path.getsize(weave.APACHE_LOG)
    user, _ = new_user("logline")
    secret = "code-never-logged-0451"
    r = request("GET", f"1.0/{user}/info/collections?x={secret}", user=user, password="wrong",
                source="127.0.0.5")
    assert r.status == 401
    deadline = time.monotonic() + 5
    pattern = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z weave\[\d+\] info req=\d+ "
                         rf"user=\S+ addr=127\.0\.0\.5 GET /weave/1\.0/{user}/info/collections: "
                         r"answered 401 in \d+\.\d ms$", re.M)
    while True:
        with open(weave.APACHE_LOG, "rb") as f:
            f.seek(offset)
            text = f.read().decode("utf-8", "replace")
        if pattern.search(text) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert pattern.search(text), text[-3000:]
    # The login failure itself names the same request, address and path.
    assert re.search(rf"addr=127\.0\.0\.5 GET /weave/1\.0/{user}/info/collections: "
                     r"authentication failed", text), text[-3000:]
    assert secret not in text
