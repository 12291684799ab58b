"""Shared helpers of the CLI script tests (test_cli, test_train, test_predict).

Each test collects failures in FAILS instead of stopping at the first, so one
run reports every broken expectation.
"""
import os
import subprocess
import traceback

CLI = os.environ["PERFCAST"]
FAILS = []


def run(*args, timeout=120):
    p = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=timeout)
    if p.returncode < 0:
        FAILS.append("%s: killed by signal %d\n%s" % (" ".join(args), -p.returncode, p.stderr))
    return p


def expect(cond, what):
    if not cond:
        FAILS.append(what)


def expect_rc(p, rc, what):
    expect(p.returncode == rc, "%s: exit %d, expected %d\nstdout: %s\nstderr: %s"
           % (what, p.returncode, rc, p.stdout[-2000:], p.stderr[-2000:]))


def run_checks(checks):
    """Runs each check; an exception is recorded as a failure (with its
    traceback) instead of ending the run, so the report lists everything."""
    for check in checks:
        try:
            check()
        except Exception:  # noqa: BLE001 - any crash of a check is a failure to report
            FAILS.append("check raised:\n" + traceback.format_exc())


def report(ok_message):
    """Prints the failures (or ok_message) and returns the exit status."""
    if FAILS:
        print("%d failure(s):" % len(FAILS))
        for f in FAILS:
            print(" -", f)
        return 1
    print(ok_message)
    return 0
