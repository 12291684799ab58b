#!/usr/bin/env python3
"""Writes a realistic layout .npz for the load benchmark (numpy, deterministic).

20,000-node graph, 1,000 configurable nodes, 1,000 configurations:
node_config_feat is (1000, 1000, 18) float32 = 72 MB uncompressed, with values
-1..5 distributed like real minor-to-major layouts (per-tensor rank 2..4, a
permutation of its axes, or all -1 for "compiler default").

usage: make_layout_file.py OUT.npz [--stored] [--nodes N] [--config-nodes NC] [--configs C]
(defaults 20000 / 1000 / 1000 give the file above, byte for byte as before;
node_splits scale with N: [0, N/5, 9N/20, N])
"""
import argparse

import numpy as np


def main():
    ap = argparse.ArgumentParser(description="Writes a realistic layout .npz (numpy).")
    ap.add_argument("out")
    ap.add_argument("--stored", action="store_true", help="np.savez instead of savez_compressed")
    ap.add_argument("--nodes", type=int, default=20000)
    ap.add_argument("--config-nodes", type=int, default=1000)
    ap.add_argument("--configs", type=int, default=1000)
    a = ap.parse_args()
    out, stored = a.out, a.stored
    rng = np.random.default_rng(12345)
    n, nc, c = a.nodes, a.config_nodes, a.configs

    node_feat = np.zeros((n, 140), np.float32)
    dims = 2 ** rng.integers(0, 11, size=(n, 6))
    rank = rng.integers(0, 5, size=n)
    mask = np.arange(6)[None, :] < rank[:, None]
    node_feat[:, 21:27] = np.where(mask, dims, 0)
    node_feat[:, 27] = node_feat[:, 21:27].sum(1)
    node_feat[:, 28] = np.where(mask, dims, 1).prod(1)
    node_feat[np.arange(n), 2 + rng.integers(0, 19, size=n)] = 1.0
    node_feat[:, 134:140] = np.where(mask, rng.integers(0, 4, size=(n, 6)), 0)
    node_opcode = rng.choice(np.array([2, 13, 24, 26, 34, 41, 45, 63, 70, 75, 98], np.uint8), n)

    src = np.repeat(np.arange(1, n), 2)[: int(1.7 * n)]
    dst = (src - 1 - rng.integers(0, 50, size=src.size)).clip(0)
    edges = np.unique(np.stack([src, dst], 1), axis=0).astype(np.int64)

    node_config_ids = np.sort(rng.choice(n, nc, replace=False)).astype(np.int64)
    trank = rng.integers(2, 5, size=(1, nc, 3, 1))
    keys = rng.random((c, nc, 3, 6))
    slot = np.arange(6)[None, None, None, :]
    keys = np.where(slot < trank, keys, np.inf)
    perm = np.argsort(keys, axis=-1)
    feat = np.where(slot < trank, perm, -1)
    default = rng.random((c, nc, 3, 1)) < 0.4
    feat = np.where(default, -1, feat).reshape(c, nc, 18).astype(np.float32)

    runtime = rng.integers(5_000_000, 50_000_000, size=c).astype(np.int64)
    splits = np.array([[0, n // 5, 9 * n // 20, n]], np.int64)
    save = np.savez if stored else np.savez_compressed
    save(out, node_feat=node_feat, node_opcode=node_opcode, edge_index=edges,
         node_config_ids=node_config_ids, node_config_feat=feat, node_splits=splits,
         config_runtime=runtime)


if __name__ == "__main__":
    main()
