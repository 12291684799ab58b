"""Progress of reading and parsing a large HLO file (src/hlo/text_input.c, text_parse.c,
proto.c; src/cli/progress.c): a multi-MB HLO text shows "perfcast CMD: 1.2/6.0 MB read"
and "... MB parsed" lines with sizes on a terminal (roofline, import), a multi-MB .pb
"... MB read" and "... MB decoded"; nothing on a pipe or under --json, and the same
output either way; a file under 4 MiB shows none.
Also: no `#pragma omp critical` in src/: an unnamed one serializes with every other, a
named one is process-wide too and exported from libperfcast.so; progress calls from a
parallel loop take the call's own omp_lock_t (synth.c, cache.c).
"""
import os
import re
import shutil
import sys

import hloproto as H
from clitest import FAILS, expect, expect_rc, report, run, run_checks
from test_progress import expect_quiet, run_tty

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_progress_bytes")
BIG = os.path.join(TMP, "big.hlo")
SMALL = os.path.join(TMP, "small.hlo")
PB = os.path.join(TMP, "big.pb")
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src")
BYTES = re.compile(r"^perfcast (\w+): ([\d.]+)/([\d.]+) (kB|MB|GB) (read|parsed|decoded)"
                   r"(?:, [\d.]+ (?:kB|MB|GB)/s)?(?:, ETA \S+)?(?: in (\S+))?$")


def write_hlo(path, n):
    """A chain of n negates: about 60 bytes of text per instruction."""
    lines = ["HloModule big", "", "ENTRY main {", "  p0 = f32[64,64]{1,0} parameter(0)"]
    prev = "p0"
    for i in range(n):
        lines.append('  n%d = f32[64,64]{1,0} negate(%s), metadata={op_name="x"}' % (i, prev))
        prev = "n%d" % i
    lines += ["  ROOT r = f32[64,64]{1,0} negate(%s)" % prev, "}", ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))


def write_pb(path, modules, n):
    """A TuningData of `modules` modules, each a chain of n negates (f32[4])."""
    def one(k):
        insts = [H.inst("p", "parameter", 1, 11, [4])]
        insts += [H.inst("n%d" % i, "negate", i + 2, 11, [4], operands=[i + 1]) for i in range(n)]
        mod = H.module("m%d" % k, [H.comp("entry", 1, n + 1, insts)], 1)
        return H.module_tuning(mod, [H.tile_run(5, output=[1], default=True)])
    data = H.tuning_data([one(k) for k in range(modules)])
    with open(path, "wb") as f:
        f.write(data)


def byte_lines(err, cmd):
    got = []
    for part in re.split(r"[\r\n]", err):
        part = part.replace("\x1b[K", "")
        if part.startswith("perfcast %s: " % cmd):
            m = BYTES.match(part)
            if m:
                got.append((float(m.group(2)), float(m.group(3)), m.group(4), m.group(5),
                            m.group(6)))
    return got


def expect_bytes(err, cmd, verb, path=BIG):
    got = [g for g in byte_lines(err, cmd) if g[3] == verb]
    size = os.path.getsize(path) / 1e6
    expect(got, "%s: no 'MB %s' line on the terminal: %r" % (cmd, verb, err[-1500:]))
    if not got:
        return
    done, tot, unit, _, final = got[-1]
    expect(unit == "MB" and abs(tot - size) < 0.06 and done == tot and final is not None,
           "%s: the last '%s' line is not a finished %.1f/%.1f MB one: %r" %
           (cmd, verb, size, size, got[-1]))
    counts = [g[0] for g in got]
    expect(counts == sorted(counts), "%s: %s counts go backwards: %r" % (cmd, verb, counts))


def check_roofline():
    args = ["roofline", "--chip", "v5e", "--hlo", BIG, "--top", "3"]
    rc, out, err = run_tty(*args)
    expect(rc == 0, "roofline on a terminal: exit %d\n%s" % (rc, err[-1000:]))
    expect_bytes(err, "roofline", "read")
    expect_bytes(err, "roofline", "parsed")
    p = run(*args)
    expect_rc(p, 0, "roofline on a pipe")
    expect_quiet(p, "roofline")
    expect("MB parsed" not in p.stderr, "roofline on a pipe: %r" % p.stderr[-500:])
    expect(p.stdout == out, "roofline: stdout differs with progress on a terminal")
    rc, jout, err = run_tty(*args, "--json")
    expect(rc == 0 and "\r" not in err and "MB" not in err,
           "roofline --json on a terminal drew progress: %r" % err[-500:])
    rc, _, err = run_tty("roofline", "--chip", "v5e", "--hlo", SMALL, "--top", "3")
    expect(rc == 0 and not byte_lines(err, "roofline") and "\r" not in err,
           "roofline of a small file drew a bytes line: %r" % err[-500:])


def check_pb():
    args = ["roofline", "--chip", "v5e", "--hlo", PB, "--top", "3"]
    rc, out, err = run_tty(*args)
    expect(rc == 0, "roofline .pb on a terminal: exit %d\n%s" % (rc, err[-1000:]))
    expect_bytes(err, "roofline", "read", PB)
    expect_bytes(err, "roofline", "decoded", PB)
    p = run(*args)
    expect_rc(p, 0, "roofline .pb on a pipe")
    expect_quiet(p, "roofline .pb")
    expect(p.stdout == out, "roofline .pb: stdout differs with progress on a terminal")


def check_import():
    out_dir = os.path.join(TMP, "imported")
    rc, out, err = run_tty("import", BIG, "--out", out_dir)
    expect(rc == 0, "import on a terminal: exit %d\n%s" % (rc, err[-1000:]))
    expect_bytes(err, "import", "read")
    expect_bytes(err, "import", "parsed")
    shutil.rmtree(out_dir, ignore_errors=True)
    p = run("import", BIG, "--out", out_dir)
    expect_rc(p, 0, "import on a pipe")
    expect_quiet(p, "import")


def check_no_criticals():
    bad = []
    for root, _, files in os.walk(SRC):
        for name in files:
            if name.endswith((".c", ".h")):
                path = os.path.join(root, name)
                with open(path, errors="replace") as f:
                    for no, line in enumerate(f, 1):
                        if re.match(r"\s*#\s*pragma\s+omp\s+critical\b", line):
                            bad.append("%s:%d" % (os.path.relpath(path, SRC), no))
    expect(not bad, "'#pragma omp critical' (take the call's own omp_lock_t): %s"
           % ", ".join(bad))


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    write_hlo(BIG, 90000)   # about 6 MB: over the 4 MiB threshold
    write_hlo(SMALL, 5000)  # about 0.3 MB: no line
    write_pb(PB, 300, 600)  # about 5 MB
    run_checks([check_roofline, check_pb, check_import, check_no_criticals])
    return report("progress: bytes read and parsed of a large HLO file")


if __name__ == "__main__":
    sys.exit(main())
