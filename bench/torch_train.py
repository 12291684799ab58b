"""
Training-step throughput of the PyTorch twin (the reference side of run_train.sh).

  torch_train.py MODEL.safetensors DATA_DIR COLLECTION THREADS CONFIGS WARMUP STEPS

The model is tests/golden/torch_twin.py's math (same layers, LayerNorm, mean
aggregation over operands and users, mean pooling, head), in float32 like
perfcast, with SPARSE aggregation (index_add_ over the edge list, inverse
degrees precomputed) instead of the twin's dense n x n matrices. Joins: tile
early, layout early, and layout late (the GNN once per graph, then per config
act(cfg @ cfg.w^T + cfg.b + h_L[ids] @ late.w^T) on the configurable nodes,
mean-pooled per config, batched over the K configs). Parameters and the
fitted feature preprocessing are read from the same perfcast checkpoint the C
side loads, so both start from the same weights and see the same inputs
(layout graphs k-hop pruned as the checkpoint's prune_hops says, perfcast's
layout default; see prune_khop). Graphs are loaded with numpy and
preprocessed up front (untimed, as on the C side). Per step, as
src/train/train_data.c and train_loop.c: one graph (shuffled order), K configs sampled without
replacement, config gather + preprocessing, forward, loss (tile: ListMLE
T=10 + 0.02 MSE, weights renormalized; layout: pairwise hinge margin 0.1
T=1), zero_grad, backward, clip_grad_norm_(1), cosine LR with warmup,
AdamW(wd 1e-4). WARMUP steps untimed, then STEPS timed as a whole. Prints
one line like bench_train.
"""
import glob
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from prune_stats import khop  # noqa: E402  (the same numpy re-implementation of src/graph's rule)
import encode_np  # noqa: E402  (numpy re-implementation of src/gnn/encode.h's encodings)

LEAKY = 0.01


def act(x):
    return torch.nn.functional.leaky_relu(x, LEAKY)


def read_safetensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    meta = json.loads(h.pop("__metadata__")["perfcast"])
    dt = {"F32": np.float32, "I32": np.int32}
    out = {}
    for k, v in h.items():
        s, e = v["data_offsets"]
        out[k] = np.frombuffer(b[8 + n + s:8 + n + e], dtype=dt[v["dtype"]]).reshape(v["shape"])
    return out, meta


def prep(t, which, x):
    keep, logt = t[f"prep.{which}.keep"], t[f"prep.{which}.logt"].astype(bool)
    mean, std = t[f"prep.{which}.mean"], t[f"prep.{which}.std"]
    y = x[..., keep].astype(np.float64)
    y[..., logt] = np.sign(y[..., logt]) * np.log1p(np.abs(y[..., logt]))
    return ((y - mean) / std).astype(np.float32)


def prune_khop(arch, n, e, ids):
    """perfcast's k-hop pruning of a layout graph (src/graph/prune.c, done at load when the
    checkpoint's architecture has prune_hops, the layout default): keep the configurable nodes
    and every node within prune_hops undirected hops of one (all nodes when there is no
    configurable node), renumbered in ascending order; the edges with both ends kept, in
    order; ids remapped. Returns (kept node indices or None when not pruned, edges, ids)."""
    hops = arch.get("prune_hops", -1)
    if arch["kind"] != "layout" or hops < 0:
        return None, e, ids
    assert not arch.get("collapse_chains", 0), "--collapse-chains is not in the twin"
    keep = khop(n, e, ids, hops) if len(ids) else np.ones(n, bool)
    u, v = e[:, 0], e[:, 1]
    kept = np.nonzero(keep)[0]
    new = np.full(n, -1, np.int64)
    new[kept] = np.arange(len(kept))
    e = e[keep[u] & keep[v]]
    return kept, new[e], new[ids]


