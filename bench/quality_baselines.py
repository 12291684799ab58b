"""
Baselines of run_quality.sh: random ranking and the best single-feature heuristic.

  quality_baselines.py DATA_DIR SEED [HOLDOUT_DIR] [RANDOM_DRAWS]

For each of the five collections, prints JSON lines
  {"seed", "collection", "method": "random" | "heuristic", "split": "valid" | "holdout",
   "metric", "tau", "opa", ["feature", "sign", "train_metric"]}
with perfcast's conventions (include/perfcast/metrics.h): a score is runtime-like,
LOWER = predicted FASTER; tile metric = mean over graphs of the tile score
2 - min(y over the 5 lowest scores, ties by index) / min(y), y = runtime / normalizer;
layout metric = mean Kendall tau-b(score, runtime) (scipy.stats.kendalltau);
OPA = among pairs with different runtimes, the fraction whose scores are strictly
ordered like the runtimes (tied scores count as wrong).

random: i.i.d. uniform scores, RANDOM_DRAWS (100) draws per graph, the mean of each
graph's metric over the draws, then the mean over graphs (the expected metric of a
random ranking).

heuristic: every candidate feature f and sign in {+, -} scores a config by sign * f:
  tile:   f = config_feat[:, j], j = 0..23;
  layout: f = sum over the configurable nodes of node_config_feat[:, :, j], j = 0..17,
          and "n_default" = the number of -1 entries over all nodes and slots (the
          "fewest non-default tensors" heuristic of docs/synth.md section 7).
The (f, sign) with the best mean metric on the TRAIN split is chosen and reported on
valid (and holdout): a fitted baseline that never sees the evaluation data. A graph
where f is constant (tau undefined) counts as tau 0 (no information), not skipped.
HOLDOUT_DIR (optional): an independent synthetic dataset whose TRAIN split serves as a
larger held-out set (no method trains or selects on it).
"""
import glob
import json
import math
import os
import sys

import numpy as np
import scipy.stats

COLLECTIONS = ["tile:xla", "layout:xla:random", "layout:xla:default", "layout:nlp:random",
               "layout:nlp:default"]


def load(data, coll, split):
    out = []
    layout = coll.startswith("layout")
    for f in sorted(glob.glob(os.path.join(data, "npz", coll.replace(":", "/"), split, "*.npz"))):
        z = np.load(f)
        rt = z["config_runtime"].astype(np.float64)
        g = {"rt": rt}
        if layout:
            ncf = z["node_config_feat"].astype(np.float64)  # (c, nc, 18)
            feats = ncf.sum(axis=1)  # (c, 18)
            ndef = (ncf == -1).sum(axis=(1, 2)).astype(np.float64)[:, None]
            g["f"] = np.concatenate([feats, ndef], axis=1)
        else:
            g["f"] = z["config_feat"].astype(np.float64)
            nz = z["config_runtime_normalizers"].astype(np.float64)
            g["y"] = np.where(nz > 0, rt / np.where(nz > 0, nz, 1), rt)
        out.append(g)
    return out


def tile_score(pred, y):
    top = np.argsort(pred, kind="stable")[:5]
    return 2.0 - y[top].min() / y.min()


def tau(pred, rt):
    return scipy.stats.kendalltau(pred, rt)[0]


def opa(pred, rt):
    dp = np.sign(pred[:, None] - pred[None, :])
    dr = np.sign(rt[:, None] - rt[None, :])
    iu = np.triu_indices(len(rt), 1)
    dp, dr = dp[iu], dr[iu]
    den = np.count_nonzero(dr)
    return np.count_nonzero(dp * dr > 0) / den if den else float("nan")


def metric(pred, g, layout):
    if layout:
        return tau(pred, g["rt"])
    return tile_score(pred, g["y"])


def nanmean(v):
    v = [x for x in v if not math.isnan(x)]
    return float(np.mean(v)) if v else float("nan")


def summary(graphs, layout, scorer):
    """Mean metric, tau and OPA over graphs; scorer(g) -> list of score vectors (averaged)."""
    m, t, o = [], [], []
    for g in graphs:
        preds = scorer(g)
        m.append(np.mean([metric(p, g, layout) for p in preds]))
        t.append(nanmean([tau(p, g["rt"]) for p in preds]))
        o.append(nanmean([opa(p, g["rt"]) for p in preds]))
    return nanmean(m), nanmean(t), nanmean(o)


def main():
    data, seed = sys.argv[1], int(sys.argv[2])
    holdout = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else None
    draws = int(sys.argv[4]) if len(sys.argv) > 4 else 100
    for coll in COLLECTIONS:
        layout = coll.startswith("layout")
        tr = load(data, coll, "train")
        evals = [("valid", load(data, coll, "valid"))]
        if holdout:
            evals.append(("holdout", load(holdout, coll, "train")))
        nfeat = tr[0]["f"].shape[1]
        names = [f"col{j}" for j in range(nfeat)]
        if layout:
            names[-1] = "n_default"
        # fit: best (feature, sign) on train; tau 0 where a feature is constant
        best = None
        for j in range(nfeat):
            for sign in (1.0, -1.0):
                vals = []
                for g in tr:
                    v = metric(sign * g["f"][:, j], g, layout)
                    vals.append(0.0 if math.isnan(v) else v)
                mtr = float(np.mean(vals))
                if best is None or mtr > best[0]:
                    best = (mtr, j, sign)
        mtr, j, sign = best
        for split, graphs in evals:
            rng = np.random.default_rng(seed * 1000 + COLLECTIONS.index(coll))
            mr, tr_, orr = summary(graphs, layout,
                                   lambda g: [rng.random(len(g["rt"])) for _ in range(draws)])
            print(json.dumps({"seed": seed, "collection": coll, "method": "random",
                              "split": split, "metric": mr, "tau": tr_, "opa": orr}))

            def heur(g):
                return [sign * g["f"][:, j]]
            m, t, o = summary(graphs, layout, heur)
            if layout:  # constant feature on a graph: tau 0, as in the fit
                m = float(np.mean([0.0 if math.isnan(v) else v
                                   for v in (tau(sign * g["f"][:, j], g["rt"]) for g in graphs)]))
            print(json.dumps({"seed": seed, "collection": coll, "method": "heuristic",
                              "split": split, "metric": m, "tau": t, "opa": o,
                              "feature": names[j], "sign": "+" if sign > 0 else "-",
                              "train_metric": mtr}))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
