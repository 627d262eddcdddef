"""Helpers for the load-style end-to-end tests (crash consistency and
concurrency): keep-alive clients for worker threads, 100-record batches that
describe themselves, the stack's weave.fcgi processes, and checks on the
timestamps a run of writes produced.

Standard library only; see weave.py for the environment tests/run sets.
"""

import http.client
import json
import os
import platform
import threading
import time

import weave


class Client:
    """One keep-alive HTTP connection for one worker thread. A request that
    fails at the transport level (reset, refused, timeout) raises OSError or
    http.client.HTTPException and drops the connection; the next request
    opens a new one. Nothing is retried here: callers decide what a failure
    means."""

    def __init__(self, user=None, password=None, host=None, port=None,
                 base_path=None, timeout=60):
        self.host = host or weave.HOST
        self.port = port or weave.PORT
        self.base_path = base_path or weave.BASE_PATH
        self.timeout = timeout
        self.auth = weave.basic_auth(user, password) if user is not None else None
        self.conn = None

    def connect(self):
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port,
                                                   timeout=self.timeout)
            self.conn.connect()

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def request(self, method, path, body=None, headers=None):
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode("utf-8")
        hdrs = dict(headers or {})
        if self.auth:
            hdrs.setdefault("Authorization", self.auth)
        url = path if path.startswith("/") else self.base_path + path
        try:
            self.connect()
            self.conn.request(method, url, body=body, headers=hdrs)
            resp = self.conn.getresponse()
            data = resp.read()
        except (OSError, http.client.HTTPException):
            self.close()
            raise
        r = weave.Response(resp.status, resp.reason, resp.getheaders(), data)
        if resp.will_close:
            self.close()
        return r


def centi(value):
    """A wire timestamp ("1265402837.12", or the float of a JSON body) as
    integer centiseconds, exactly."""
    if isinstance(value, float):
        return round(value * 100)
    text = str(value)
    whole, _, frac = text.partition(".")
    return int(whole) * 100 + int((frac + "00")[:2])


# ---------------------------------------------------------------- batches

PAD = "x" * 560  # a 100-record POST of ~66 KB, like the 1.0 client's history


def batch_ids(tag, n=100):
    return [f"{tag}r{i:03d}" for i in range(n)]


def batch_records(tag, n=100):
    """N records whose payload names the batch and the record's index, so a
    stored record can be traced back to the request that wrote it."""
    return [{"id": rid, "sortindex": i,
             "payload": json.dumps({"batch": tag, "index": i, "pad": PAD})}
            for i, rid in enumerate(batch_ids(tag, n))]


class BatchResult:
    """What one POST of a batch looked like from the client's side."""

    def __init__(self, user, coll, tag, n, sent):
        self.user, self.coll, self.tag, self.n = user, coll, tag, n
        self.sent = sent          # monotonic clock before sending
        self.done = None          # ... after the answer (or the failure)
        self.status = None        # HTTP status, None on a transport error
        self.error = None         # transport error text
        self.modified = None      # centiseconds from the body ("modified")
        self.header_ts = None     # centiseconds from X-Weave-Timestamp
        self.retry_after = None
        self.body = b""

    @property
    def ok(self):
        """The client saw the whole batch accepted."""
        if self.status != 200:
            return False
        try:
            answer = json.loads(self.body)
        except ValueError:
            return False
        return (sorted(answer.get("success", [])) == sorted(batch_ids(self.tag, self.n))
                and not answer.get("failed"))

    def __repr__(self):
        what = self.error or f"HTTP {self.status}"
        return f"<batch {self.user}/{self.coll}/{self.tag}: {what}>"


def post_batch(client, user, coll, tag, n=100):
    res = BatchResult(user, coll, tag, n, time.monotonic())
    try:
        r = client.request("POST", f"1.0/{user}/storage/{coll}",
                           body=batch_records(tag, n))
    except (OSError, http.client.HTTPException) as exc:
        res.error = f"{type(exc).__name__}: {exc}"
        res.done = time.monotonic()
        return res
    res.done = time.monotonic()
    res.status = r.status
    res.body = r.body
    ts = r.headers.get("X-Weave-Timestamp")
    res.header_ts = centi(ts) if ts else None
    res.retry_after = r.headers.get("Retry-After")
    if r.status == 200:
        try:
            res.modified = centi(float(json.loads(r.body)["modified"]))
        except (ValueError, KeyError, TypeError):
            pass
    return res


