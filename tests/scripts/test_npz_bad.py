#!/usr/bin/env python3
"""Must-fail files: every file in tests/data/bad/ is rejected cleanly.

For each file, `pc_npz_tool readall` (.npz) or `pc_npz_tool load` (.npy)
must: exit with status 1 (not 0, not a signal, not a hang: 10 s limit),
print a message on stderr that names the file, and not fail for lack of
memory (a lying header must be caught before allocating; the tool runs
under a 2 GiB address-space limit so a huge allocation shows up as an
"out of memory" error rather than succeeding by overcommit).
`pc_npz_tool info` must not crash or hang either (it may succeed: it reads
headers only). When the CLI ($PERFCAST) has an `info` command, it must
reject every file too (non-zero exit, no signal, file named).

Environment (set by tests/CMakeLists.txt): PC_NPZ_TOOL, PERFCAST,
PC_TEST_DATA, PC_TEST_TMP. Only the standard library is needed.
"""
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("PC_TEST_DATA") or os.path.join(HERE, "..", "data")
BAD = os.path.join(DATA, "bad")
TOOL = os.environ.get("PC_NPZ_TOOL")
CLI = os.environ.get("PERFCAST")
TMP = os.environ.get("PC_TEST_TMP") or "/tmp/pc_test_npz_bad"
TIMEOUT = 10
AS_LIMIT = 2 << 30

FAILS = []


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


def run(cmd, limit):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                           timeout=TIMEOUT, preexec_fn=limit_memory if limit else None)
    except subprocess.TimeoutExpired:
        return None, "", TIMEOUT
    return p.returncode, p.stderr, time.time() - t0


def memory_limit_usable():
    """Sanitizer builds reserve terabytes of address space: no limit then."""
    rc, err, _ = run([TOOL], True)
    return rc == 2 and "usage" in err


def check_rejected(label, cmd, path, limit, exact_exit=True):
    rc, err, dt = run(cmd, limit)
    name = os.path.basename(path)
    if rc is None:
        FAILS.append("%s %s: still running after %d s" % (label, name, TIMEOUT))
    elif rc < 0:
        FAILS.append("%s %s: killed by signal %d\n    %s" % (label, name, -rc, err.strip()[-2000:]))
    elif rc == 0:
        FAILS.append("%s %s: accepted (exit 0); must fail" % (label, name))
    elif exact_exit and rc != 1:
        FAILS.append("%s %s: exit %d, expected 1\n    %s" % (label, name, rc, err.strip()))
    elif rc >= 126:
        FAILS.append("%s %s: exit %d (crash?)\n    %s" % (label, name, rc, err.strip()))
    elif not err.strip():
        FAILS.append("%s %s: no message on stderr" % (label, name))
    elif path not in err:
        FAILS.append("%s %s: message does not name the file: %s" % (label, name, err.strip()))
    elif "out of memory" in err:
        FAILS.append("%s %s: ran out of memory (allocation driven by a header?): %s" % (
            label, name, err.strip()))
    else:
        print("  ok %-40s %5.2f s  %s" % (name, dt, err.strip().splitlines()[0][:300]))
        return
    print("  FAIL", FAILS[-1].splitlines()[0])


def check_no_crash(label, cmd, path, limit):
    rc, err, _ = run(cmd, limit)
    name = os.path.basename(path)
    if rc is None:
        FAILS.append("%s %s: still running after %d s" % (label, name, TIMEOUT))
    elif rc not in (0, 1):
        FAILS.append("%s %s: exit %d\n    %s" % (label, name, rc, err.strip()[-2000:]))
    elif rc == 1 and path not in err:
        FAILS.append("%s %s: message does not name the file: %s" % (label, name, err.strip()))


def cli_has_info():
    if not CLI or not os.access(CLI, os.X_OK):
        return False
    try:
        p = subprocess.run([CLI, "info", "--help"], capture_output=True, timeout=TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return p.returncode == 0


def main():
    if not TOOL or not os.access(TOOL, os.X_OK):
        print("FAIL: PC_NPZ_TOOL (%r) is not an executable; run through ctest" % TOOL)
        return 1
    os.makedirs(TMP, exist_ok=True)
    files = sorted(f for f in os.listdir(BAD) if f.endswith((".npz", ".npy")))
    if len(files) < 20:
        print("FAIL: only %d files in %s (run tests/data/make_bad_files.py)" % (len(files), BAD))
        return 1
    limit = memory_limit_usable()
    print("%d must-fail files in %s; address-space limit %s" % (
        len(files), BAD, "%d MiB" % (AS_LIMIT >> 20) if limit else "off (sanitizer build?)"))
    t0 = time.time()

    # control: a good archive passes, so failures below are about the files
    sys.path.insert(0, DATA)
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    import make_bad_files as mb
    good = os.path.join(TMP, "good.npz")
    with open(good, "wb") as f:
        f.write(mb.build_zip(mb.good_members()))
    rc, err, _ = run([TOOL, "readall", good], limit)
    if rc != 0:
        print("FAIL: control archive %s rejected (exit %s): %s" % (good, rc, err.strip()))
        return 1

    for name in files:
        path = os.path.join(BAD, name)
        if name.endswith(".npz"):
            check_rejected("readall", [TOOL, "readall", path], path, limit)
            check_no_crash("info", [TOOL, "info", path], path, limit)
        else:
            check_rejected("load", [TOOL, "load", path], path, limit)
            check_no_crash("header", [TOOL, "header", path], path, limit)
            check_no_crash("map", [TOOL, "map", path], path, limit)

    if cli_has_info():
        print("checking `%s info` on every file" % CLI)
        for name in files:
            path = os.path.join(BAD, name)
            check_rejected("perfcast info", [CLI, "info", path], path, limit, exact_exit=False)
    else:
        print("SKIP perfcast info half: `%s info --help` does not exit 0" % CLI)

    print("%.1f s" % (time.time() - t0))
    if FAILS:
        print("\n%d failure(s):" % len(FAILS))
        for f in FAILS:
            print(" -", f)
        return 1
    print("all %d files rejected cleanly" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
