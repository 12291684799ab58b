"""
XGBoost pairwise ranker baseline (issue #14): the gradient-boosted-trees entry
of the comparison, on features computed from the same .npz arrays perfcast reads.

  xgb_baseline.py DATA_DIR SEED BUDGET_SEC [HOLDOUT_DIR] [COLLECTIONS...]

Uses Debian's python3-xgboost (benchmark only; the product never imports it).
Per collection: one XGBRanker-style booster (objective rank:pairwise, one query
group per graph), trained on the TRAIN split until BUDGET_SEC of wall time or
2,000 rounds, with the round count chosen by the VALID metric every 25 rounds
(the same "keep the best on valid" rule perfcast's trainer uses). Prints JSON
lines like quality_baselines.py: {"seed", "collection", "method": "xgboost",
"split", "metric", "tau", "opa", "rounds", "train_s"}, scored with that file's
scorer (tile: tile score; layout: Kendall tau-b).

Features of one configuration (what a tree model can use; graph-level features
are constant within a group but let trees condition on the kind of graph):
  tile:   config_feat (24) and log1p of each, the graph's mean node_feat (140),
          log2 of its node count;
  layout: over the configurable nodes, the sum, mean, min and max of each of the
          18 node_config_feat columns, the number of -1 entries, the same sums
          split by the configurable node's opcode (the 4 most frequent opcodes
          of configurable nodes in train, and "other"), and log2 of the node count.
Labels: relevance = -log(runtime / best runtime of the graph) (higher = faster).
"""
import glob
import json
import os
import sys
import time

import numpy as np
import xgboost as xgb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import quality_baselines as qb  # noqa: E402  (the shared scorer)


def files(data, coll, split):
    return sorted(glob.glob(os.path.join(data, "npz", coll.replace(":", "/"), split, "*.npz")))


def tile_feats(z):
    cf = z["config_feat"].astype(np.float64)  # (c, 24)
    nf = z["node_feat"].astype(np.float64)  # (n, 140)
    c = cf.shape[0]
    g = np.concatenate([nf.mean(axis=0), [np.log2(max(nf.shape[0], 1))]])
    return np.concatenate([cf, np.log1p(np.abs(cf)) * np.sign(cf), np.tile(g, (c, 1))], axis=1)


def layout_feats(z, top_ops):
    ncf = z["node_config_feat"].astype(np.float64)  # (c, nc, 18)
    ops = z["node_opcode"][z["node_config_ids"]]  # (nc,)
    c = ncf.shape[0]
    parts = [ncf.sum(axis=1), ncf.mean(axis=1), ncf.min(axis=1), ncf.max(axis=1),
             (ncf == -1).sum(axis=(1, 2)).astype(np.float64)[:, None]]
    groups = [ops == o for o in top_ops]
    groups.append(~np.isin(ops, top_ops))
    for m in groups:
        parts.append(ncf[:, m, :].sum(axis=1) if m.any() else np.zeros((c, 18)))
    parts.append(np.full((c, 1), np.log2(max(z["node_feat"].shape[0], 1))))
    return np.concatenate(parts, axis=1)


def load(data, coll, split, top_ops):
    layout = coll.startswith("layout")
    out = []
    for f in files(data, coll, split):
        z = np.load(f)
        rt = z["config_runtime"].astype(np.float64)
        g = {"rt": rt}
        if layout:
            g["x"] = layout_feats(z, top_ops)
        else:
            nz = z["config_runtime_normalizers"].astype(np.float64)
            g["y"] = np.where(nz > 0, rt / np.where(nz > 0, nz, 1), rt)
            g["x"] = tile_feats(z)
        out.append(g)
    return out


def frequent_ops(data, coll, k=4):
    counts = {}
    for f in files(data, coll, "train"):
        z = np.load(f)
        for o in z["node_opcode"][z["node_config_ids"]]:
            counts[int(o)] = counts.get(int(o), 0) + 1
    return np.array(sorted(counts, key=lambda o: (-counts[o], o))[:k], dtype=np.int64)


def dmatrix(graphs):
    x = np.concatenate([g["x"] for g in graphs])
    y = np.concatenate([-np.log(g["rt"] / g["rt"].min()) for g in graphs])
    d = xgb.DMatrix(x, label=y)
    d.set_group([len(g["rt"]) for g in graphs])
    return d


def evaluate(bst, graphs, layout, rounds):
    def scorer(g):
        s = bst.predict(xgb.DMatrix(g["x"]), iteration_range=(0, rounds))
        return [-s.astype(np.float64)]  # perfcast convention: lower = faster
    return qb.summary(graphs, layout, scorer)


def run(data, seed, budget, holdout, coll):
    layout = coll.startswith("layout")
    top = frequent_ops(data, coll) if layout else None
    tr, va = load(data, coll, "train", top), load(data, coll, "valid", top)
    params = {"objective": "rank:pairwise", "eta": 0.1, "max_depth": 6, "subsample": 0.8,
              "colsample_bytree": 0.8, "min_child_weight": 1.0, "seed": seed,
              "nthread": 2, "tree_method": "hist"}
    dtr = dmatrix(tr)
    t0 = time.time()
    bst, best, best_rounds, rounds = None, -1e9, 0, 0
    while rounds < 2000 and time.time() - t0 < budget:
        bst = xgb.train(params, dtr, num_boost_round=25, xgb_model=bst)
        rounds += 25
        m = evaluate(bst, va, layout, rounds)[0]
        if m > best:
            best, best_rounds = m, rounds
    train_s = time.time() - t0
    evals = [("valid", va)]
    if holdout:
        evals.append(("holdout", load(holdout, coll, "train", top)))
    for split, graphs in evals:
        m, t, o = evaluate(bst, graphs, layout, best_rounds)
        print(json.dumps({"seed": seed, "collection": coll, "method": "xgboost", "split": split,
                          "metric": m, "tau": t, "opa": o, "rounds": best_rounds,
                          "train_s": round(train_s, 1)}))
        sys.stdout.flush()


def main():
    data, seed, budget = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    holdout = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] else None
    colls = sys.argv[5:] or qb.COLLECTIONS
    for coll in colls:
        run(data, seed, budget, holdout, coll)


if __name__ == "__main__":
    main()
