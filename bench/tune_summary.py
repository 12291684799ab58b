#!/usr/bin/env python3
"""Summarizes bench/tune_bench.sh's work folder: per collection, geometric means
over the test graphs of simulated runtime ratios (see tune_bench.sh).
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


def main():
    work, colls = sys.argv[1], sys.argv[2:]
    print("%-20s %6s | %-44s | %-30s" % ("", "", "model-guided tune", "oracle (simulator) tune"))
    print("%-20s %6s | %8s %8s %8s %8s %7s | %8s %8s %8s %7s" % (
        "collection", "graphs", "1st/def", "best5/d", "1st/fbst", "beats", "s/graph",
        "1st/def", "1st/fbst", "beats", "s/graph"))
    for coll in colls:
        name = coll.replace(":", "_")
        rows = {"m1": [], "m5": [], "mf": [], "mb": [], "mt": [], "o1": [], "of": [], "ob": [],
                "ot": [], "worse": []}
        for src in sorted(glob.glob(os.path.join(work, "src-%s-*.sim.json" % name))):
            stem = os.path.basename(src)[len("src-%s-" % name):-len(".sim.json")]
            s = load(src)
            d, fb = s["default_ns"], s["best"]["ns"]
            for tag, which in (("m", "model"), ("o", "oracle")):
                sim = ns_by_config(load(os.path.join(work, "%s-%s-%s.sim.json" % (which, name, stem))))
                run = load(os.path.join(work, which, name, stem + ".json"))
                first = sim[0]
                rows[tag + "1"].append(first / d)
                rows[tag + "f"].append(first / fb)
                rows[tag + "b"].append(1.0 if first < fb else 0.0)
                rows[tag + "t"].append(run["seconds"])
                if tag == "m":
                    rows["m5"].append(min(sim[k] for k in sim if k < 5) / d)
                    rows["worse"].append(1.0 if first > d * (1 + 1e-9) else 0.0)
        n = len(rows["m1"])
        print("%-20s %6d | %8.4f %8.4f %8.4f %7.0f%% %7.2f | %8.4f %8.4f %7.0f%% %7.2f" % (
            coll, n, gmean(rows["m1"]), gmean(rows["m5"]), gmean(rows["mf"]),
            100 * sum(rows["mb"]) / max(n, 1), sum(rows["mt"]) / max(n, 1), gmean(rows["o1"]),
            gmean(rows["of"]), 100 * sum(rows["ob"]) / max(n, 1), sum(rows["ot"]) / max(n, 1)))
        print("%-20s %6s   first proposal slower than the default on %.0f%% of graphs" % (
            "", "", 100 * sum(rows["worse"]) / max(n, 1)))


if __name__ == "__main__":
    main()
