#!/usr/bin/env python3
"""
Writes the golden reference for perfcast's cross-configuration attention
(pc_cfg_attention_*, src/nn/attention.c), read by tests/unit/test_nn_attention.c:

    /usr/bin/python3 tests/golden/make_attention_golden.py [OUT_DIR]   (default: tests/golden)

golden_attention.npz holds, per case <c> (see CASES):
  meta.<c>   int32 [G, K, C, heads, layernorm, bias]
  eps.<c>    float64 [LayerNorm eps]
  x.<c>      float32 (G*K, C) input, r.<c> float32 (G*K, C) loss weights
  p.<c>.<n>  float32 parameters, n in ln_g ln_b wq wk wv wo bq bk bv bo (present ones only)
  out.<c>    float64 (G*K, C) output
  loss.<c>   float64 [sum(out * r)]
  g.<c>.<n>  float64 gradient of the loss w.r.t. x and each parameter; g.<c>.bk is
             stored as exactly 0 (bk cancels in the softmax: torch's value is rounding)

The reference is computed in float64 with torch.nn.MultiheadAttention (its
in_proj_weight is [wq; wk; wv], out_proj is wo) after F.layer_norm, an
implementation independent of perfcast's. Everything is seeded; rerunning
reproduces the file (checked by tests/scripts/test_golden_regen.py).
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

CASES = {
    # pre-LayerNorm, biases, 2 heads, 2 graphs of 5 configs
    "ln": dict(G=2, K=5, C=8, heads=2, layernorm=1, bias=1),
    # plain: no LayerNorm, no biases, one head, one graph of 6 configs
    "plain": dict(G=1, K=6, C=8, heads=1, layernorm=0, bias=0),
}
EPS = 1e-5


def build(name, case, seed):
    rng = np.random.RandomState(seed)
    G, K, C, H = case["G"], case["K"], case["C"], case["heads"]
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    x = f32(G * K, C)
    r = f32(G * K, C)
    p = {}
    if case["layernorm"]:
        p["ln_g"] = (1.0 + 0.3 * rng.standard_normal(C)).astype(np.float32)
        p["ln_b"] = (0.3 * rng.standard_normal(C)).astype(np.float32)
    for n in ("wq", "wk", "wv", "wo"):
        # a larger spread than 1/sqrt(C) so the softmax is far from uniform
        p[n] = (rng.standard_normal((C, C)) * 0.8).astype(np.float32)
    if case["bias"]:
        for n in ("bq", "bk", "bv", "bo"):
            p[n] = (0.3 * rng.standard_normal(C)).astype(np.float32)

    t = {n: torch.tensor(v, dtype=torch.float64, requires_grad=True) for n, v in p.items()}
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    mha = torch.nn.MultiheadAttention(C, H, bias=bool(case["bias"]), batch_first=True,
                                      dtype=torch.float64)
    # route the module's parameters to our leaf tensors
    del mha.in_proj_weight
    mha.in_proj_weight = torch.cat([t["wq"], t["wk"], t["wv"]], 0)
    del mha.out_proj.weight
    mha.out_proj.weight = t["wo"]
    if case["bias"]:
        del mha.in_proj_bias
        mha.in_proj_bias = torch.cat([t["bq"], t["bk"], t["bv"]], 0)
        del mha.out_proj.bias
        mha.out_proj.bias = t["bo"]
    xb = tx.view(G, K, C)
    yb = F.layer_norm(xb, (C,), t["ln_g"], t["ln_b"], EPS) if case["layernorm"] else xb
    att, _ = mha(yb, yb, yb, need_weights=False)
    out = (xb + att).reshape(G * K, C)
    loss = (out * torch.tensor(r, dtype=torch.float64)).sum()
    loss.backward()

    a = {f"meta.{name}": np.array([G, K, C, H, case["layernorm"], case["bias"]], dtype=np.int32),
         f"eps.{name}": np.array([EPS], dtype=np.float64),
         f"x.{name}": x, f"r.{name}": r,
         f"out.{name}": out.detach().numpy().astype(np.float64),
         f"loss.{name}": np.array([loss.item()], dtype=np.float64),
         f"g.{name}.x": tx.grad.numpy().astype(np.float64)}
    for n, v in p.items():
        a[f"p.{name}.{n}"] = v
        a[f"g.{name}.{n}"] = t[n].grad.numpy().astype(np.float64)
    if case["bias"]:
        assert np.max(np.abs(a[f"g.{name}.bk"])) < 1e-9 * np.max(np.abs(a[f"g.{name}.bq"]))
        a[f"g.{name}.bk"] = np.zeros(C, dtype=np.float64)
    return a


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)
    arrays = {}
    for i, (name, case) in enumerate(CASES.items()):
        arrays.update(build(name, case, seed=4321 + i))
    path = os.path.join(out_dir, "golden_attention.npz")
    np.savez_compressed(path, **arrays)
    print(f"{path}: " + ", ".join(f"{n} loss {arrays['loss.' + n][0]:.6f}" for n in CASES))


if __name__ == "__main__":
    main()
