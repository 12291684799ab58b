#!/usr/bin/env python3
"""Diagnostic of issue #15's tile target (bench/RESULTS.md, third pass): how
well does a scorer pick among a tile file's own configs? For every kernel of
the given synth folders it prints the geometric means of (true runtime of the
scorer's top-1 / the compiler default's), best of its top 5 / default, the
file's best / default and top-1 / the file's best ("perfcast simulate").

  tile_top1_diag.py model PERFCAST MODEL DIR:SEED:SPLITS...
      the model's argmax (perfcast rank)
  tile_top1_diag.py xgb PERFCAST TRAIN_DIR[,TRAIN_DIR...] DIR:SEED:SPLITS...
      a baseline only (never in the product): an xgboost pairwise ranker on
      log2 config features, the root's log2 output shape, the opcodes present
      and the grid steps ceil(extent / output tile) per output dim, trained on
      the train splits of TRAIN_DIRs (their measured runtimes)

DIR is a `perfcast synth --scale small` folder, SEED its seed, SPLITS e.g.
valid,test. Simulated runtimes are cached next to each file (FILE.sim.json).
"""
import glob, json, math, os, subprocess, sys
import numpy as np


def sim(P, f, seed):
    c = f + ".sim.json"
    if not os.path.exists(c):
        out = subprocess.run([P, "simulate", f, "--seed", str(seed), "--scale", "small", "--json"],
                             capture_output=True, text=True, check=True).stdout
        with open(c, "w") as fh:
            fh.write(out)
    with open(c) as fh:
        j = json.load(fh)
    return j["default_ns"], {r["config"]: r["ns"] for r in j["runtimes"]}


def files(specs):
    for spec in specs:
        d, seed, splits = spec.split(":")
        for sp in splits.split(","):
            for f in sorted(glob.glob(f"{d}/npz/tile/xla/{sp}/*.npz")):
                yield f, seed


def feats(z):
    cf = z["config_feat"].astype(np.float64)
    nf, op = z["node_feat"], z["node_opcode"]
    shp = nf[len(nf) - 1][21:27]  # the root's output shape
    kf = np.concatenate([np.log2(1 + np.maximum(shp, 0)), np.bincount(op, minlength=128)[:128] > 0])
    ob = cf[:, 8:14]
    steps = np.where(ob > 0, np.ceil(np.maximum(shp, 1)[None] / np.maximum(ob, 1)), 1)
    return np.concatenate([np.log2(1 + np.maximum(cf, 0)), np.repeat(kf[None], len(cf), 0),
                           np.log2(steps), np.log2(steps.prod(1, keepdims=True))], 1)


def report(name, rows):
    gm = lambda i: math.exp(sum(math.log(r[i]) for r in rows) / len(rows))
    print(f"{name}: {len(rows)} kernels  top1/default {gm(0):.3f}  best5/default {gm(1):.3f}  "
          f"filebest/default {gm(2):.3f}  top1/filebest {gm(3):.3f}  "
          f"top1 slower than default {sum(r[0] > 1.001 for r in rows) / len(rows):.0%}")


def row(order, dflt, rt):
    first, best = rt[int(order[0])], min(rt.values())
    return (first / dflt, min(rt[int(i)] for i in order[:5]) / dflt, best / dflt, first / best)


def main():
    mode, P = sys.argv[1], sys.argv[2]
    rows = []
    if mode == "model":
        M = sys.argv[3]
        for f, seed in files(sys.argv[4:]):
            dflt, rt = sim(P, f, seed)
            out = subprocess.run([P, "rank", "--model", M, f, "--top", "0", "--json"],
                                 capture_output=True, text=True, check=True).stdout
            top = json.loads(out)["graphs"][0]["top"]
            rows.append(row([t["config"] for t in top], dflt, rt))
        report(M, rows)
        return
    import xgboost as xgb
    X, y, grp = [], [], []
    for d in sys.argv[3].split(","):
        for f in sorted(glob.glob(f"{d}/npz/tile/xla/train/*.npz")):
            z = np.load(f)
            r = z["config_runtime"].astype(np.float64)
            X.append(feats(z))
            y.append(np.clip(np.round(30 * (1 - np.log(r / r.min()) / np.log(r.max() / r.min()))), 0, 30))
            grp.append(len(r))
    dm = xgb.DMatrix(np.concatenate(X), label=np.concatenate(y))
    dm.set_group(grp)
    bst = xgb.train({"objective": "rank:pairwise", "max_depth": 6, "eta": 0.1, "nthread": 2}, dm, 300)
    for f, seed in files(sys.argv[4:]):
        dflt, rt = sim(P, f, seed)
        s = bst.predict(xgb.DMatrix(feats(np.load(f))))
        rows.append(row(np.argsort(-s), dflt, rt))
    report(f"xgboost on {len(grp)} training kernels", rows)


if __name__ == "__main__":
    main()