def load_graph(tensors, arch, path):
    """One graph as perfcast's trainer sees it: (layout) k-hop pruned, raw features
    encoded as the checkpoint's architecture says (--encode, bits in arch["encode"]),
    then the checkpoint's fitted preprocessing; edges as index tensors with inverse
    degrees; y = runtime / normalizer where the file has normalizers."""
    layout = arch["kind"] == "layout"
    bits = int(arch.get("encode", 0))
    z = np.load(path)
    n = z["node_feat"].shape[0]
    e = z["edge_index"].astype(np.int64).reshape(-1, 2)
    ids = z["node_config_ids"].astype(np.int64) if layout else None
    kept, e, ids = prune_khop(arch, n, e, ids)
    rows = slice(None) if kept is None else kept
    n = n if kept is None else len(kept)
    dops = np.bincount(e[:, 0], minlength=n).astype(np.float32)
    dusr = np.bincount(e[:, 1], minlength=n).astype(np.float32)
    inv = lambda d: torch.as_tensor(np.where(d > 0, 1.0 / np.maximum(d, 1), 0.0)
                                    .astype(np.float32)).reshape(1, n, 1)
    rt = z["config_runtime"].astype(np.float64)
    norm = None
    if "config_runtime_normalizers" in z.files:
        norm = z["config_runtime_normalizers"].astype(np.float64)
        y = np.where(norm > 0, rt / np.where(norm > 0, norm, 1), rt)
    else:
        y = rt
    x = encode_np.encode_node(z["node_feat"][rows].astype(np.float32), bits)
    g = {"x": torch.as_tensor(prep(tensors, "node", x)),
         "op": torch.as_tensor(z["node_opcode"][rows].astype(np.int64)),
         "u": torch.as_tensor(e[:, 0]), "v": torch.as_tensor(e[:, 1]),
         "inv_ops": inv(dops), "inv_usr": inv(dusr), "y": y, "rt": rt, "norm": norm, "n": n}
    kind = "layout" if layout else "tile"
    c = z["node_config_feat" if layout else "config_feat"].astype(np.float32)
    shape = c.shape
    c = encode_np.encode_configs(c.reshape(-1, shape[-1]), kind, bits)
    g["cfg"] = prep(tensors, "cfg", c.reshape(*shape[:-1], c.shape[-1]))  # (c, [nc,] D)
    if layout:
        g["ids"] = torch.as_tensor(ids)
    return g


class SparseTwin(torch.nn.Module):
    def __init__(self, tensors, arch):
        super().__init__()
        self.arch = arch
        self.L = arch["layers"]
        self.layout = arch["kind"] == "layout"
        # layout late join: the GNN is config-independent (see prefix)
        self.late = self.layout and arch["join"] == "late"
        assert arch["join"] == "early" or self.late, "tile late join is not in the twin"
        assert arch["pool"] == "mean" and arch["act"] == "leaky_relu"
        assert arch["layernorm"] == 1 and arch["dropout"] == 0
        self.p = torch.nn.ParameterDict()
        for k, v in tensors.items():
            if k.startswith("param."):
                self.p[k[6:].replace(".", "_")] = torch.nn.Parameter(torch.tensor(v))

    def gnn(self, g, pre0):
        """h_L from pre0 (S, n, H): h0 = act(pre0), then the L residual layers."""
        p = self.p
        H = pre0.shape[-1]
        h = act(pre0)
        u, v, iops, iusr = g["u"], g["v"], g["inv_ops"], g["inv_usr"]
        for l in range(self.L):
            z = torch.nn.functional.layer_norm(h, (H,), p[f"gnn_{l}_ln_g"], p[f"gnn_{l}_ln_b"], 1e-5)
            ops = torch.zeros_like(z).index_add_(1, u, z[:, v, :]) * iops
            usr = torch.zeros_like(z).index_add_(1, v, z[:, u, :]) * iusr
            cat = torch.cat([z, ops, usr], dim=-1)
            h = h + act(cat @ p[f"gnn_{l}_w"].t() + p[f"gnn_{l}_b"])
        return h

    def base(self, g):
        p = self.p
        x0 = torch.cat([g["x"], p["emb"][g["op"]]], dim=1)
        return x0 @ p["in_w"].t() + p["in_b"]  # (n,H)

    def prefix(self, g):
        """Layout late join: the config-independent part of g, shared by all its configs:
        the pooled GNN output (1,H) and the configurable nodes' projection h_L[ids] @ late.w^T
        (nc,H). Pass it to forward to score several chunks of configs of g."""
        assert self.late
        h = self.gnn(g, self.base(g).unsqueeze(0))  # (1,n,H)
        return h.mean(dim=1), h[0, g["ids"], :] @ self.p["late_w"].t()

    def forward(self, g, cfg, pre=None):
        p = self.p
        K = cfg.shape[0]
        if self.late:
            pooled, proj = pre if pre is not None else self.prefix(g)
            u = act(cfg @ p["cfg_w"].t() + p["cfg_b"] + proj.unsqueeze(0))  # (K,nc,H)
            # mean over the configurable nodes; no configurable node pools to 0, as in perfcast
            cp = u.mean(dim=1) if u.shape[1] > 0 else u.new_zeros(K, u.shape[2])
            r = torch.cat([pooled.expand(K, -1), cp], dim=1)
        else:
            base = self.base(g)
            n, H = base.shape
            if self.layout:
                inj = cfg @ p["cfg_w"].t() + p["cfg_b"]  # (K,nc,H)
                pre0 = base.unsqueeze(0) + torch.zeros(K, n, H).index_add_(1, g["ids"], inj)
            else:
                pre0 = base.unsqueeze(0) + (cfg @ p["cfg_w"].t()).unsqueeze(1)  # (K,n,H)
            h = self.gnn(g, pre0)
            r = h.mean(dim=1)
            if self.layout:
                r = torch.cat([r, h[:, g["ids"], :].mean(dim=1)], dim=1)
        hid = act(r @ p["head_w1"].t() + p["head_b1"])
        return (hid @ p["head_w2"].t() + p["head_b2"]).reshape(K)


