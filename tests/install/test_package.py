"""The Debian package (issue 25, "a Debian package"): built with
`dpkg-buildpackage -us -uc -b` from debian/ in a copy of this checkout,
checked with lintian, then installed in the install sandbox (sandbox.py:
overlays over /etc /usr /var /run, its own network and pids), set up and
checked there, and purged: nothing it or setup made may be left but the
database, which purge keeps on purpose and names.

Run by tests/package (which installs the build tools through tools/deps);
by hand, as root: /usr/bin/python3 tests/e2e/runner.py tests/install/test_package.py
WEAVE_PACKAGE_DEB=FILE tests a .deb already built instead of building one.
"""

import atexit
import glob
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import sandbox  # noqa: E402

S = {}
CONF = "/etc/weave/weave.conf"
# Everything the package or weave-admin setup creates on the host.
MADE = ["/usr/sbin/weave-admin", "/usr/libexec/weave/weave.fcgi", "/usr/share/weave-server",
        "/etc/cron.d/weave-server", "/etc/logrotate.d/weave-server", "/var/log/weave-server",
        "/etc/weave", "/etc/apache2/conf-available/weave.conf",
        "/etc/apache2/sites-available/weave-ssl.conf", "/etc/apache2/conf-enabled/weave.conf",
        "/etc/apache2/sites-enabled/weave-ssl.conf", "/usr/share/doc/weave-server",
        "/usr/share/man/man8/weave-admin.8.gz", "/usr/share/bash-completion/completions/weave-admin"]


def box():
    if "box" not in S:
        S["box"] = sandbox.Sandbox()
        atexit.register(S["box"].stop)
    return S["box"]


def sh(script, check=True, timeout=600):
    p = box().sh(script, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"in the sandbox: {script}\nexit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def version():
    return subprocess.run([os.path.join(ROOT, "tools", "version-gen")], capture_output=True,
                          text=True, check=True).stdout


def checkout_copy(dest):
    """The tracked and new (not ignored) files of this checkout, as they are now."""
    files = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "-c", "-o", "--exclude-standard"],
                           capture_output=True, check=True).stdout.split(b"\0")
    for f in filter(None, (x.decode() for x in files)):
        src = os.path.join(ROOT, f)
        if not os.path.isfile(src):
            continue
        os.makedirs(os.path.dirname(os.path.join(dest, f)), exist_ok=True)
        shutil.copy2(src, os.path.join(dest, f))


def test_package_builds_with_dpkg_buildpackage():
    deb = os.environ.get("WEAVE_PACKAGE_DEB")
    if not deb:
        work = tempfile.mkdtemp(prefix="weave-package-")
        atexit.register(shutil.rmtree, work, True)
        S["version"] = version()
        src = os.path.join(work, f"weave-server-{S['version']}")
        checkout_copy(src)
        with open(os.path.join(src, "debian", "changelog"), "w") as f:
            f.write(f"weave-server ({S['version']}) unstable; urgency=medium\n\n"
                    "  * Built by tests/package from a git checkout.\n\n"
                    " -- weave-server developers <weave-server@example.org>  "
                    f"{subprocess.run(['date', '-R'], capture_output=True, text=True).stdout}")
        env = dict(os.environ, DEB_BUILD_OPTIONS="nocheck parallel=2")
        p = subprocess.run(["dpkg-buildpackage", "-us", "-uc", "-b"], cwd=src, env=env,
                           capture_output=True, text=True, timeout=3600)
        assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
        debs = glob.glob(os.path.join(work, "weave-server_*.deb"))
        assert len(debs) == 1, os.listdir(work)
        deb = debs[0]
        S["changes"] = glob.glob(os.path.join(work, "weave-server_*.changes"))[0]
    S["deb"] = deb
    info = subprocess.run(["dpkg-deb", "-f", deb, "Version", "Depends"], capture_output=True,
                          text=True, check=True).stdout
    assert "libapache2-mod-fcgid" in info, info
    if "version" in S:
        assert f"Version: {S['version']}\n" in info, (info, S["version"])
    listing = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True, text=True,
                             check=True).stdout
    for path in ("./usr/sbin/weave-admin", "./usr/libexec/weave/weave.fcgi",
                 "./usr/share/weave-server/apache-weave.conf", "./etc/cron.d/weave-server",
                 "./etc/logrotate.d/weave-server", "./usr/share/doc/weave-server/operations.md"):
        assert path in listing, (path, listing)
    conffiles = subprocess.run(["dpkg-deb", "--ctrl-tarfile", deb], capture_output=True).stdout
    assert b"conffiles" in conffiles


def test_lintian_finds_no_errors():
    target = S.get("changes") or S["deb"]
    p = subprocess.run(["lintian", "--fail-on", "error", "--tag-display-limit", "0", target],
                       capture_output=True, text=True, timeout=900)
    errors = [line for line in p.stdout.splitlines() if line.startswith("E:")]
    assert p.returncode == 0 and not errors, p.stdout + p.stderr


def test_installs_and_sets_up_in_the_sandbox():
    deb = S["deb"]
    shutil.copy(deb, os.path.join(box().top, "weave-server.deb"))
    p = sh(f"dpkg -i {box().top}/weave-server.deb")
    assert "run 'weave-admin setup'" in p.stdout, p.stdout
    out = sh("weave-admin --version").stdout.strip()
    if "version" in S:
        assert out == f"weave-admin {S['version']}", out
    conffiles = sh("cat /var/lib/dpkg/info/weave-server.conffiles").stdout.split()
    assert conffiles == ["/etc/cron.d/weave-server", "/etc/logrotate.d/weave-server"], conffiles
    cron = sh("cat /etc/cron.d/weave-server").stdout
    assert "weave-admin purge --quiet" in cron and " root " in cron, cron
    sh("mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld && "
       "(setsid mariadbd --user=mysql >>/var/log/weave-test-mariadb.log 2>&1 </dev/null &) && "
       "for i in $(seq 100); do mariadb -e 'select 1' >/dev/null 2>&1 && exit 0; sleep 0.2; done; exit 1")
    p = sh("weave-admin setup --yes --server-name localhost", check=False)
    assert p.returncode == 0 and "no problems found" in p.stdout, p.stdout + p.stderr
    code = sh("curl -s -o /dev/null -w '%{http_code}' --cacert /etc/weave/tls/localhost.crt "
              "https://localhost/weave/health").stdout
    assert code == "200", code
    # The purge job runs as cron would run it.
    sh("grep -v '^#' /etc/cron.d/weave-server | grep weave-admin | "
       "sed -E 's/^([^ ]+ +){6}//' | sh -e")
    sh("test -f /var/log/weave-server/purge.log")
    for path in MADE:
        assert sh(f"test -e {path}", check=False).returncode == 0, f"{path} missing after setup"


def test_purge_removes_what_it_made_and_keeps_the_database():
    p = sh("apt-get purge -y weave-server 2>&1 || dpkg --purge weave-server")
    assert "DROP DATABASE weave" in p.stdout, p.stdout
    left = [path for path in MADE if sh(f"test -e {path}", check=False).returncode == 0]
    assert left == [], left
    assert sh("ls /dev/shm/weave-server-* 2>/dev/null", check=False).stdout == ""
    assert sh("dpkg -s weave-server", check=False).returncode != 0
    # Apache still starts with what is left; the database is still there.
    sh("apache2ctl configtest")
    assert "weave" in sh("mariadb -N -e 'SHOW DATABASES'").stdout.split()


def test_zz_sandbox_stops():
    box().stop()
    assert not os.path.exists(box().top)
