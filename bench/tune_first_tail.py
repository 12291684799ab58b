#!/usr/bin/env python3
"""Where a tune arm's first-proposal loss sits (issue #15, tenth pass): for a
bench/tune_epochs_seeds.sh arm folder and an eval policy (p0, p1), the quantiles of
first proposal / oracle's first over the held-out graphs, the share within 1% and 5%
of the oracle, and the share of the geometric-mean loss carried by the worst 10%.
usage: tune_first_tail.py ARM [POLICY (p1)]
"""
import glob
import json
import math
import os
import sys

import numpy as np


def first_ns(path):
    with open(path) as f:
        return [x for x in json.load(f)["runtimes"] if x["config"] == 0][0]["ns"]


def main():
    arm = sys.argv[1]
    pol = sys.argv[2] if len(sys.argv) > 2 else "p1"
    r = []
    for sj in sorted(glob.glob(os.path.join(arm, "r0", "eval", pol, "*.sim.json"))):
        tag = os.path.basename(sj)[:-len(".sim.json")]
        r.append(first_ns(sj) / first_ns(os.path.join(arm, "oracle", tag + ".sim.json")))
    if not r:
        print("no %s/r0/eval/%s/*.sim.json" % (arm, pol), file=sys.stderr)
        return 1
    a = np.array(r)
    la = np.sort(np.log(a))
    print("graphs %d, first / oracle: geomean %.4f, quantiles 10/25/50/75/90/95%%: %s"
          % (len(a), math.exp(la.mean()), np.round(np.quantile(a, [.1, .25, .5, .75, .9, .95]), 3)))
    print("within 1%%: %.2f, within 5%%: %.2f, share of the log loss in the worst 10%%: %.2f"
          % ((a < 1.01).mean(), (a < 1.05).mean(), la[-max(1, len(la) // 10):].sum() / la.sum()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
