#!/usr/bin/env python3
"""bench/tune_epochs_seeds.sh's arms as one markdown table: per encoding, training
seed and policy, on held-out seeds 10+11 and on the benchmark's graphs (seeds 1-3),
the geometric means of first / default, best of 5 / default, first / oracle, the
share of graphs whose first proposal is > 1% slower than the default and the worst
first / default; then mean +- sd (sample, over the seeds) per encoding and policy.
usage: tune_epochs_table.py OUT [SEEDS ("1 6 11")] [ENCODINGS ("steps steps,rsteps")]
"""
import glob
import json
import math
import os
import statistics
import sys


def gm(v):
    return math.exp(sum(map(math.log, v)) / len(v))


def ratios(path):
    with open(path) as f:
        s = json.load(f)
    return {x["config"]: x["ns"] / s["default_ns"] for x in s["runtimes"]}


def score(work, pi, tags):
    f, b5, o = [], [], []
    for t in tags:
        ns = ratios(os.path.join(work, "r0", "eval", "p%d" % pi, t + ".sim.json"))
        f.append(ns[0])
        b5.append(min(v for k, v in ns.items() if k < 5))
        o.append(ratios(os.path.join(work, "oracle", t + ".sim.json"))[0])
    return [gm(f), gm(b5), gm(f) / gm(o), 100 * sum(x > 1.01 for x in f) / len(f), max(f)]


def main():
    out = sys.argv[1]
    seeds = (sys.argv[2] if len(sys.argv) > 2 else "1 6 11").split()
    encs = (sys.argv[3] if len(sys.argv) > 3 else "steps steps,rsteps").split()
    pols = ["defaults", "2 bounds"]
    fmt = ["%.4f", "%.4f", "%.3f", "%.0f%%", "%.2f"]
    print("| encoding | seed | policy | 10+11 first / default | best of 5 | first / oracle "
          "| slower > 1% | worst | bench first / default | best of 5 | first / oracle "
          "| slower > 1% | worst |")
    print("|" + "---|" * 13)
    agg = {}
    for enc in encs:
        for pi, pol in enumerate(pols):
            for s in seeds:
                w = os.path.join(out, "%s_s%s" % (enc.replace(",", "_"), s))
                tags = sorted(os.path.basename(p)[:-len(".sim.json")]
                              for p in glob.glob(os.path.join(w, "oracle", "*.sim.json")))
                held = [t for t in tags if t.split("-")[0] in ("10", "11")]
                bench = [t for t in tags if t.split("-")[0] in ("1", "2", "3")]
                try:
                    v = score(w, pi, held) + score(w, pi, bench)
                except FileNotFoundError:
                    print("| %s | %s | %s | (missing) |" % (enc, s, pol))
                    continue
                agg.setdefault((enc, pol), []).append(v)
                print("| %s | %s | %s | " % (enc, s, pol)
                      + " | ".join(fm % x for fm, x in zip(fmt * 2, v)) + " |")
    print()
    print("| encoding | policy | n | 10+11 first / default | best of 5 | first / oracle "
          "| slower > 1% | worst | bench first / default | best of 5 | first / oracle "
          "| slower > 1% | worst |")
    print("|" + "---|" * 13)
    for (enc, pol), vs in agg.items():
        cells = []
        for i, fm in enumerate(fmt * 2):
            col = [v[i] for v in vs]
            sd = statistics.stdev(col) if len(col) > 1 else float("nan")
            cells.append((fm + " ± " + fm) % (statistics.mean(col), sd))
        print("| %s | %s | %d | " % (enc, pol, len(vs)) + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
