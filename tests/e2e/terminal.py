"""A command run as a person at a terminal runs it: its stderr (and, when
there are answers to type, its stdin) on a new pseudo-terminal of a given
width. weave-admin draws progress bars and asks questions only there.

Used by the e2e suite (progress bars) and by tests/install (the questions
of `weave-admin setup`); both run through tests/e2e/runner.py, which puts
this directory on sys.path.
"""

import fcntl
import os
import pty
import struct
import subprocess
import termios


def run_on_terminal(argv, columns=80, answers=None, timeout=120):
    """Run argv to its end; return (the finished process with its stdout,
    what the terminal showed, decoded). answers (bytes) are typed in before
    it starts, and its stdin is the terminal too; without them stdin is
    left as it is. What it shows is read once it has ended, so it must
    show less than the terminal buffers (a few KB)."""
    master, slave = pty.openpty()
    try:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        if answers is not None:
            os.write(master, answers)
        p = subprocess.run(argv, stdin=slave if answers is not None else None,
                           stdout=subprocess.PIPE, stderr=slave, timeout=timeout)
        os.close(slave)
        slave = None
        shown = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: nothing left, the other side is closed
                break
            if not chunk:
                break
            shown += chunk
    finally:
        if slave is not None:
            os.close(slave)
        os.close(master)
    return p, shown.decode("utf-8", "replace")
