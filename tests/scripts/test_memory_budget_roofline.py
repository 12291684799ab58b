#!/usr/bin/env python3
"""`roofline` and `import` honour --max-memory (issue #18), with the meaning, the unit
parser and the default of rank/tune/check:

- HLO text whose size alone (25 bytes per byte) or whose parse bound (1 KiB per '(') is
  over the budget is refused; a tuning protobuf (.pb) whose wire walk says it unpacks to
  more than the budget allows (the file and 5 times what its messages unpack to);
- a dump directory is budgeted as a whole: each of its files fits alone, together they
  do not ("with the modules of the files before it");
each with exit 1, a message naming the file and the budget, and no output (--svg file,
--out files). A roomy --max-memory gives the same output as the default.

Environment: PERFCAST, PC_TEST_TMP.
"""
import filecmp
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clitest import expect, expect_rc, report, run, run_checks  # noqa: E402
from hloproto import comp, inst, module, module_tuning, tile_run, tuning_data  # noqa: E402
from test_memory_budget_hlo import conv_chain  # noqa: E402

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_memory_budget_roofline")


def write(name, data):
    path = os.path.join(TMP, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    return path


def fails(p, what, needles):
    expect(p.returncode == 1 and all(n in p.stderr for n in needles),
           "%s: exit %d, %r (want exit 1 and %s)" % (what, p.returncode, p.stderr[-600:], needles))


def tile_pb(n):
    """A TuningData of one fused kernel of n chained negates with two tile runs."""
    ins = [inst("p", "parameter", 1, dims=[128, 256], layout=[1, 0])]
    for i in range(2, n + 1):
        ins.append(inst("negate.%d" % i, "negate", i, dims=[128, 256], layout=[1, 0],
                        operands=[i - 1]))
    mod = module("fusion", [comp("e", 1, n, ins)], 1)
    runs = [tile_run(1000, kernel=[8, 128], default=True), tile_run(900, kernel=[16, 128])]
    return tuning_data([module_tuning(mod, runs)])


def check_roofline():
    big = write("chain_big.hlo", conv_chain(600))  # 60 KB: 25 x its size > 1 MiB
    parens = write("parens.hlo", conv_chain(3) + "// " + "(" * 3000 + "\n")  # bound > 1 MiB
    pb = write("tile.pb", tile_pb(200))
    svg = os.path.join(TMP, "r.svg")
    for prog, mm, needles in (
            (big, "1MiB", [big, "to read and parse it", "--max-memory budget of 1.0 MiB"]),
            (parens, "1MiB", [parens, "up to 384 bytes per '('", "budget of 1.0 MiB"]),
            (pb, "64KiB", [pb, "5 times what its messages unpack to", "budget of 64 KiB"])):
        p = run("roofline", "--chip", "v5e", "--hlo", prog, "--max-memory", mm, "--svg", svg)
        fails(p, "roofline %s --max-memory %s" % (os.path.basename(prog), mm), needles)
        expect(p.stdout == "", "roofline printed a result over the budget: %r" % p.stdout[:200])
        expect(not os.path.exists(svg), "roofline left %s over the budget" % svg)
        p = run("roofline", "--chip", "v5e", "--hlo", prog, "--max-memory", mm, "--json")
        expect(p.returncode == 1 and p.stdout == "" and
               '"field":"--max-memory"' in p.stderr.replace(" ", ""),
               "roofline --json over the budget: %d %r" % (p.returncode, p.stderr[:300]))
        # the default budget and a roomy one give the same document
        d = run("roofline", "--chip", "v5e", "--hlo", prog, "--json", "--top", "0")
        r = run("roofline", "--chip", "v5e", "--hlo", prog, "--json", "--top", "0",
                "--max-memory", "1GiB")
        expect_rc(d, 0, "roofline %s" % os.path.basename(prog))
        expect(d.stdout == r.stdout and d.stdout, "roofline %s: --max-memory 1GiB differs"
               % os.path.basename(prog))
    p = run("roofline", "--chip", "v5e", "--hlo", big, "--max-memory", "lots")
    expect(p.returncode == 2 and "--max-memory expects a size" in p.stderr,
           "roofline --max-memory lots: %d %r" % (p.returncode, p.stderr))
    p = run("roofline", "--help")
    expect("--max-memory SIZE" in p.stdout, "roofline --help lacks --max-memory")


def check_dump_dir():
    """Two files that fit one at a time but not together: the budget covers the whole run."""
    dump = os.path.join(TMP, "dump")
    for i in range(2):
        write(os.path.join("dump", "module_%04d.m%d.after_optimizations.txt" % (i, i)),
              conv_chain(600).replace("HloModule chain", "HloModule chain%d" % i))
    one = os.path.join(dump, "module_0000.m0.after_optimizations.txt")
    out = os.path.join(TMP, "imp_dump")
    p = run("roofline", "--chip", "v5e", "--hlo", one, "--max-memory", "3MiB", "--top", "1")
    expect_rc(p, 0, "roofline of one dump file within 3 MiB")
    p = run("roofline", "--chip", "v5e", "--hlo", dump, "--max-memory", "3MiB")
    fails(p, "roofline DUMP --max-memory 3MiB",
          ["module_0001", "with the modules of the files before it", "budget of 3.0 MiB"])
    p = run("import", dump, "--out", out, "--max-memory", "3MiB")
    fails(p, "import DUMP --max-memory 3MiB",
          ["module_0001", "with the modules of the files before it", "budget of 3.0 MiB"])
    expect(not os.path.exists(out) or not os.listdir(out), "import DUMP left files over budget")
    p = run("import", dump, "--out", out, "--max-memory", "64MiB", "--quiet")
    expect_rc(p, 0, "import DUMP --max-memory 64MiB")
    expect(len(os.listdir(out)) == 2, "import DUMP wrote %s" % os.listdir(out))


def check_import():
    big = os.path.join(TMP, "chain_big.hlo")
    pb = os.path.join(TMP, "tile.pb")
    for src, mm, needles in (
            (big, "1MiB", [big, "to read and parse it", "--max-memory budget of 1.0 MiB"]),
            (pb, "1KiB", [pb, "needs", "to read it", "budget of 1 KiB"]),
            (pb, "64KiB", [pb, "5 times what its messages unpack to", "budget of 64 KiB"])):
        out = os.path.join(TMP, "imp_refused")
        p = run("import", src, "--out", out, "--max-memory", mm)
        fails(p, "import %s --max-memory %s" % (os.path.basename(src), mm), needles)
        expect(not os.path.exists(out) or not os.listdir(out),
               "import %s left files over the budget" % os.path.basename(src))
    for src in (big, pb):
        a, b = os.path.join(TMP, "imp_default"), os.path.join(TMP, "imp_roomy")
        shutil.rmtree(a, ignore_errors=True)
        shutil.rmtree(b, ignore_errors=True)
        expect_rc(run("import", src, "--out", a, "--quiet"), 0, "import " + src)
        expect_rc(run("import", src, "--out", b, "--quiet", "--max-memory", "1GiB"), 0,
                  "import %s --max-memory 1GiB" % src)
        names = sorted(os.listdir(a)) if os.path.isdir(a) else []
        expect(names and names == sorted(os.listdir(b)) and
               all(filecmp.cmp(os.path.join(a, n), os.path.join(b, n), shallow=False)
                   for n in names), "import %s: --max-memory 1GiB wrote other files" % src)
    p = run("import", big, "--out", os.path.join(TMP, "x"), "--max-memory")
    expect(p.returncode == 2 and "needs a value" in p.stderr,
           "import --max-memory without a value: %d %r" % (p.returncode, p.stderr))


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    run_checks([check_roofline, check_dump_dir, check_import])
    return report("roofline and import honour --max-memory on HLO text, dumps and .pb")


if __name__ == "__main__":
    sys.exit(main())
