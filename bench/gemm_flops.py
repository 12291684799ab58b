#!/usr/bin/env python3
"""GEMM FLOPs of one training epoch of perfcast's model, counted analytically.

usage: gemm_flops.py MODEL.st DATA_DIR COLLECTION K

Reads the layer shapes from the checkpoint (safetensors header) and, from the
train split's .npz files, each graph's nodes n, configurable nodes nc and
configs c. One epoch = one training step per train graph (as train.c and
bench/bench_train.c), with k = min(c, K) sampled configs. Per step, every
linear layer (out = in @ w^T, rows x IC -> OC) costs 2*rows*IC*OC flops
forward, the same again for dW and again for dX where train.c computes it
(see src/gnn/gnn.c):
  input projection   rows n,        IC F+E, OC H:  fwd, dX, dW
  config projection  rows k*nc (layout) or k (tile early join), IC D, OC H: fwd, dW
  GNN layer (x L)    rows k*n,      IC 3H,  OC H:  fwd, dX, dW
  head 1             rows k,        IC R,   OC H:  fwd, dX, dW
  head 2             rows k,        IC H,   OC 1:  fwd, dX, dW
Prints one line: collection, graphs, flops per epoch, and the share of the
GNN layers, and mean GNN rows (k*n) per step.
"""
import glob
import json
import os
import struct
import sys

import numpy as np


def shapes(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
    meta = json.loads(h["__metadata__"]["perfcast"])
    return {k: v["shape"] for k, v in h.items() if k != "__metadata__"}, meta


def main():
    model, data, coll, K = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    sh, meta = shapes(model)
    arch = meta["architecture"]
    if (arch.get("join", "early") != "early" or arch.get("prune_hops", -1) >= 0
            or arch.get("pool") != "mean"):
        sys.exit("gemm_flops.py: counts only the default model (early join, mean pool, no pruning)")
    H, L, E = arch["hidden"], arch["layers"], arch["emb_dim"]
    F, D = arch["feat_dim"], arch["cfg_dim"]
    R = sh["param.head.w1"][1]
    assert sh["param.in.w"] == [H, F + E] and sh["param.cfg.w"] == [H, D]
    parts = coll.split(":")
    root = os.path.join(data, "npz") if os.path.isdir(os.path.join(data, "npz")) else data
    files = sorted(glob.glob(os.path.join(root, *parts, "train", "*.npz")))
    layout = parts[0] == "layout"
    tot = gnn = rows = 0
    for fn in files:
        z = np.load(fn)
        n = z["node_feat"].shape[0]
        c = z["config_runtime"].shape[0]
        if c < 2:
            continue
        nc = z["node_config_ids"].shape[0] if layout else 0
        k = min(c, K)
        lin = lambda r, ic, oc, passes: 2.0 * r * ic * oc * passes  # noqa: E731
        g = L * lin(k * n, 3 * H, H, 3)
        f = (lin(n, F + E, H, 3) + lin(k * nc if layout else k, D, H, 2) + g
             + lin(k, R, H, 3) + lin(k, H, 1, 3))
        tot += f
        gnn += g
        rows += k * n
    steps = len(files)
    print(f"gemm_flops {coll} graphs {steps} K {K} hidden {H} layers {L} F+E {F + E} D {D} R {R} "
          f"flops_per_epoch {tot:.6e} gnn_share {gnn / tot:.4f} mean_gnn_rows {rows / steps:.0f}")


if __name__ == "__main__":
    main()
