#!/usr/bin/env python3
"""`rank` and `tune` on HLO programs, and `tune` on .npz and --data, honour --max-memory
(issue #18), with the meaning and the default of eval/predict/rank on .npz.

Tiny models trained on synthetic data; HLO text generated here:
- a program whose text alone (25 bytes per byte) is over the budget is refused
  before it is read, one whose parse bound (384 bytes per '(') is over it after;
- a layout module or a tile kernel whose graph and --candidates would not fit;
- tune's batches (--batch) over the budget, tune's graph load over it (FILE.npz
  and --data), tune on HLO over it;
each with exit 1, a message naming the file (module), the budget and the field
(--candidates, --batch), and no output left. The same runs pass with the
default budget and with a roomy --max-memory.

Environment: PERFCAST, PC_TEST_TMP. Exit 77 without numpy (training data).
"""
import glob
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clitest import expect, expect_rc, report, run, run_checks, tiny_models  # noqa: E402

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_memory_budget_hlo")
DATA = os.path.join(TMP, "data")
MODELS = {}
FAST = ("--max-scored", "200", "--budget-s", "20", "--threads", "2")


def conv_chain(n):
    """A layout program: n 1x1 convolutions in a chain (each a configurable node)."""
    lines = ["HloModule chain", "ENTRY e {",
             "  x0 = f32[8,16,16,4]{3,2,1,0} parameter(0)",
             "  w = f32[1,1,4,4]{3,2,1,0} parameter(1)"]
    for i in range(1, n + 1):
        lines.append("  %sx%d = f32[8,16,16,4]{3,2,1,0} convolution(x%d, w), window={size=1x1}, "
                     "dim_labels=b01f_01io->b01f" % ("ROOT " if i == n else "", i, i - 1))
    return "\n".join(lines) + "\n}\n"


DOT = """HloModule d
ENTRY e {
  a = f32[256,512]{1,0} parameter(0)
  b = f32[512,128]{1,0} parameter(1)
  ROOT d = f32[256,128]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def setup():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    MODELS.update(tiny_models(DATA, TMP, 3, "layout:xla:default"))


def fails(p, what, needles):
    expect(p.returncode == 1 and all(n in p.stderr for n in needles),
           "%s: exit %d, %r (want exit 1 and %s)" % (what, p.returncode, p.stderr[-600:], needles))


def check_rank_hlo():
    lay, tile = MODELS["layout:xla:default"], MODELS["tile:xla"]
    small = write("chain.hlo", conv_chain(3))
    big = write("chain_big.hlo", conv_chain(600))          # ~60 KB: 25x its size > 1 MiB
    parens = write("parens.hlo", conv_chain(3) + "// " + "(" * 3000 + "\n")  # bound > 1 MiB
    dot = write("dot.hlo", DOT)
    for args, mm, needles in (
            ((lay, big), "1MiB", [big, "to read and parse it", "--max-memory budget of 1.0 MiB"]),
            ((lay, parens), "1MiB", [parens, "up to 384 bytes per '('", "budget of 1.0 MiB"]),
            ((lay, small, "--candidates", "1000000"), "64MiB",
             [small, "module 'chain'", "1000000 candidates of 3 configurable nodes",
              "(--candidates)", "budget of 64.0 MiB"]),
            ((tile, dot, "--candidates", "1000000"), "64MiB",
             [dot, "kernel 'd'", "1000000 candidates", "(--candidates)"])):
        model, prog = args[0], args[1]
        p = run("rank", "--model", model, prog, *args[2:], "--max-memory", mm)
        fails(p, "rank %s --max-memory %s" % (os.path.basename(prog), mm), needles)
        expect(p.stdout == "", "rank printed a result over the budget: %r" % p.stdout[:200])
    # the default budget and a roomy one rank the same programs
    for model, prog in ((lay, small), (lay, big), (lay, parens), (tile, dot)):
        for extra in ((), ("--max-memory", "1GiB")):
            p = run("rank", "--model", model, prog, "--top", "3", "--threads", "2", *extra)
            expect_rc(p, 0, "rank %s %s" % (os.path.basename(prog), " ".join(extra)))


def check_tune():
    lay = MODELS["layout:xla:default"]
    src = sorted(glob.glob(os.path.join(DATA, "npz", "layout", "xla", "default", "test",
                                        "*.npz")))[0]
    out = os.path.join(TMP, "tuned.npz")
    big = os.path.join(TMP, "chain_big.hlo")
    for args, needles in (
            ((src, "--max-memory", "100KiB"), [src, "loading the graph", "budget of 100 KiB"]),
            ((src, "--batch", "1000000", "--max-memory", "64MiB"),
             [src, "the search needs", "batches of 1000000 candidates", "(--batch)",
              "budget of 64.0 MiB"]),
            ((big, "--max-memory", "1MiB"), [big, "to read and parse it", "budget of 1.0 MiB"])):
        p = run("tune", "--model", lay, *args, "--out", out, *FAST)
        fails(p, "tune " + " ".join(args[1:]), needles)
        expect(not os.path.exists(out), "tune left %s over the budget" % out)
    outdir = os.path.join(TMP, "tuned_split")
    p = run("tune", "--model", lay, "--data", DATA, "--out", outdir, "--max-memory", "100KiB",
            *FAST)
    fails(p, "tune --data --max-memory 100KiB", ["loading the graph", "budget of 100 KiB"])
    expect(not glob.glob(os.path.join(outdir, "*.npz")), "tune --data wrote a file over budget")
    p = run("tune", "--model", lay, "--max-memory", "lots", src)
    expect(p.returncode == 2 and "--max-memory" in p.stderr, "tune --max-memory lots: %d %r"
           % (p.returncode, p.stderr))
    for extra in ((), ("--max-memory", "1GiB")):
        p = run("tune", "--model", lay, src, "--out", out, *FAST, *extra)
        expect_rc(p, 0, "tune %s" % " ".join(extra))
        expect(os.path.exists(out), "tune wrote no %s" % out)
        os.remove(out) if os.path.exists(out) else None
        p = run("tune", "--model", lay, os.path.join(TMP, "chain.hlo"), *FAST, *extra)
        expect_rc(p, 0, "tune chain.hlo %s" % " ".join(extra))


def main():
    setup()
    run_checks([check_rank_hlo, check_tune])
    return report("rank and tune honour --max-memory on HLO, .npz and --data")


if __name__ == "__main__":
    sys.exit(main())
