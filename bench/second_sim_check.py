#!/usr/bin/env python3
"""Issue #15's second-simulator check of bench/tune_bench.sh's work folder (run
tune_bench.sh with KEEP=DIR, or SECOND_SIM=1 to have it call this).

For every test graph tune_bench tuned it times, under bench/second_sim.py (a
simulated TPU perfcast has never seen) and under perfcast's own simulator
(`perfcast simulate`, the *.sim.json tune_bench wrote), the compiler default,
the model's proposals and the oracle's, and prints per collection and
simulator:
  first / default     geomean over graphs of (first proposal / default);
  best of 5 / default the same for the best of the first 5 proposals;
  slower than default share of graphs whose first proposal is slower than the
                      default (by more than 1% in brackets);
  oracle first / def. the oracle search's first proposal (driven by perfcast's
                      simulator: what it gains on the other one shows how much
                      of its gain is simulator-specific);
  file's best / def.  the fastest config in the input file under that simulator
                      (the room the file's own configs leave).
The compiler default: layout, every tensor -1 (second_sim times it directly);
tile, the file's config whose perfcast runtime equals `simulate`'s default_ns
(tile files do not mark it; tune_summary.py uses the same default_ns), timed
by second_sim like any other config; where several different configs share
that runtime, the geometric mean of their second_sim runtimes (the table
counts such graphs).
Then how different the two simulators are: Spearman and Kendall rank
correlation over each file's configs (mean and min over graphs), and the share
of graphs where both agree on whether the model's first proposal beats the
default.
usage: second_sim_check.py WORK COLLECTION...
"""
import glob
import json
import math
import os
import sys

import numpy as np
from scipy.stats import kendalltau, spearmanr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import second_sim  # noqa: E402


def gmean(v):
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def load_json(path):
    with open(path) as f:
        return json.load(f)


def perfcast_ns(sim_json):
    r = sorted(sim_json["runtimes"], key=lambda x: x["config"])
    return np.array([x["ns"] for x in r], dtype=np.float64)


def graph_rows(work, coll):
    """One dict per tuned graph: runtimes under both simulators."""
    name = coll.replace(":", "_")
    sub = coll.replace(":", "/")
    out = []
    for src in sorted(glob.glob(os.path.join(work, "src-%s-*.sim.json" % name))):
        tag = os.path.basename(src)[len("src-%s-" % name):-len(".sim.json")]
        seed, split, stem = tag.split("-", 2)
        f = os.path.join(work, "data" + seed, "npz", sub, split, stem + ".npz")
        sj = load_json(src)
        p_src, p_def = perfcast_ns(sj), sj["default_ns"]
        s_src = second_sim.simulate(f)
        ambiguous = 0
        if coll.startswith("tile"):
            idx = np.flatnonzero(np.abs(p_src - p_def) <= 1e-6 * p_def)
            if not len(idx):
                print("warning: %s: no config at the default's runtime; skipped" % f,
                      file=sys.stderr)
                continue
            # several distinct configs at the default's runtime: their geometric mean
            ambiguous = len({tuple(c) for c in np.load(f)["config_feat"][idx]}) > 1
            s_def = float(np.exp(np.mean(np.log(s_src[idx]))))
        else:
            s_def = second_sim.layout_default_ns(f)
        row = {"tag": tag, "p_def": p_def, "s_def": s_def, "ambiguous": ambiguous,
               "p_file": float(p_src.min()), "s_file": float(s_src.min()),
               "rho": spearmanr(p_src, s_src).correlation if len(p_src) > 2 else float("nan"),
               "tau": kendalltau(p_src, s_src).correlation if len(p_src) > 2 else float("nan")}
        for which in ("model", "oracle"):
            g = os.path.join(work, which, name, tag, stem + ".npz")
            row["p_" + which] = perfcast_ns(load_json(
                os.path.join(work, "%s-%s-%s.sim.json" % (which, name, tag))))
            row["s_" + which] = second_sim.simulate(g)
        out.append(row)
    return out


def sim_stats(rows, s):
    first = [r[s + "_model"][0] / r[s + "_def"] for r in rows]
    best5 = [r[s + "_model"][:5].min() / r[s + "_def"] for r in rows]
    orac = [r[s + "_oracle"][0] / r[s + "_def"] for r in rows]
    fbest = [r[s + "_file"] / r[s + "_def"] for r in rows]
    n = len(rows)
    return (gmean(first), gmean(best5), 100.0 * sum(x > 1 + 1e-9 for x in first) / n,
            100.0 * sum(x > 1.01 for x in first) / n, gmean(orac), gmean(fbest))


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    work, colls = sys.argv[1], sys.argv[2:]
    results = [(c, graph_rows(work, c)) for c in colls]
    print("| collection | graphs | simulator | first / default | best of 5 / default "
          "| first slower than default (by > 1%) | oracle first / default "
          "| file's best / default |")
    print("|---" * 8 + "|")
    for coll, rows in results:
        if not rows:
            continue
        for s, label in (("p", "perfcast (synth)"), ("s", "second (bench/second_sim.py)")):
            f1, b5, w, w1, o, fb = sim_stats(rows, s)
            print("| %s | %d | %s | %.3f | %.3f | %.0f%% (%.0f%%) | %.3f | %.3f |" % (
                coll, len(rows), label, f1, b5, w, w1, o, fb))
    print()
    print("| collection | Spearman over the file's configs: mean (min) | Kendall: mean (min) "
          "| agree on first vs default | tile defaults ambiguous |")
    print("|---" * 5 + "|")
    for coll, rows in results:
        if not rows:
            continue
        rho = [r["rho"] for r in rows if not math.isnan(r["rho"])]
        tau = [r["tau"] for r in rows if not math.isnan(r["tau"])]
        agree = sum((r["p_model"][0] < r["p_def"]) == (r["s_model"][0] < r["s_def"])
                    for r in rows)
        print("| %s | %.2f (%.2f) | %.2f (%.2f) | %d of %d | %d |" % (
            coll, np.mean(rho) if rho else float("nan"), min(rho) if rho else float("nan"),
            np.mean(tau) if tau else float("nan"), min(tau) if tau else float("nan"),
            agree, len(rows), sum(r["ambiguous"] for r in rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
