#!/usr/bin/env python3
"""Summarizes bench/tune_dagger.sh's work folder: per round, tune policy and
held-out set, geometric means over graphs of simulated runtime ratios:
  first/default   the first proposal against the compiler default;
  best5/default   the best of the first 5 proposals;
  slower          share of graphs whose first proposal is slower than the
                  default (by > 0.1%; by > 1%);
  oracle share    (1 - first/default) / (1 - oracle first/default), geomeans;
and the data each round added (configs labelled, and how the collected first
proposals ran on the training graphs against their default).
usage: tune_dagger_summary.py WORK ROUNDS POLICIES
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


def sets(work):
    """{"seeds 10, 11": [tag...], "benchmark": [tag...]} from the oracle folder."""
    tags = sorted(os.path.basename(p)[:-len(".sim.json")]
                  for p in glob.glob(os.path.join(work, "oracle", "*.sim.json")))
    bench = {int(e.split(":")[0]) for e in os.environ.get("BENCH_SEEDS", "1:test 2:valid,test "
                                                            "3:valid,test").split()}
    held, out = sorted({int(t.split("-")[0]) for t in tags} - bench), {}
    for t in tags:
        s = int(t.split("-")[0])
        name = "benchmark" if s in bench else "seeds " + ", ".join(map(str, held))
        out.setdefault(name, []).append(t)
    return out


def row(work, r, pi, tags):
    first, best5, orc, worse, worse1 = [], [], [], 0, 0
    for t in tags:
        p = os.path.join(work, "r%d" % r, "eval", "p%d" % pi, t + ".sim.json")
        if not os.path.exists(p):
            return None
        sim = load(p)
        d = sim["default_ns"]
        ns = {x["config"]: x["ns"] for x in sim["runtimes"]}
        f = ns[0] / d
        first.append(f)
        best5.append(min(ns[k] for k in ns if k < 5) / d)
        osim = load(os.path.join(work, "oracle", t + ".sim.json"))
        orc.append({x["config"]: x["ns"] for x in osim["runtimes"]}[0] / osim["default_ns"])
        worse += f > 1.001
        worse1 += f > 1.01
    g1, go = gmean(first), gmean(orc)
    share = (1 - g1) / (1 - go) if go < 1 else float("nan")
    return (len(tags), g1, gmean(best5), worse / len(tags), worse1 / len(tags), go, share,
            max(first))


def data_row(work, r):
    """What round r+1's data added: configs, and the collected first proposals' runtimes."""
    added, first = 0, []
    for p in glob.glob(os.path.join(work, "r%d" % (r + 1), "prop", "*", "*.sim.json")):
        sim = load(p)
        added += sim["out"]["added"]
        ns = {x["config"]: x["ns"] for x in sim["runtimes"]}
        first.append(ns[0] / sim["default_ns"])
    return added, len(first), gmean(first)


def main():
    work, rounds, policies = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(";")
    print("work: %s" % work)
    print("| round | policy | held-out set | graphs | first / default | best of 5 / default "
          "| first slower than default (> 0.1% / > 1%) | worst first / default "
          "| oracle first / default | share of the oracle's gain |")
    print("|---" * 10 + "|")
    for r in range(rounds + 1):
        for pi, pol in enumerate(policies):
            for name, tags in sets(work).items():
                x = row(work, r, pi, tags)
                if x is None:
                    continue
                n, g1, g5, w, w1, go, share, mx = x
                print("| %d | %s | %s | %d | %.4f | %.4f | %.0f%% / %.0f%% | %.3f | %.4f | %.2f |"
                      % (r, "defaults" if pol == "-" else "`%s`" % pol, name, n, g1, g5,
                         100 * w, 100 * w1, mx, go, share))
    print()
    print("| data of round | collected with | graphs tuned | configs added | "
          "collected first / default (training graphs) |")
    print("|---|---|---|---|---|")
    for r in range(rounds):
        cf = os.path.join(work, "r%d" % (r + 1), "collect.txt")
        if not os.path.exists(cf):
            continue
        with open(cf) as f:
            how = f.read().strip().split(": ", 1)[-1]
        added, n, g = data_row(work, r)
        print("| %d | `%s` | %d | %d | %.4f |" % (r + 1, how, n, added, g))


if __name__ == "__main__":
    main()
