#!/usr/bin/env python3
"""Issue #15, layout: does a model rank configs near the compiler default?

For each synth layout graph given, builds candidates around the default (all
-1): every single-tensor change (a searched tensor set to row-major, or to
each other order of rank <= 4, or to the one-move-from-row-major orders of
higher ranks) and random combinations of 2 and 4 of them, writes them as a
TpuGraphs .npz next to the graph's arrays, scores them with the model as tune
sees it (bench_score: mean and spread of the predicted difference from the
default) and with `perfcast simulate` (the true, noise-free runtime), and
prints per graph and over all graphs:
  better   share of candidates truly faster than the default (by > 0.1%)
  tau      Kendall tau of the model's mean vs the true runtime
  sign     accuracy of "faster than the default" (model mean < 0 vs truth),
           over the candidates the model calls faster (precision) and all
  top1@K   true runtime / default of the candidate ranked first by
           mean + K x spread, the default included (so 1.0 = kept default)
  best     the best candidate's true runtime / default (the neighbourhood's
           ceiling)
Usage: layout_tune_diag.py PERFCAST BENCH_SCORE MODEL SEED FILE.npz ...
(SEED: the synth seed the files come from; --scale small).
"""
import itertools
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from scipy.stats import kendalltau

RISKS = (0.0, 0.5, 1.0, 2.0)


def orders(r):
    """Candidate minor_to_major orders of rank r, row-major first."""
    rm = list(range(r - 1, -1, -1))
    if r <= 4:  # every order, as the search draws them
        out = [list(p) for p in itertools.permutations(range(r))]
        out.remove(rm)
        return [rm] + out
    out = [rm]
    for i in range(r - 1):  # swap two neighbouring positions
        o = rm[:]
        o[i], o[i + 1] = o[i + 1], o[i]
        out.append(o)
    for d in range(1, r):  # bring a dim into the lanes (position 0)
        o = [d] + [x for x in rm if x != d]
        if o not in out:
            out.append(o)
    return out


def singles(cf):
    """(node, tensor, order) of every single change the file's configs allow."""
    out = []
    for n in range(cf.shape[1]):
        for t in range(3):
            sl = cf[:, n, 6 * t:6 * t + 6]
            r = int((sl >= 0).sum(axis=1).max())
            if r == 0:
                continue
            for o in orders(r):
                out.append((n, t, o))
    return out


def build(cf, rng, n_multi=300):
    s = singles(cf)
    nc = cf.shape[1]
    base = -np.ones((nc, 18), np.float32)
    rows, nch = [base.copy()], [0]
    for n, t, o in s:
        r = base.copy()
        r[n, 6 * t:6 * t + len(o)] = o
        rows.append(r)
        nch.append(1)
    for k in (2, 4):
        for _ in range(n_multi):
            r = base.copy()
            used = set()
            for i in rng.choice(len(s), size=min(k, len(s)), replace=False):
                n, t, o = s[i]
                if (n, t) in used:
                    continue
                used.add((n, t))
                r[n, 6 * t:6 * t + len(o)] = o
            rows.append(r)
            nch.append(len(used))
    return np.stack(rows), np.array(nch)


def main():
    perfcast, bscore, model, seed = sys.argv[1:5]
    files = sys.argv[5:]
    rng = np.random.default_rng(0)
    agg = {"tau1": [], "tau": [], "prec": [], "acc": [], "best": [], "better": []}
    for k in RISKS:
        agg["top%g" % k] = []
    agg["top_s1"] = []
    with tempfile.TemporaryDirectory() as tmp:
        for f in files:
            z = dict(np.load(f))
            cands, nch = build(z["node_config_feat"], rng)
            z["node_config_feat"] = cands
            z["config_runtime"] = np.zeros(len(cands), np.int64)
            out = os.path.join(tmp, os.path.basename(f))
            np.savez(out, **z)
            sc = np.loadtxt(subprocess.run([bscore, model, out, "1"], check=True,
                                           capture_output=True, text=True).stdout.splitlines())
            mean, spread = sc[:, 0], sc[:, 1]
            sim = json.loads(subprocess.run([perfcast, "simulate", out, "--seed", seed,
                                             "--scale", "small", "--json"], check=True,
                                            capture_output=True, text=True).stdout)
            true = np.zeros(len(cands))
            for e in sim["runtimes"]:
                true[e["config"]] = e["ns"]
            ratio = true / sim["default_ns"]
            m = nch > 0
            tau1 = kendalltau(mean[nch == 1], ratio[nch == 1])[0]
            tau = kendalltau(mean[m], ratio[m])[0]
            truly = ratio < 0.999
            said = mean < mean[0]
            prec = (truly & said)[m].sum() / max(1, said[m].sum())
            acc = (truly == said)[m].mean()
            row = {"tau1": tau1, "tau": tau, "prec": prec, "acc": acc,
                   "best": ratio.min(), "better": truly[m].mean()}
            for k in RISKS:
                row["top%g" % k] = ratio[np.argmin(mean + k * spread)]
            one = nch <= 1
            row["top_s1"] = ratio[one][np.argmin((mean + spread)[one])]
            for key, v in row.items():
                agg[key].append(v)
            print("%-40s " % os.path.basename(f) + " ".join(
                "%s %.3f" % (key, v) for key, v in row.items()), flush=True)
    gm = lambda a: float(np.exp(np.mean(np.log(a))))
    print("ALL %d graphs: " % len(files) + " ".join(
        "%s %.3f" % (key, gm(v) if key.startswith("top") or key == "best" else np.nanmean(v))
        for key, v in agg.items()))
    print("slower than default by > 0.1%%: " + " ".join(
        "top%g %d/%d" % (k, sum(r > 1.001 for r in agg["top%g" % k]), len(files)) for k in RISKS))


if __name__ == "__main__":
    main()