class BatchWriter(threading.Thread):
    """Posts 100-record batches to one user's collection until stopped.
    results: every BatchResult, in the order sent."""

    def __init__(self, user, password, coll, prefix, stop, progress, pause=0.05,
                 port=None):
        super().__init__(daemon=True)
        self.port = port
        self.user, self.password, self.coll = user, password, coll
        self.prefix, self.stop, self.progress, self.pause = prefix, stop, progress, pause
        self.results = []
        self.crash = None

    def run(self):
        client = Client(self.user, self.password, port=self.port)
        try:
            b = 0
            while not self.stop.is_set():
                b += 1
                res = post_batch(client, self.user, self.coll, f"{self.prefix}b{b}")
                self.results.append(res)
                if res.ok:
                    self.progress.add()
                else:
                    time.sleep(self.pause)  # down: do not spin
        except Exception as exc:  # reported by the test, never lost
            self.crash = exc
        finally:
            client.close()


class Counter:
    def __init__(self):
        self.lock = threading.Lock()
        self.value = 0

    def add(self):
        with self.lock:
            self.value += 1

    def get(self):
        with self.lock:
            return self.value

    def wait_beyond(self, start, more, timeout):
        """Wait until the count exceeds start by `more`; False on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.get() >= start + more:
                return True
            time.sleep(0.02)
        return False


def verify_batches(results, user, password, read_client=None):
    """Reads every batch back. Returns a dict of figures and a list of
    problems (empty when all is well):
      - a batch the client saw succeed is stored whole, every record with the
        answer's `modified` and its own payload;
      - a failed batch is stored whole (one `modified` for all) or not at all;
      - stored batches of one user never share a `modified`."""
    client = read_client or Client(user, password)
    problems = []
    figures = {"ok": 0, "failed": 0, "failed_stored": 0, "failed_absent": 0,
               "records_lost": 0, "partial": 0}
    stamps = {}
    for res in results:
        ids = batch_ids(res.tag, res.n)
        r = client.request("GET", f"1.0/{user}/storage/{res.coll}?full=1&ids=" + ",".join(ids))
        if r.status != 200:
            problems.append(f"{res}: read back answered {r.status}")
            continue
        stored = {rec["id"]: rec for rec in r.json()}
        for rid, rec in stored.items():
            payload = json.loads(rec["payload"])
            if rid not in ids or payload["batch"] != res.tag or \
                    ids[payload["index"]] != rid:
                problems.append(f"{res}: record {rid} holds {payload['batch']}/{payload['index']}")
        mods = {centi(float(rec["modified"])) for rec in stored.values()}
        if res.ok:
            figures["ok"] += 1
            lost = res.n - len(stored)
            figures["records_lost"] += lost
            if lost:
                problems.append(f"{res}: acknowledged but {lost} of {res.n} records missing")
            if res.header_ts != res.modified:
                problems.append(f"{res}: X-Weave-Timestamp {res.header_ts} != modified {res.modified}")
            if stored and mods != {res.modified}:
                problems.append(f"{res}: stored modified {sorted(mods)} != answered {res.modified}")
        else:
            figures["failed"] += 1
            if stored and len(stored) != res.n:
                figures["partial"] += 1
                problems.append(f"{res}: PARTIAL, {len(stored)} of {res.n} records stored")
            elif stored:
                figures["failed_stored"] += 1
            else:
                figures["failed_absent"] += 1
            if len(mods) > 1:
                problems.append(f"{res}: one request stored with several modified {sorted(mods)}")
        for m in mods:
            if m in stamps and stamps[m] != res.tag:
                problems.append(f"{res}: modified {m} also used by batch {stamps[m]}")
            stamps[m] = res.tag
    if read_client is None:
        client.close()
    return figures, problems


def order_problems(writes):
    """writes: (sent, done, timestamp, label) of the successful writes of ONE
    user. Timestamps must be unique, and a write that finished before another
    was sent must carry the smaller timestamp (timestamps follow commit
    order). Returns a list of problems."""
    problems = []
    seen = {}
    for sent, done, ts, label in writes:
        if ts in seen:
            problems.append(f"duplicate timestamp {ts}: {seen[ts]} and {label}")
        seen[ts] = label
    by_done = sorted(writes, key=lambda w: w[1])
    best = None  # the finished write with the largest timestamp so far
    i = 0
    for w in sorted(writes, key=lambda w: w[0]):
        while i < len(by_done) and by_done[i][1] < w[0]:
            if best is None or by_done[i][2] > best[2]:
                best = by_done[i]
            i += 1
        if best is not None and best[2] >= w[2]:
            problems.append(f"{w[3]} (ts {w[2]}) was sent after {best[3]} (ts {best[2]}) "
                            "had finished, yet its timestamp is not larger")
    return problems


# ---------------------------------------------------------------- processes

# accept(2) and accept4(2): where an idle FastCGI process waits.
_ACCEPT_SYSCALLS = {"x86_64": {43, 288}, "aarch64": {202, 242}}.get(platform.machine(), set())


def session_pids(sid):
    """PIDs of the processes in session SID (Apache's parent is a session
    leader; mod_fcgid's applications share its session)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(rest[3]) == sid:
            pids.append(int(entry))
    return pids


def fcgi_pids(apache_dir):
    """PIDs of the weave.fcgi processes of the Apache in APACHE_DIR."""
    with open(os.path.join(apache_dir, "httpd.pid")) as f:
        sid = int(f.read().strip())
    pids = []
    for pid in session_pids(sid):
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            continue
        if os.path.basename(exe).startswith("weave.fcgi"):
            pids.append(pid)
    return pids


def is_busy(pid):
    """True when the process is not waiting in accept(), i.e. serving a
    request. On an architecture not listed above every live process counts
    as busy; a process that is gone is not."""
    try:
        with open(f"/proc/{pid}/syscall") as f:
            first = f.read().split()[0]
    except (OSError, IndexError):
        return False
    if first == "running" or not _ACCEPT_SYSCALLS:
        return True
    try:
        return int(first) not in _ACCEPT_SYSCALLS
    except ValueError:
        return True


def fcgi_binary(stack_dir):
    """The weave.fcgi the stack's Apache runs (its Alias line)."""
    with open(os.path.join(stack_dir, "apache", "weave.conf")) as f:
        for line in f:
            parts = line.split(None, 2)
            if len(parts) == 3 and parts[0] == "Alias":
                return parts[2].strip().strip('"')
    raise AssertionError("no Alias line in the stack's apache/weave.conf")


def stack_lib_run(script, *args, env=None):
    """Run SCRIPT (bash, with tools/stack.sh sourced) with ARGS as $1...,
    and ENV (a dict) added to the environment; raises AssertionError with
    its output on failure."""
    import subprocess
    lib = os.environ.get("WEAVE_STACK_LIB") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "stack.sh")
    p = subprocess.run(["bash", "-c", f'source "$0"; {script}', lib, *args],
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, **(env or {})})
    if p.returncode != 0:
        raise AssertionError(f"{script} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    return p.stdout


def sanitizer_env():
    """NAME=VALUE of the sanitizer settings the runner was given (ASan
    build): a second Apache passes them on to its weave.fcgi."""
    return [f"{k}={os.environ[k]}" for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS")
            if os.environ.get(k)]


def second_apache(name, settings, port=None):
    """Start another Apache (tools/stack.sh) on PORT (default: a free one),
    serving the stack's weave.fcgi and database with a copy of its config
    in which SETTINGS (a dict) replace or add keys (a value of None leaves
    the key out). Its files go to STACK/NAME (the config: NAME/weave.conf).
    Returns (port, apache_dir); stop it with stack_lib_run's
    stack_apache_stop on apache_dir."""
    import shutil
    stack = weave.STACK_DIR
    assert stack and weave.CONFIG, "WEAVE_STACK_DIR and WEAVE_CONFIG must be set (tests/run)"
    home = os.path.join(stack, name)
    shutil.rmtree(home, ignore_errors=True)
    os.makedirs(home)
    conf = os.path.join(home, "weave.conf")
    with open(weave.CONFIG, encoding="utf-8") as f:
        kept = [line for line in f if line.split("=", 1)[0].strip() not in settings]
    with open(conf, "w", encoding="utf-8") as f:
        f.writelines(kept)
        f.writelines(f"{k} = {v}\n" for k, v in settings.items() if v is not None)
    shutil.chown(conf, group="www-data")
    os.chmod(conf, 0o640)
    port = port or int(stack_lib_run("stack_free_port").strip())
    apache_dir = os.path.join(home, "apache")
    stack_lib_run('stack_apache_start "$@"', apache_dir, str(port), fcgi_binary(stack), conf,
                  *sanitizer_env())
    return port, apache_dir


def check_high_water_mark(port=None):
    """Reads (from kept rows, on the main stack) while writes are in flight:
    every record that ends up with a timestamp at or below a read's
    X-Weave-Timestamp must have been in that read (a client passes that
    timestamp as newer= next time, so a record missing here is never
    fetched). Writers POST new ids; readers list the collection. port:
    another server on the same database (test_no_caches.py)."""
    from concurrent.futures import ThreadPoolExecutor
    from weave import new_user, request
    user, pw = new_user("mark")
    for _ in range(20):
        assert request("GET", f"1.0/{user}/info/collections", user=user, password=pw,
                       port=port).status == 200
    coll = "marks"
    stop = time.monotonic() + 6
    reads, errors = [], []

    def writer(n):
        batch = 0
        while time.monotonic() < stop:
            records = [{"id": f"w{n}b{batch}r{i}", "payload": "x" * 200} for i in range(50)]
            r = request("POST", f"1.0/{user}/storage/{coll}", body=records,
                        user=user, password=pw, port=port)
            if r.status != 200:
                errors.append(r)
            batch += 1

    def reader(_):
        while time.monotonic() < stop:
            r = request("GET", f"1.0/{user}/storage/{coll}", user=user, password=pw,
                        port=port)
            if r.status != 200:
                errors.append(r)
                continue
            reads.append((float(r.headers.get("X-Weave-Timestamp")), set(r.json())))

    with ThreadPoolExecutor(6) as pool:
        jobs = [pool.submit(writer, n) for n in range(2)]
        jobs += [pool.submit(reader, n) for n in range(4)]
        for j in jobs:
            j.result()
    assert not errors, errors[:3]
    final = request("GET", f"1.0/{user}/storage/{coll}?full=1", user=user, password=pw,
                    port=port)
    stored = {rec["id"]: rec["modified"] for rec in final.json()}
    assert len(reads) > 50 and len(stored) > 500, (len(reads), len(stored))
    late = []
    for mark, seen in reads:
        missing = [i for i, m in stored.items() if m <= mark and i not in seen]
        if missing:
            late.append((mark, len(missing), missing[:3]))
    assert not late, f"{len(late)} of {len(reads)} reads missed records at or below their X-Weave-Timestamp: {late[:3]}"


# ---------------------------------------------------------------- SQL

def statements_executed():
    """MariaDB's count of prepared-statement executions so far (all
    clients): how many statements some requests cost."""
    return int(weave.sql("SHOW GLOBAL STATUS LIKE 'Com_stmt_execute'")[0][1])


class SqlSession:
    """An interactive `mariadb` client on the stack's database as root (the
    socket allows it), for tests that must hold locks while the server
    works. run() sends statements and returns their output lines once they
    have all finished; errors come back as "ERROR ..." lines."""

    _MARK = "@@weave-test-done@@"

    def __init__(self, stack_dir):
        import subprocess
        sock = os.path.join(stack_dir, "db", "mysqld.sock")
        self.proc = subprocess.Popen(
            ["mariadb", "--no-defaults", f"--socket={sock}", "--user=root",
             "--batch", "--skip-column-names", "--unbuffered", "--force", "weave"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, bufsize=1)

    def run(self, sql):
        self.proc.stdin.write(f"{sql};\nSELECT '{self._MARK}';\n")
        self.proc.stdin.flush()
        lines = []
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"mariadb client exited; output so far: {lines}")
            line = line.rstrip("\n")
            if line == self._MARK:
                return lines
            lines.append(line)

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.wait(timeout=30)
