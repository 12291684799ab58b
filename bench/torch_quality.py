"""
The PyTorch twin trained like `perfcast train --time-budget` (the reference side of
run_quality.sh).

  torch_quality.py INIT.st DATA_DIR COLLECTION BUDGET_S SEED THREADS OUT.st [EPOCHS PATIENCE]

Model, losses and per-step math are bench/torch_train.py's (imported from it:
SparseTwin, the preprocessing and layout pruning, ListMLE+MSE for tile, pairwise
hinge for layout, the cosine schedule, AdamW(lr 1e-3, wd 1e-4), clip 1). Parameters and the fitted
preprocessing come from INIT.st, a perfcast checkpoint; run_quality.sh makes it
with `perfcast train --epochs 1 --time-budget 0.000001`, which stops before the
first step and so writes the UNTRAINED initial weights of that seed, i.e. the
exact weights `perfcast train --seed SEED` starts from.

The loop follows src/train/train_loop.c's pc_train_run:
  - the clock starts before loading the train and valid graphs (perfcast's
    budget counts its loading too; Python/torch import time is not counted);
  - total = EPOCHS * train graphs steps for the cosine schedule, warmup
    min(total / 10, train graphs), at least 1;
  - per epoch: shuffled graph order, one step per graph with c >= 2
    (K = min(c, 32 tile / 16 layout) configs without replacement);
  - before an epoch: stop if an epoch has been evaluated and elapsed + the
    last epoch's duration would pass the budget; before each step: stop when
    the budget is spent, and drop the partial epoch (no validation) unless no
    epoch has been evaluated yet;
  - after each epoch: the collection's metric on ALL configs of every valid
    graph (tile: mean tile score 2 - best-of-top-5 / best, y = runtime /
    normalizer; layout: mean Kendall tau-b(score, runtime), NaN graphs skipped),
    keep the best parameters (strictly better, or the first epoch), early stop
    after PATIENCE epochs without gain.
Writes the best parameters into OUT.st (a copy of INIT.st with the parameter
bytes replaced), so `perfcast eval` scores the twin with perfcast's own metric
code, and prints one JSON line: epochs run, best epoch, best valid metric (its
own computation), steps, seconds.
"""
import glob
import json
import math
import os
import struct
import sys
import time

T_START = time.perf_counter()

import numpy as np  # noqa: E402
import scipy.stats  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_train import (SparseTwin, hinge, listmle_mse, load_graph, lr_cosine,  # noqa: E402
                         read_safetensors)


def load_split(tensors, arch, data, coll, split):
    """The graphs of one split, encoded, preprocessed and (layout) pruned as perfcast loads them."""
    sub = coll.replace(":", "/")
    return [load_graph(tensors, arch, f)
            for f in sorted(glob.glob(os.path.join(data, "npz", sub, split, "*.npz")))]


def tile_score(pred, rt, norm):
    y = rt / norm if norm is not None else rt
    top = np.argsort(pred, kind="stable")[:5]  # lowest scores, ties by index (metrics.h)
    return 2.0 - y[top].min() / y.min()


def score_all(net, g, hidden):
    """Scores of every config of g, in chunks of about 12 MB per (K, n, H) tensor (about 16
    configs of a 3k-node layout graph: larger chunks ran slower per config on 2 cores).
    Layout late join: the GNN runs once (net.prefix), the chunks are (K, nc, H)."""
    c = len(g["y"])
    rows = g["cfg"].shape[1] if net.late else g["n"]
    chunk = int(max(1, min(256, 3e6 / (max(rows, 1) * hidden))))
    out = np.empty(c)
    with torch.no_grad():
        pre = net.prefix(g) if net.late else None
        for c0 in range(0, c, chunk):
            cfg = torch.as_tensor(g["cfg"][c0:c0 + chunk])
            out[c0:c0 + chunk] = net(g, cfg, pre).double().numpy()
    return out


