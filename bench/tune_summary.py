#!/usr/bin/env python3
"""Summarizes bench/tune_bench.sh's work folder: per collection, geometric means
over the test graphs of simulated runtime ratios (see tune_bench.sh), the share
of graphs whose first proposal is slower than the default, the share of the
oracle's gain the model captures, and the issue #15 targets.
usage: tune_summary.py WORK COLLECTION...
"""
import glob
import json
import math
import os
import sys


def gmean(v):
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def load(path):
    with open(path) as f:
        return json.load(f)


def ns_by_config(sim):
    return {r["config"]: r["ns"] for r in sim["runtimes"]}


def collect(work, name):
    rows = {k: [] for k in ("m1", "m5", "mf", "mb", "mt", "o1", "of", "ob", "ot", "worse",
                            "worse1")}
    for src in sorted(glob.glob(os.path.join(work, "src-%s-*.sim.json" % name))):
        tag = os.path.basename(src)[len("src-%s-" % name):-len(".sim.json")]
        s = load(src)
        d, fb = s["default_ns"], s["best"]["ns"]
        for t, which in (("m", "model"), ("o", "oracle")):
            sim = ns_by_config(load(os.path.join(work, "%s-%s-%s.sim.json" % (which, name, tag))))
            run = load(os.path.join(work, which, name, tag + ".json"))
            first = sim[0]
            rows[t + "1"].append(first / d)
            rows[t + "f"].append(first / fb)
            rows[t + "b"].append(1.0 if first < fb else 0.0)
            rows[t + "t"].append(run["seconds"])
            if t == "m":
                rows["m5"].append(min(sim[k] for k in sim if k < 5) / d)
                rows["worse"].append(1.0 if first > d * (1 + 1e-9) else 0.0)
                rows["worse1"].append(1.0 if first > d * 1.01 else 0.0)
    return rows


def main():
    work, colls = sys.argv[1], sys.argv[2:]
    print("| collection | graphs | first / default | best of 5 / default | first / file's best "
          "| first beats file's best | first slower than default (by > 1%) | s / graph | oracle first / "
          "default | oracle first / file's best | oracle s / graph | share of the oracle's gain |")
    print("|---" * 12 + "|")
    verdicts = []
    for coll in colls:
        r = collect(work, coll.replace(":", "_"))
        n = len(r["m1"])
        if not n:
            continue
        m1, o1 = gmean(r["m1"]), gmean(r["o1"])
        worse = sum(r["worse"]) / n
        share = (1 - m1) / (1 - o1) if o1 < 1 else float("nan")
        print("| %s | %d | %.3f | %.3f | %.3f | %.0f%% | %.0f%% (%.0f%%) | %.2f | %.3f | %.3f | %.2f "
              "| %.2f |" % (
            coll, n, m1, gmean(r["m5"]), gmean(r["mf"]), 100 * sum(r["mb"]) / n, 100 * worse,
            100 * sum(r["worse1"]) / n,
            sum(r["mt"]) / n, o1, gmean(r["of"]), sum(r["ot"]) / n, share))
        if coll.startswith("tile"):
            ok = m1 <= 0.88 and m1 <= 1.05 * o1
            verdicts.append("%s: first/default %.3f (target <= 0.88), %.1f%% behind the oracle "
                            "(target <= 5%%): %s" % (coll, m1, 100 * (m1 / o1 - 1),
                                                      "met" if ok else "NOT met"))
        else:
            ok = worse <= 0.10 and share >= 0.5
            verdicts.append("%s: slower than default on %.0f%% of graphs (target <= 10%%), "
                            "%.0f%% of the oracle's gain (target >= 50%%): %s" % (
                                coll, 100 * worse, 100 * share, "met" if ok else "NOT met"))
    print()
    for v in verdicts:
        print("- " + v)


if __name__ == "__main__":
    main()
