"""A tiny test runner for the end-to-end tests (standard library only).

usage: /usr/bin/python3 tests/e2e/runner.py [-k SUBSTRING] [FILE...]

Runs every function named test_* in tests/e2e/test_*.py (or the FILEs
given), file by file and in the order they are written: the files in
alphabetical order, except those in RUN_LAST, which come after the others
in the order listed there. -k keeps only the
tests whose "file::name" contains SUBSTRING. Prints "ok   file::name" or
"FAIL file::name" with the message and traceback, then one closing line
"N passed, M failed". Exits 1 if any test failed or none ran.
"""

import argparse
import glob
import importlib.util
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))

# Files that need every other file to have run first. The log scan reads
# what all the other tests made the server write.
RUN_LAST = ["test_logs_hold_no_secrets.py"]


def default_files():
    files = sorted(glob.glob(os.path.join(HERE, "test_*.py")))
    last = [os.path.join(HERE, name) for name in RUN_LAST]
    missing = [path for path in last if path not in files]
    if missing:
        sys.exit(f"runner: RUN_LAST names missing files: {missing}")
    return [path for path in files if path not in last] + last


def load(path):
    name = "e2e_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tests_in(module):
    # Module dicts keep definition order; skip test_* names imported from elsewhere.
    return [(name, obj) for name, obj in vars(module).items()
            if name.startswith("test_") and callable(obj)
            and getattr(obj, "__module__", None) == module.__name__]


def report_failure(label, exc):
    print(f"FAIL {label}")
    if isinstance(exc, AssertionError) and str(exc):
        print("    " + str(exc).replace("\n", "\n    "))
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    print("    " + tb.rstrip().replace("\n", "\n    "))


def main():
    ap = argparse.ArgumentParser(description="weave-server end-to-end tests")
    ap.add_argument("-k", dest="pattern", default="", help="run tests whose file::name contains this")
    ap.add_argument("files", nargs="*", help="test files (default: tests/e2e/test_*.py)")
    args = ap.parse_args()

    files = args.files or default_files()
    sys.path.insert(0, HERE)  # so tests can `import weave`
    passed = failed = 0
    started = time.monotonic()
    for path in files:
        fname = os.path.basename(path)
        try:
            module = load(path)
        except Exception as exc:  # a broken file is one failure, not a crash
            report_failure(f"{fname}::<import>", exc)
            failed += 1
            continue
        for name, fn in tests_in(module):
            label = f"{fname}::{name}"
            if args.pattern not in label:
                continue
            t0 = time.monotonic()
            try:
                fn()
            except Exception as exc:
                report_failure(label, exc)
                failed += 1
            else:
                took = time.monotonic() - t0
                print(f"ok   {label}" + (f"  ({took:.1f}s)" if took >= 2 else ""))
                passed += 1
            sys.stdout.flush()
    if passed + failed == 0:
        print("runner: no tests ran", file=sys.stderr)
    print(f"e2e took {time.monotonic() - started:.1f}s", file=sys.stderr)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
