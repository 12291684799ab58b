#!/usr/bin/env python3
"""
Writes the golden reference files for tests/unit/test_golden.c:

    /usr/bin/python3 tests/golden/make_golden.py [OUT_DIR]   (default: tests/golden)

Each golden_<case>.npz holds, for one tiny deterministic graph and model
(see CASES): the inputs (x, opcode, edges, cfg, ids, y), the model options
(meta, int32: is_layout, hidden, layers, emb, opcodes, pool, join, act,
layernorm, F, D, steps), the loss settings (loss_cfg, float64: w_listmle,
w_hinge, w_mse, listmle_T, hinge_margin, hinge_T), the optimizer settings
(adam, float64: beta1, beta2, eps, weight_decay, clip) and per-step learning
rates (lrs), the parameters "p.<name>" (float32, named as in perfcast's
arena), and from the float64 PyTorch twin (torch_twin.py): scores, loss and
every parameter gradient "g.<name>" (float64), then the loss before each of
`steps` optimizer steps plus after the last (step_loss, steps+1 values).
A step is: zero grads, forward, combo loss, backward, clip the global grad
norm, AdamW (decoupled decay, torch.optim.AdamW).

Everything is seeded; rerunning reproduces the files (checked by
tests/scripts/test_golden_regen.py).
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_twin as tw  # noqa: E402

CASES = {
    # the defaults perfcast trains with: leaky ReLU, mean pooling, LayerNorm, loss default
    "tile_early": dict(kind="tile", join=0, pool=0, act=0, layernorm=1, D=3,
                       loss=dict(w_listmle=1.0, w_hinge=0.0, w_mse=0.02)),
    # late join, GELU, mean||max pooling, all three loss parts
    "tile_late": dict(kind="tile", join=1, pool=3, act=2, layernorm=1, D=3,
                      loss=dict(w_listmle=1.0, w_hinge=0.5, w_mse=0.1)),
    # layout with the defaults
    "layout": dict(kind="layout", join=0, pool=0, act=0, layernorm=1, D=4,
                   loss=dict(w_listmle=1.0, w_hinge=0.0, w_mse=0.02)),
    # layout late join (late.w) with the layout model defaults; all three loss parts, so
    # every config gets a gradient (hinge alone, all pairs active, gives the median runtime 0)
    "layout_late": dict(kind="layout", join=1, pool=0, act=0, layernorm=1, D=4,
                        loss=dict(w_listmle=1.0, w_hinge=0.5, w_mse=0.1)),
}

N_NODES, F, H, L, E, OPCODES, K, STEPS = 7, 5, 8, 2, 4, 6, 5, 5
# [u, v]: u consumes v; node 0 and 1 are sources, 6 the sink; one duplicate edge (3,1)
EDGES = [(2, 0), (2, 1), (3, 1), (3, 1), (3, 2), (4, 2), (5, 3), (5, 4), (6, 5), (6, 0)]
IDS = [5, 1, 3]  # layout: configurable nodes, not sorted
Y = [3.0, 1.5, 4.0, 1.5, 2.5]  # runtimes with a tie (index order breaks it)


def build(name, case, seed):
    rng = np.random.RandomState(seed)
    o = dict(kind=case["kind"], hidden=H, layers=L, emb=E, opcodes=OPCODES, pool=case["pool"],
             join=case["join"], act=case["act"], layernorm=case["layernorm"], F=F, D=case["D"])
    D = o["D"]
    x = rng.standard_normal((N_NODES, F)).astype(np.float32)
    opcode = rng.randint(0, OPCODES, size=N_NODES).astype(np.int32)
    edges = np.array(EDGES, dtype=np.int32)
    layout = o["kind"] == "layout"
    ids = np.array(IDS if layout else [], dtype=np.int32)
    cshape = (K, len(IDS), D) if layout else (K, D)
    cfg = rng.standard_normal(cshape).astype(np.float32)
    y = np.array(Y, dtype=np.float64)
    params = {}
    for pname, shape in tw.Twin.param_shapes(o):
        if pname.endswith(".ln.g"):
            v = 1.0 + 0.1 * rng.standard_normal(shape)
        elif len(shape) == 2:
            v = rng.uniform(-1, 1, shape) * np.sqrt(6.0 / (shape[0] + shape[1]))
        else:
            v = 0.1 * rng.standard_normal(shape)
        params[pname] = v.astype(np.float32)
    lc = dict(case["loss"], listmle_t=10.0, hinge_margin=1.0, hinge_t=10.0)
    adam = dict(beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01, clip=1.0)
    lrs = np.array([2e-3, 4e-3, 6e-3, 8e-3, 1e-2], dtype=np.float32)[:STEPS]

    tp = {k: torch.tensor(v.astype(np.float64), requires_grad=True) for k, v in params.items()}
    model = tw.Twin(o, tp)
    xt = torch.tensor(x.astype(np.float64))
    ct = torch.tensor(cfg.astype(np.float64))
    opt = torch.tensor(opcode.astype(np.int64))

    def loss_fn():
        s = model.forward(xt, opt, EDGES, ct, IDS if layout else None)
        return s, tw.combo(s, Y, lc)

    s, loss = loss_fn()
    loss.backward()
    out = {"g." + k: v.grad.detach().numpy().copy() for k, v in tp.items()}
    out["scores"] = s.detach().numpy().copy()
    out["loss"] = np.array([float(loss)], dtype=np.float64)

    # training steps from the same start
    plist = [tp[k] for k, _ in tw.Twin.param_shapes(o)]
    optim = torch.optim.AdamW(plist, lr=float(lrs[0]), betas=(adam["beta1"], adam["beta2"]),
                              eps=adam["eps"], weight_decay=adam["weight_decay"])
    step_loss = []
    for t in range(STEPS):
        optim.zero_grad()
        _, lt = loss_fn()
        step_loss.append(float(lt))
        lt.backward()
        tw.clip_grad_norm(plist, adam["clip"])
        for gr in optim.param_groups:
            gr["lr"] = float(lrs[t])
        optim.step()
    with torch.no_grad():
        step_loss.append(float(loss_fn()[1]))

    meta = np.array([int(layout), H, L, E, OPCODES, o["pool"], o["join"], o["act"],
                     o["layernorm"], F, D, STEPS], dtype=np.int32)
    arrays = dict(meta=meta, x=x, opcode=opcode, edges=edges, ids=ids, cfg=cfg, y=y,
                  loss_cfg=np.array([lc["w_listmle"], lc["w_hinge"], lc["w_mse"], lc["listmle_t"],
                                     lc["hinge_margin"], lc["hinge_t"]], dtype=np.float64),
                  adam=np.array([adam["beta1"], adam["beta2"], adam["eps"],
                                 adam["weight_decay"], adam["clip"]], dtype=np.float64),
                  lrs=lrs, step_loss=np.array(step_loss, dtype=np.float64))
    arrays.update({"p." + k: v for k, v in params.items()})
    arrays.update(out)
    return arrays


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)
    for i, (name, case) in enumerate(CASES.items()):
        arrays = build(name, case, seed=1234 + i)
        path = os.path.join(out_dir, f"golden_{name}.npz")
        np.savez_compressed(path, **arrays)
        print(f"{path}: loss {arrays['loss'][0]:.6f}, steps "
              + " ".join(f"{v:.6f}" for v in arrays["step_loss"]))


if __name__ == "__main__":
    main()
