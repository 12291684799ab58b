#!/usr/bin/env python3
"""HLO text shapes that once parsed in quadratic time (issue #18) parse, and
deeper nesting than the parser allows fails with FILE:LINE:COLUMN.

- 300 lines of `negate(f32[] negate(...))` 100 deep: 30,000 negates, 29,700 of them
  nested (anonymous), named negate.anon ... negate.anon.29699 (the
  quadratic version took ~30 s on this; the linear one well under a second);
- an instruction with 40,000 operands, 40,000 instructions on one line,
  20,000 inline to_apply computations, 40,000 explicit names;
- nesting deeper than 128 (nested instructions, inline computations): exit 1,
  "FILE:4:COL: ... nested deeper than 128", no stack overflow.
No timing is asserted: CTest's TIMEOUT (60 s, tests/CMakeLists.txt) is the guard.

Environment: PERFCAST, PC_TEST_TMP. Exit 0 pass, 1 fail.
"""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clitest import expect, report, run, run_checks  # noqa: E402

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_hlo_parse_linear")


def write(name, lines):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def nested(n, d):
    body = ["  a%d = f32[] %sp%s" % (i, "negate(f32[] " * d, ")" * d) for i in range(n)]
    return ["HloModule m", "ENTRY e {", "  p = f32[] parameter(0)"] + body + \
        ["  ROOT r = f32[] negate(a%d)" % (n - 1), "}"]


def roofline_ok(path, what, instructions):
    p = run("roofline", "--chip", "h100-sxm", "--hlo", path, "--json")
    expect(p.returncode == 0, "%s: exit %d: %s" % (what, p.returncode, p.stderr[-300:]))
    if p.returncode == 0:
        got = json.loads(p.stdout)["hlo"]["instructions"]
        expect(got == instructions, "%s: %s instructions, want %d" % (what, got, instructions))


def check_nested():
    roofline_ok(write("nested.hlo", nested(300, 100)), "300 x 100 nested", 2 + 300 * 100)
    out = os.path.join(TMP, "imp")
    p = run("import", os.path.join(TMP, "nested.hlo"), "--out", out)
    expect(p.returncode == 0, "import of the nested file: %s" % p.stderr[-300:])


def check_wide():
    n = 40000
    roofline_ok(write("ops.hlo", ["HloModule m", "ENTRY e {", "  p = f32[] parameter(0)",
                                  "  ROOT t = (%s) tuple(%s)" % (",".join(["f32[]"] * n), ", ".join(["p"] * n)),
                                  "}"]), "40000 operands", 2)
    body = " ".join("a%d = f32[] negate(a%d)" % (i, i - 1) for i in range(1, n))
    roofline_ok(write("line.hlo", ["HloModule m", "ENTRY e { a0 = f32[] parameter(0) " + body + " }"]),
                "one line", n)
    m = 20000
    lines = ["HloModule m", "ENTRY e {", "  p = f32[4] parameter(0)", "  z = f32[] constant(0)"]
    lines += ["  r%d = f32[] reduce(p, z), dimensions={0}, to_apply={ a = f32[] parameter(0) "
              "b = f32[] parameter(1) ROOT s = f32[] add(a, b) }" % i for i in range(m)]
    roofline_ok(write("inline.hlo", lines + ["  ROOT t = f32[] add(r0, r%d)" % (m - 1), "}"]),
                "inline computations (entry)", 3 + m)
    lines = ["HloModule m", "ENTRY e {", "  p = f32[] parameter(0)"]
    lines += ["  negate.anon.%d = f32[] negate(p)" % i for i in range(1, n)]
    lines += ["  ROOT t = f32[] add(f32[] negate(p), f32[] negate(p))", "}"]
    roofline_ok(write("names.hlo", lines), "explicit .anon names", n + 3)


def check_depth():
    d = 129
    p = run("roofline", "--chip", "h100-sxm", "--hlo",
            write("deep.hlo", ["HloModule m", "ENTRY e {", "  p = f32[] parameter(0)",
                               "  ROOT r = f32[] " + "negate(" * d + "p" + ")" * d, "}"]))
    expect(p.returncode == 1 and "deep.hlo:4:" in p.stderr and "nested deeper than 128" in p.stderr,
           "129 nested instructions: exit %d: %s" % (p.returncode, p.stderr[-300:]))
    inner = "{ x = f32[] parameter(0) ROOT y = f32[] negate(x) }"
    for _ in range(d):
        inner = "{ a = f32[] parameter(0) ROOT s = f32[] reduce(a, a), dimensions={}, to_apply=%s }" % inner
    p = run("roofline", "--chip", "h100-sxm", "--hlo",
            write("deepc.hlo", ["HloModule m", "ENTRY e {", "  p = f32[4] parameter(0)",
                                "  ROOT r = f32[] reduce(p, p), dimensions={0}, to_apply=" + inner, "}"]))
    expect(p.returncode == 1 and "deepc.hlo:4:" in p.stderr and "nested deeper than 128" in p.stderr,
           "129 nested computations: exit %d: %s" % (p.returncode, p.stderr[-300:]))


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    run_checks([check_nested, check_wide, check_depth])
    return report("hlo parse linear: all checks passed")


if __name__ == "__main__":
    sys.exit(main())
