"""Every --help fits an 80-column terminal (issue 25 item 11): weave-admin's
overview and each command's help, weave.fcgi's usage, and the scripts an
admin or developer runs. Commands are read from the overview itself, so a
new command is covered without touching this file."""

import os
import re
import subprocess

import weave

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPTS = ["tests/run", "tools/quickstart", "bench/run", "tests/cluster", "tests/fuzz/run",
           "tests/soak/run"]


def output(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=ROOT)
    return p.stdout + p.stderr


def too_wide(text):
    return [line for line in text.splitlines() if len(line.expandtabs()) > 80]


def admin_commands():
    overview = output([weave.ADMIN, "--help"])
    block = overview.split("\nCommands:\n", 1)[1].split("\n\n", 1)[0]
    return [m.group(1) for m in re.finditer(r"^  ([a-z][a-z-]*(?: [a-z-]+)?)\s{2,}", block, re.M)]


def test_every_help_fits_80_columns():
    commands = admin_commands()
    assert len(commands) >= 30 and "user add" in commands and "check" in commands, commands
    texts = {"weave-admin --help": output([weave.ADMIN, "--help"])}
    for c in commands:
        texts[f"weave-admin {c} --help"] = output([weave.ADMIN, *c.split(), "--help"])
    texts["weave.fcgi (usage)"] = output([weave.FCGI, "--no-such-option"])
    for s in SCRIPTS:
        texts[f"{s} --help"] = output([os.path.join(ROOT, s), "--help"])
    for what, text in texts.items():
        assert text.strip(), f"{what} printed nothing"
    wide = {what: too_wide(text) for what, text in texts.items() if too_wide(text)}
    assert not wide, wide
    # Each command's help really is its own (not the overview again).
    assert "Usage: weave-admin [--config FILE] user add" in texts["weave-admin user add --help"]
