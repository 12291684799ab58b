#!/usr/bin/env python3
"""bench/tune_dagger.sh's work folder per held-out set, one line per round and
policy: each EVAL seed alone, the EVAL seeds together and the benchmark's graphs
(seeds 1-3), with the geometric means of first / default, best of 5 / default,
the oracle's first / default, first / oracle, and the share of graphs whose first
proposal is slower than the default by > 1% (as tune_dagger_summary.py; rows of a
round still running are "-").
usage: tune_dagger_sets.py WORK ROUNDS [NPOLICIES (2)] [EVAL_SEEDS ("10 11")]
"""
import glob
import json
import math
import os
import sys


def gm(v):
    return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")


def ld(p):
    with open(p) as f:
        return json.load(f)


def ratios(path):
    s = ld(path)
    return {x["config"]: x["ns"] / s["default_ns"] for x in s["runtimes"]}


def main():
    work, rounds = sys.argv[1], int(sys.argv[2])
    npol = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    ev = (sys.argv[4] if len(sys.argv) > 4 else "10 11").split()
    tags = sorted(os.path.basename(p)[:-len(".sim.json")]
                  for p in glob.glob(os.path.join(work, "oracle", "*.sim.json")))
    seed = lambda t: t.split("-")[0]  # noqa: E731
    sets = [("seed " + s, [t for t in tags if seed(t) == s]) for s in ev]
    sets.append(("seeds " + "+".join(ev), [t for t in tags if seed(t) in ev]))
    sets.append(("benchmark", [t for t in tags if seed(t) in ("1", "2", "3")]))
    for r in range(rounds + 1):
        for pi in range(npol):
            out = []
            for name, ts in sets:
                f, b5, o = [], [], []
                for t in ts:
                    p = os.path.join(work, "r%d" % r, "eval", "p%d" % pi, t + ".sim.json")
                    if not os.path.exists(p):
                        break
                    ns = ratios(p)
                    f.append(ns[0])
                    b5.append(min(v for k, v in ns.items() if k < 5))
                    o.append(ratios(os.path.join(work, "oracle", t + ".sim.json"))[0])
                if len(f) < len(ts) or not ts:
                    out.append("%s: -" % name)
                    continue
                g, go = gm(f), gm(o)
                out.append("%s n=%d first %.4f best5 %.4f oracle %.4f first/oracle %.3f "
                           "slower>1%% %d%%" % (name, len(f), g, gm(b5), go, g / go,
                                                round(100 * sum(x > 1.01 for x in f) / len(f))))
            print("r%d p%d | " % (r, pi) + " | ".join(out))


if __name__ == "__main__":
    main()
