#!/usr/bin/env python3
"""Experiment of bench/RESULTS.md (issue #15, third pass), not a product path:
copies a synth folder's tile files with grid-step features written into the
config rows' input_bounds slots 16..23 (always zero in tile data): per output
dim ceil(extent / tile) (16..21), their product (22) and the smallest fill of
a last tile (23), the extent being the kernel root's output shape (node_feat
21..26 of the last node). A model trained on the copy sees the quantity the
tile cost depends on as an input instead of having to learn a ratio.

  tile_steps_experiment.py SRC_DIR DST_DIR
"""
import glob, os, sys
import numpy as np


def main():
    src, dst = sys.argv[1], sys.argv[2]
    for f in glob.glob(f"{src}/npz/tile/*/*/*.npz"):
        z = dict(np.load(f))
        cf, nf = z["config_feat"].copy(), z["node_feat"]
        ext = np.maximum(nf[len(nf) - 1][21:27], 1)[None]
        ob = cf[:, 8:14]
        k = ob > 0
        steps = np.where(k, np.ceil(ext / np.maximum(ob, 1)), 0)
        fill = np.where(k, (ext - (steps - 1) * ob) / np.maximum(ob, 1), 1).min(1)
        cf[:, 16:22] = steps
        cf[:, 22] = np.where(k, steps, 1).prod(1)
        cf[:, 23] = fill
        z["config_feat"] = cf.astype(np.float32)
        out = os.path.join(dst, os.path.relpath(f, src))
        os.makedirs(os.path.dirname(out), exist_ok=True)
        np.savez(out, **z)


if __name__ == "__main__":
    main()
