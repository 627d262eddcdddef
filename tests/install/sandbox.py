"""A throwaway copy of this host for testing `make install` + `weave-admin setup`.

Sandbox() starts `unshare --mount --net --pid --fork` holding a shell that
mounts an overlay over /etc, /usr, /var, /run, /root and /opt (their
changes land in upper folders under a temporary directory), a fresh tmpfs
on /dev/shm, and brings up the loopback of its own network namespace. So
inside, `make install`, Apache's and MariaDB's files, the certificate and
the daemons' sockets and ports (443 on localhost) are private: nothing is
written to the host's /etc, /usr, /var or /run, and nothing listens on
the host's network. stop() kills the namespace's first process, which
takes every process inside with it (it is the pid namespace's init), and
removes the upper folders.

Needs root (CI runs tests as root) and util-linux's unshare/nsenter.
/tmp stays shared: build trees and test files pass through it.
"""

import os
import shutil
import signal
import subprocess
import tempfile
import time

OVERLAID = ["/etc", "/usr", "/var", "/run", "/root", "/opt"]

INIT = r"""
set -e
mount --make-rprivate /
for d in %(dirs)s; do
    name=$(echo "$d" | tr / _)
    mkdir -p "%(top)s/upper$name" "%(top)s/work$name"
    mount -t overlay overlay -o "lowerdir=$d,upperdir=%(top)s/upper$name,workdir=%(top)s/work$name" "$d"
done
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
ip link set lo up
touch "%(top)s/ready"
exec sleep infinity
"""


class Sandbox:
    def __init__(self):
        if os.geteuid() != 0:
            raise RuntimeError("the install sandbox needs root (unshare, mount)")
        self.top = tempfile.mkdtemp(prefix="weave-install-")
        os.chmod(self.top, 0o755)
        script = INIT % {"dirs": " ".join(OVERLAID), "top": self.top}
        self.proc = subprocess.Popen(
            ["unshare", "--mount", "--net", "--pid", "--fork", "--mount-proc",
             "bash", "-c", script],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 30
        while not os.path.exists(os.path.join(self.top, "ready")):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                out = self.proc.stdout.read().decode(errors="replace") if self.proc.poll() is not None else ""
                self.stop()
                raise RuntimeError("the sandbox did not start: " + out)
            time.sleep(0.05)
        self.init_pid = self._child_of(self.proc.pid)

    @staticmethod
    def _child_of(pid):
        for _ in range(100):
            try:
                with open(f"/proc/{pid}/task/{pid}/children") as f:
                    kids = f.read().split()
                if kids:
                    return int(kids[0])
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("no process inside the sandbox")

    def run(self, argv, input=None, env=None, timeout=600, check=False):
        """argv inside the sandbox; returns CompletedProcess (text)."""
        cmd = ["nsenter", "--target", str(self.init_pid), "--mount", "--net", "--pid",
               "--wd=/"] + list(argv)
        p = subprocess.run(cmd, input=input, env=env, capture_output=True, text=True,
                           timeout=timeout)
        if check and p.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
        return p

    def sh(self, script, **kw):
        return self.run(["bash", "-c", script], **kw)

    def upper_changes(self, directory):
        """Files the sandbox wrote under one overlaid directory (e.g. "/etc")."""
        root = os.path.join(self.top, "upper" + directory.replace("/", "_"))
        found = []
        for base, _dirs, files in os.walk(root):
            for f in files:
                found.append(os.path.join(directory, os.path.relpath(os.path.join(base, f), root)))
        return found

    def stop(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                # The init of the pid namespace: its death ends every process inside.
                os.kill(self.init_pid, signal.SIGKILL)
            except (ProcessLookupError, AttributeError):
                pass
            self.proc.wait(timeout=30)
        # Mounts die with the mount namespace; then the upper folders can go.
        for _ in range(50):
            try:
                shutil.rmtree(self.top)
                return
            except OSError:
                time.sleep(0.1)
        shutil.rmtree(self.top, ignore_errors=True)
