"""Shared helpers of the CLI script tests (test_cli, test_train, test_predict).

Each test collects failures in FAILS instead of stopping at the first, so one
run reports every broken expectation.
"""
import os
import subprocess

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