def listmle_mse(s, y):
    order = torch.as_tensor(np.argsort(y, kind="stable"))
    z = -s[order] / 10.0
    lm = (torch.flip(torch.logcumsumexp(torch.flip(z, [0]), 0), [0]) - z).sum()
    yt = torch.as_tensor(y, dtype=torch.float32)
    mu = float(y.mean())
    t = yt / mu if (math.isfinite(mu) and mu > 0) else torch.zeros_like(yt)
    mse = ((s - t) ** 2).mean()
    return (lm + 0.02 * mse) / 1.02


def hinge(s, y, margin=0.1, T=1.0):
    yt = torch.as_tensor(y)
    mask = yt.unsqueeze(1) < yt.unsqueeze(0)  # [i, j]: y_i < y_j
    if not bool(mask.any()):
        return s.sum() * 0.0
    d = torch.clamp(margin - (s.unsqueeze(0) - s.unsqueeze(1)) / T, min=0.0)  # margin-(s_j-s_i)/T
    return d[mask].mean()


def lr_cosine(step, base, lo, warmup, total):
    # same shape as nn.h pc_lr_cosine: linear warmup then cosine to lo
    if step < warmup:
        return base * (step + 1) / warmup
    t = min(1.0, (step - warmup) / max(1, total - warmup))
    return lo + 0.5 * (base - lo) * (1.0 + math.cos(math.pi * t))


def main():
    model, data, coll, threads, configs, warm, steps = sys.argv[1:8]
    threads, configs, warm, steps = int(threads), int(configs), int(warm), int(steps)
    torch.set_num_threads(threads)
    tensors, meta = read_safetensors(model)
    arch = meta["architecture"]
    layout = arch["kind"] == "layout"
    sub = coll.replace(":", "/")
    graphs = [load_graph(tensors, arch, f)
              for f in sorted(glob.glob(os.path.join(data, "npz", sub, "train", "*.npz")))]
    net = SparseTwin(tensors, arch)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=1e-4)
    rng = np.random.default_rng(1)
    total = warm + steps
    warmup = max(1, min(len(graphs), total // 10))
    order, oi = [], 0
    samples, lsum, t0 = 0, 0.0, 0.0
    for step in range(total):
        if step == warm:
            t0 = time.perf_counter()
            samples, lsum = 0, 0.0
        while True:
            if oi == len(order):
                order, oi = rng.permutation(len(graphs)), 0
            g = graphs[order[oi]]
            oi += 1
            if len(g["y"]) >= 2:
                break
        c = len(g["y"])
        K = min(c, configs)
        ids = rng.choice(c, K, replace=False)
        # raw configs were preprocessed up front; the gather is the per-step part
        cfg = torch.as_tensor(g["cfg"][ids])
        s = net(g, cfg)
        loss = hinge(s, g["y"][ids]) if layout else listmle_mse(s, g["y"][ids])
        opt.zero_grad(set_to_none=False)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        for pg in opt.param_groups:
            pg["lr"] = lr_cosine(step, 1e-3, 1e-3 * 0.05, warmup, total)
        opt.step()
        samples += K
        lsum += float(loss)
    dt = time.perf_counter() - t0
    print(f"torch {coll} threads {threads} steps {steps} samples {samples} seconds {dt:.4f} "
          f"samples_per_s {samples / dt:.1f} mean_loss {lsum / steps:.4f}")


if __name__ == "__main__":
    main()
