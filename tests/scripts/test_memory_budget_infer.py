#!/usr/bin/env python3
"""`rank` on a .npz and `tune` keep model inference within --max-memory (issue #18):
the scoring's peak is estimated from the graph's shapes before anything is built
(src/gnn/infer.c, pc_infer_peak_bytes) and, when the default chunk of configs does
not fit, the chunk shrinks:

- a budget just above what the smallest chunk needs scores every config of a tile
  and a layout graph with the ranking of the default budget (scores equal to float
  rounding: BLAS kernels are picked by row count);
- a budget below it is refused before scoring: exit 1, a message naming the file
  and the --max-memory budget, nothing on stdout, no --svg left;
- tune's prepared graph is checked the same way (a workspace per member).

Environment: PERFCAST, PC_TEST_TMP.
"""
import glob
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clitest import expect, report, run, run_checks  # noqa: E402

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_memory_budget_infer")
DATA = os.path.join(TMP, "data")
MODELS = {}
NEED = re.compile(r"scoring configs of this graph needs ([\d.]+) (KiB|MiB|GiB) in memory")
UNIT = {"KiB": 1024, "MiB": 1 << 20, "GiB": 1 << 30}


def setup():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    p = run("synth", "--out", DATA, "--scale", "small", "--seed", "5")
    if p.returncode != 0:
        return p.stderr
    for coll in ("tile:xla", "layout:xla:random"):
        out = os.path.join(TMP, coll.split(":")[0] + ".st")
        p = run("train", "--data", DATA, "--collection", coll, "--out", out, "--epochs", "1",
                "--hidden", "16", "--layers", "2", "--configs", "4", "--threads", "2")
        if p.returncode != 0:
            return p.stderr
        MODELS[coll] = out
    return None


def biggest(coll):
    """The valid graph with the most configs (by file size: configs dominate)."""
    files = glob.glob(os.path.join(DATA, "npz", *coll.split(":"), "valid", "*.npz"))
    return max(files, key=os.path.getsize)


def scores(p):
    g = json.loads(p.stdout)["graphs"][0]
    return {r["config"]: r["score"] for r in g["top"]}, [r["config"] for r in g["top"]]


def min_need(model, npz):
    """What the smallest chunk needs, from the refusal at a budget that loads the
    model and the graph but cannot score (bytes); None if none was found."""
    kib = 16384
    while kib >= 256:
        p = run("rank", "--model", model, npz, "--max-memory", "%dKiB" % kib)
        m = NEED.search(p.stderr)
        if p.returncode != 0 and m:
            return float(m.group(1)) * UNIT[m.group(2)], p, kib
        kib = kib * 3 // 4
    return None, None, None


def check_rank(coll):
    model, npz = MODELS[coll], biggest(coll)
    ref = run("rank", "--model", model, npz, "--json", "--top", "0")
    expect(ref.returncode == 0, "%s: rank with the default budget: %s" % (coll, ref.stderr))
    need, refused, kib = min_need(model, npz)
    expect(need is not None, "%s: no budget refused the scoring" % coll)
    if need is None or ref.returncode != 0:
        return
    # refused: exit 1, the file and the budget named, nothing on stdout, no --svg
    svg = os.path.join(TMP, "r.svg")
    p = run("rank", "--model", model, npz, "--max-memory", "%dKiB" % kib, "--svg", svg)
    expect(p.returncode == 1 and npz in p.stderr and "--max-memory budget of" in p.stderr,
           "%s: the refusal: exit %d %r" % (coll, p.returncode, p.stderr))
    expect(p.stdout == "" and not os.path.exists(svg), "%s: output after a refusal" % coll)
    # just above the smallest chunk's need: every config scored, the same ranking
    budget = "%dKiB" % (int(need * 1.1 / 1024) + 64)
    p = run("rank", "--model", model, npz, "--json", "--top", "0", "--max-memory", budget)
    expect(p.returncode == 0, "%s: rank --max-memory %s: %s" % (coll, budget, p.stderr))
    if p.returncode != 0:
        return
    (a, order_a), (b, order_b) = scores(ref), scores(p)
    expect(sorted(a) == sorted(b), "%s: configs differ" % coll)
    bad = [c for c in a if abs(a[c] - b.get(c, 1e30)) > 1e-5 * (1 + abs(a[c]))]
    expect(not bad, "%s: scores differ beyond rounding for configs %r" % (coll, bad[:5]))
    # the same order, up to configs whose scores tie to rounding
    same = all(x == y or abs(a[x] - a[y]) <= 1e-5 * (1 + abs(a[x]))
               for x, y in zip(order_a, order_b))
    expect(same, "%s: the ranking differs" % coll)


def check_tune():
    coll = "layout:xla:random"
    model, npz = MODELS[coll], biggest(coll)
    args = ["tune", "--model", model, npz, "--max-scored", "32", "--batch", "16",
            "--threads", "2"]
    p = run(*args)
    expect(p.returncode == 0, "tune with the default budget: %s" % p.stderr)
    p = run(*args, "--max-memory", "4MiB")
    expect(p.returncode == 1 and npz in p.stderr and "scoring configs of this graph" in p.stderr
           and "--max-memory budget of 4.0 MiB" in p.stderr,
           "tune under 4 MiB: exit %d %r" % (p.returncode, p.stderr))


def main():
    err = setup()
    if err:
        print("setup failed:", err)
        return 1
    run_checks([lambda: check_rank("tile:xla"), lambda: check_rank("layout:xla:random"),
                check_tune])
    return report("rank and tune: model inference within --max-memory")


if __name__ == "__main__":
    sys.exit(main())
