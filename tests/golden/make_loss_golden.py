#!/usr/bin/env python3
"""
Writes tests/golden/golden_loss.npz for tests/unit/test_golden.c: the ranking
losses' combination (src/nn/nn.h, pc_loss_combo), above all the margin loss
over close pairs, against the float64 PyTorch twin (torch_twin.py: the
difference-matrix formulation with numpy's dense ranks, not the C code's
sorted walk).

    /usr/bin/python3 tests/golden/make_loss_golden.py [OUT_DIR]   (default: tests/golden)

Per case c (CASES): s.<c> float32 (K,) scores, y.<c> float64 (K,) runtimes
(ties, and a NaN in one case), cfg.<c> float64 [w_listmle, w_hinge, w_mse,
w_margin, listmle_T, hinge_margin, hinge_T, margin, margin_T, window], and
from the twin loss.<c> float64 [L] and g.<c> float64 (K,) dL/ds.

Everything is seeded; rerunning reproduces the file (checked by
tests/scripts/test_golden_regen.py).
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_twin as tw  # noqa: E402

# name: K, ties, NaN runtime, weights (listmle, hinge, mse, margin), margin, margin_T, window
CASES = {
    "margin_w1": (16, False, False, (0, 0, 0, 1), 0.1, 1.0, 1),
    "margin_w2_ties": (16, True, False, (0, 0, 0, 1), 0.1, 1.0, 2),
    "margin_w3_t10": (32, True, False, (0, 0, 0, 1), 1.0, 10.0, 3),
    "margin_nan": (9, False, True, (0, 0, 0, 1), 0.5, 1.0, 2),
    "listmle_margin": (16, True, False, (1, 0, 0, 0.5), 0.1, 1.0, 2),
    "all_four": (24, True, False, (1, 0.5, 0.02, 1), 0.2, 2.0, 4),
}


def build(name, case, seed):
    K, ties, nan, w, margin, margin_t, window = case
    rng = np.random.RandomState(seed)
    s = rng.standard_normal(K).astype(np.float32)
    y = rng.uniform(1.0, 5.0, K)
    if ties:
        y = np.floor(y * 2.0) / 2.0
    if nan:
        y[K // 2] = np.nan
    cfg = dict(w_listmle=w[0], w_hinge=w[1], w_mse=w[2], w_margin=w[3], listmle_t=1.0,
               hinge_margin=0.1, hinge_t=1.0, margin=margin, margin_t=margin_t, window=window)
    st = torch.tensor(s.astype(np.float64), requires_grad=True)
    L = tw.combo(st, list(y), cfg)
    L.backward()
    vec = np.array([cfg[k] for k in ("w_listmle", "w_hinge", "w_mse", "w_margin", "listmle_t",
                                     "hinge_margin", "hinge_t", "margin", "margin_t", "window")],
                   dtype=np.float64)
    return {f"s.{name}": s, f"y.{name}": y, f"cfg.{name}": vec,
            f"loss.{name}": np.array([float(L)], dtype=np.float64),
            f"g.{name}": st.grad.detach().numpy().copy()}


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)
    arrays = {}
    for i, (name, case) in enumerate(CASES.items()):
        arrays.update(build(name, case, seed=4321 + i))
    path = os.path.join(out_dir, "golden_loss.npz")
    np.savez_compressed(path, **arrays)
    print(f"{path}: " + ", ".join(f"{n} {arrays['loss.' + n][0]:.6f}" for n in CASES))


if __name__ == "__main__":
    main()