def evaluate(net, graphs, layout, hidden):
    vals = []
    for g in graphs:
        if len(g["y"]) < 1:
            continue
        s = score_all(net, g, hidden)
        if layout:
            v = scipy.stats.kendalltau(s, g["rt"])[0]
        else:
            v = tile_score(s, g["rt"], g["norm"])
        if not math.isnan(v):
            vals.append(v)
    return float(np.mean(vals)) if vals else float("nan")


def write_checkpoint(init_path, out_path, net):
    """INIT.st with every param.* tensor's bytes replaced by net's values."""
    b = bytearray(open(init_path, "rb").read())
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    for k, v in h.items():
        if not k.startswith("param."):
            continue
        s, e = v["data_offsets"]
        a = net.p[k[6:].replace(".", "_")].detach().numpy().astype("<f4")
        assert a.nbytes == e - s and v["dtype"] == "F32"
        b[8 + n + s:8 + n + e] = a.tobytes()
    tmp = out_path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(b)
    os.replace(tmp, out_path)


def main():
    init, data, coll, budget, seed, threads, out = sys.argv[1:8]
    epochs = int(sys.argv[8]) if len(sys.argv) > 8 else 1000
    patience = int(sys.argv[9]) if len(sys.argv) > 9 else 1000
    budget, seed, threads = float(budget), int(seed), int(threads)
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    t0 = time.perf_counter()  # as train_loop.c: the budget includes loading
    tensors, meta = read_safetensors(init)
    arch = meta["architecture"]
    layout = arch["kind"] == "layout"
    hidden = arch["hidden"]
    configs = 16 if layout else 32
    train = load_split(tensors, arch, data, coll, "train")
    valid = load_split(tensors, arch, data, coll, "valid")
    net = SparseTwin(tensors, arch)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=1e-4)
    rng = np.random.default_rng(seed)
    total = epochs * len(train)
    warmup = max(1, min(len(train), total // 10))
    step, best_metric, best_epoch, since, last_epoch_s = 0, -math.inf, 0, 0, 0.0
    best = None
    stopped = False
    epoch = 1
    first_loss = last_loss = float("nan")
    while epoch <= epochs and not stopped:
        te = time.perf_counter()
        if best_epoch > 0 and te - t0 + last_epoch_s > budget:
            break
        order = rng.permutation(len(train))
        lsum, lcount = 0.0, 0
        for gi in order:
            if time.perf_counter() - t0 > budget:
                stopped = True
                break
            g = train[gi]
            c = len(g["y"])
            if c < 2:
                continue
            K = min(c, configs)
            ids = rng.choice(c, K, replace=False)
            s = net(g, torch.as_tensor(g["cfg"][ids]))
            loss = hinge(s, g["y"][ids]) if layout else listmle_mse(s, g["y"][ids])
            opt.zero_grad(set_to_none=False)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            for pg in opt.param_groups:
                pg["lr"] = lr_cosine(step, 1e-3, 1e-3 * 0.05, warmup, total)
            opt.step()
            step += 1
            lsum += float(loss)
            lcount += 1
        if stopped and best_epoch > 0:
            break
        mean_loss = lsum / lcount if lcount else float("nan")
        if epoch == 1:
            first_loss = mean_loss
        last_loss = mean_loss
        metric = evaluate(net, valid, layout, hidden)
        if math.isnan(metric):
            metric = -math.inf
        if metric > best_metric or best_epoch == 0:
            best_metric, best_epoch, since = metric, epoch, 0
            best = {k: v.detach().clone() for k, v in net.p.items()}
        else:
            since += 1
        last_epoch_s = time.perf_counter() - te
        epoch += 1
        if since >= patience:
            break
    seconds = time.perf_counter() - t0
    with torch.no_grad():
        for k, v in best.items():
            net.p[k].copy_(v)
    write_checkpoint(init, out, net)
    print(json.dumps({"epochs_run": epoch - 1, "best_epoch": best_epoch,
                      "best_valid_metric": best_metric, "steps": step,
                      "seconds": round(seconds, 2), "import_s": round(t0 - T_START, 2),
                      "first_loss": first_loss, "last_loss": last_loss}))


if __name__ == "__main__":
    main()
