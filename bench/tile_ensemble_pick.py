#!/usr/bin/env python3
"""Issue #15, tile (bench/RESULTS.md, fifth pass): does the way the first
proposal is picked from a seed ensemble's members matter, and what do the bad
picks change? For a `train --ensemble N` tile checkpoint, writes each member
as a plain checkpoint (bench/ensemble_avg.py's split_members), scores every
config of every kernel of the given synth folders with each member
(`perfcast rank --json`), and prints the geometric mean over kernels of
(true runtime of the pick / the compiler default's; `perfcast simulate`) for
each member alone and for several ways of combining them: the mean of raw
scores (what tune does with --tile-risk 0), of per-kernel z-scores, the mean
rank (Borda), the median, the best worst-rank, and mean + 0.5 spread. Then,
for the mean's picks slower than the default by over 1%, whether they differ
from the default in kernel_bounds only or in output_bounds too.

  tile_ensemble_pick.py PERFCAST MODEL WORK DIR:SEED:SPLITS...

WORK: a folder for the members and a cache of their scores (WORK/scores.pkl).
DIR:SEED:SPLITS as in tile_top1_diag.py (e.g. /tmp/d9:9:valid,test).
"""
import math
import os
import pickle
import subprocess
import sys
import json

import numpy as np
from scipy.stats import rankdata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ensemble_avg  # noqa: E402
from tile_top1_diag import files, sim  # noqa: E402


def scores(P, model, f):
    out = subprocess.run([P, "rank", "--model", model, "--json", "--top", "0", f],
                         capture_output=True, text=True, check=True).stdout
    s = np.zeros(json.loads(out)["graphs"][0]["configs"])
    for t in json.loads(out)["graphs"][0]["top"]:
        s[t["config"]] = t["score"]  # lower = predicted faster
    return s


def z(s):
    sd = s.std()
    return (s - s.mean()) / (sd if sd > 0 else 1)


def ranks(S):
    return np.array([rankdata(s) for s in S])


METHODS = {
    "mean (tune)": lambda S: S.mean(0),
    "z-score mean": lambda S: np.array([z(s) for s in S]).mean(0),
    "mean rank": lambda S: ranks(S).mean(0),
    "median": lambda S: np.median(S, 0),
    "best worst rank": lambda S: ranks(S).max(0) + 1e-3 * ranks(S).mean(0),
    "mean + 0.5 spread": lambda S: S.mean(0) + 0.5 * S.std(0),
}


def main():
    P, model, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    cache = os.path.join(work, "scores.pkl")
    if os.path.exists(cache):
        with open(cache, "rb") as fh:
            d = pickle.load(fh)
    else:
        members = ensemble_avg.split_members(model, os.path.join(work, "member"))
        d = {}
        for f, seed in files(sys.argv[4:]):
            dflt, rt = sim(P, f, seed)
            d[f] = (np.array([scores(P, m, f) for m in members]), dflt, rt)
        with open(cache, "wb") as fh:
            pickle.dump(d, fh)
    n = len(next(iter(d.values()))[0])
    meths = dict(METHODS)
    for k in range(n):
        meths["member %d alone" % k] = (lambda k: lambda S: S[k])(k)
    print("| pick | top-1 / default | slower than default | worst |")
    print("|---|---|---|---|")
    for name, fn in meths.items():
        v = np.array([rt[int(np.argmin(fn(S)))] / dflt for S, dflt, rt in d.values()])
        print("| %s | %.3f | %.0f%% | %.2f |" % (name, math.exp(np.log(v).mean()),
                                               100 * (v > 1.001).mean(), v.max()))
    cat = {}
    for f, (S, dflt, rt) in d.items():
        i = int(np.argmin(S.mean(0)))
        if rt[i] <= 1.01 * dflt:
            continue
        cf = np.load(f)["config_feat"]
        di = min(rt, key=lambda k: abs(rt[k] - dflt))
        kb = not np.array_equal(cf[i][0:6], cf[di][0:6])
        ob = not np.array_equal(cf[i][8:14], cf[di][8:14])
        key = "kernel_bounds only" if kb and not ob else "output_bounds too" if ob else "neither"
        cat.setdefault(key, []).append(rt[i] / dflt)
    print("\nthe mean's picks > 1% slower than the default, by what differs from the default:")
    for k, v in cat.items():
        print("  %s: %d kernels, geometric mean %.3f, worst %.2f"
              % (k, len(v), math.exp(np.mean(np.log(v))), max(v)))


if __name__ == "__main__":
    main()
