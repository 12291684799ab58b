#!/usr/bin/env python3
"""Memory after parsing (issue #18): `roofline` budgets the cost rows, `import` the
samples it builds before writing, both against --max-memory (pc_hlo_cost_opts /
pc_import_opts.max_memory).

- A 60 KB HLO file of 300 whiles over one 150-instruction body is 45,000 rows with
  --loop-ops: a budget the parse fits in (its bound is ~2 MiB) but the rows do not is
  refused naming the file and the rows, exit 1, no --svg left; without --loop-ops the
  same budget gives the default output; a roomy budget gives the default output.
- `import` of text and of a tuning .pb with a budget that fits gives the default files;
  the text and --json documents of roofline are the same with and without a budget.

Environment: PERFCAST, PC_TEST_TMP.
"""
import filecmp
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clitest import expect, expect_rc, report, run, run_checks  # noqa: E402

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_memory_cost_rows")


def loops_hlo(body=150, whiles=300, name="loops.hlo"):
    """Entry: `whiles` while loops over one body of `body` negates (--loop-ops: one row per
    body instruction per while)."""
    lines = ["HloModule loops", "", "body {", "  p = (s32[], f32[16]) parameter(0)",
             "  i = s32[] get-tuple-element(p), index=0",
             "  x0 = f32[16] get-tuple-element(p), index=1"]
    lines += ["  x%d = f32[16] negate(x%d)" % (j, j - 1) for j in range(1, body + 1)]
    lines += ["  one = s32[] constant(1)", "  i2 = s32[] add(i, one)",
              "  ROOT t = (s32[], f32[16]) tuple(i2, x%d)" % body, "}", "", "cond {",
              "  p = (s32[], f32[16]) parameter(0)", "  i = s32[] get-tuple-element(p), index=0",
              "  n = s32[] constant(4)", "  ROOT lt = pred[] compare(i, n), direction=LT", "}",
              "", "ENTRY main {", "  a = f32[16] parameter(0)", "  z = s32[] constant(0)",
              "  t0 = (s32[], f32[16]) tuple(z, a)"]
    for k in range(1, whiles + 1):
        lines.append("  w%d = (s32[], f32[16]) while(t%d), condition=cond, body=body" % (k, k - 1))
        lines.append("  t%d = (s32[], f32[16]) tuple(z, a)" % k)
    lines += ["  ROOT r = f32[16] get-tuple-element(w%d), index=1" % whiles, "}"]
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def check_roofline_rows():
    hlo = loops_hlo()
    svg = os.path.join(TMP, "rows.svg")
    base = ["roofline", "--chip", "h100", "--hlo", hlo]
    # the rows need ~10 MiB (45k x 224 bytes); the parse bound is ~2 MiB
    p = run(*base, "--loop-ops", "--max-memory", "6MiB", "--svg", svg)
    expect(p.returncode == 1 and hlo in p.stderr and "cost rows" in p.stderr and
           "--max-memory budget of 6.0 MiB" in p.stderr,
           "roofline --loop-ops over the rows' budget: exit %d, %r" % (p.returncode, p.stderr))
    expect(not os.path.exists(svg), "roofline over the budget left %s" % svg)
    p = run(*base, "--loop-ops", "--max-memory", "6MiB", "--json")
    out = p.stdout + p.stderr
    expect(p.returncode == 1 and '"file":"%s"' % hlo in out.replace(" ", "") and
           "cost rows" in out, "roofline --json over the budget: %d %r"
           % (p.returncode, out[-400:]))
    for extra in (["--json"], ["--json", "--top", "0"], []):
        d = run(*base, *extra)
        s = run(*base, *extra, "--max-memory", "6MiB")
        expect_rc(d, 0, "roofline %s" % extra)
        expect(s.returncode == 0 and s.stdout == d.stdout,
               "roofline %s --max-memory 6MiB (no --loop-ops) differs from the default" % extra)
        d = run(*base, "--loop-ops", *extra)
        s = run(*base, "--loop-ops", *extra, "--max-memory", "64MiB")
        expect(d.returncode == 0 and s.returncode == 0 and s.stdout == d.stdout,
               "roofline --loop-ops %s --max-memory 64MiB differs from the default" % extra)


def check_import_fits():
    hlo = loops_hlo(40, 20, "small_loops.hlo")
    for mm in ("64MiB", "1GiB"):
        a, b = os.path.join(TMP, "imp_a"), os.path.join(TMP, "imp_b")
        shutil.rmtree(a, ignore_errors=True)
        shutil.rmtree(b, ignore_errors=True)
        expect_rc(run("import", hlo, "--out", a, "--quiet"), 0, "import loops.hlo")
        expect_rc(run("import", hlo, "--out", b, "--quiet", "--max-memory", mm), 0,
                  "import loops.hlo --max-memory " + mm)
        names = sorted(os.listdir(a)) if os.path.isdir(a) else []
        expect(names and names == sorted(os.listdir(b)) and
               all(filecmp.cmp(os.path.join(a, n), os.path.join(b, n), shallow=False)
                   for n in names), "import --max-memory %s wrote other files" % mm)
    p = run("import", hlo, "--out", os.path.join(TMP, "imp_c"), "--max-memory", "100KiB")
    expect(p.returncode == 1 and hlo in p.stderr and "budget of 100 KiB" in p.stderr,
           "import under its budget: %d %r" % (p.returncode, p.stderr))
    expect(not os.path.exists(os.path.join(TMP, "imp_c")) or
           not os.listdir(os.path.join(TMP, "imp_c")), "import over the budget left files")


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    run_checks([check_roofline_rows, check_import_fits])
    return report("roofline's cost rows and import's samples within --max-memory")


if __name__ == "__main__":
    sys.exit(main())
