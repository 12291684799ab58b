#!/usr/bin/env python3
"""How to average a seed ensemble's members (issue #14): raw vs standardized scores.

For each dataset seed (synthetic, --scale small) and collection, trains one
`perfcast train --ensemble N` under a time budget, writes each member out as a
plain checkpoint (numpy), scores every valid graph with each member
(`perfcast rank --json`) and computes the collection's metric (tile: tile score
with the top 5; layout: Kendall tau-b) of:
  - each member alone;
  - the mean of the members' raw scores (= the mean of their per-graph centered
    scores, which ranks identically: what perfcast does);
  - the mean of the members' per-graph standardized scores (z-scores);
  - perfcast's own ensemble scores (`rank` on the ensemble checkpoint).
Prints one line per (collection, seed) and a markdown table of the means.

usage: bench/ensemble_avg.py [--members 3] [--budget 36] [--threads 2] SEED...
Environment: PERFCAST (default build/perfcast), OUT (default /tmp/pc_ensemble_avg).
"""
import argparse
import glob
import json
import os
import struct
import subprocess

import numpy as np
from scipy.stats import kendalltau

P = os.environ.get("PERFCAST", "build/perfcast")
OUT = os.environ.get("OUT", "/tmp/pc_ensemble_avg")
COLLS = ["tile:xla", "layout:xla:random", "layout:xla:default"]


def st_load(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    hdr = json.loads(b[8:8 + n])
    meta = hdr.pop("__metadata__", {})
    dt = {"F32": np.float32, "I32": np.int32, "I64": np.int64}
    return {k: np.frombuffer(b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]],
                             dtype=dt[v["dtype"]]).reshape(v["shape"]) for k, v in hdr.items()}, meta


def st_save(path, tensors, meta):
    names = {np.dtype(np.float32): "F32", np.dtype(np.int32): "I32", np.dtype(np.int64): "I64"}
    hdr, off, blobs = {}, 0, []
    for k in sorted(tensors):
        b = np.ascontiguousarray(tensors[k]).tobytes()
        hdr[k] = {"dtype": names[tensors[k].dtype], "shape": list(tensors[k].shape),
                  "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    hdr["__metadata__"] = meta
    h = json.dumps(hdr).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def split_members(path, stem):
    """Each member of the ensemble at path as a plain checkpoint; their paths."""
    t, meta = st_load(path)
    pc = json.loads(meta["perfcast"])
    n = pc.pop("ensemble", 1)
    outs = []
    for k in range(n):
        pre = "" if k == 0 else "member%d." % k
        tk = {name[len(pre):]: v for name, v in t.items() if name.startswith(pre + "param.")}
        tk.update({name: v for name, v in t.items() if name.startswith("prep.")})
        outs.append("%s_m%d.st" % (stem, k))
        st_save(outs[-1], tk, {"perfcast": json.dumps(pc)})
    return outs


def scores(model, f):
    out = subprocess.run([P, "rank", "--model", model, "--json", "--top", "100000000", f],
                         capture_output=True, text=True, check=True).stdout
    top = json.loads(out)["top"]
    s = np.zeros(len(top))
    for t in top:
        s[t["config"]] = t["score"]
    return s


def metric(coll, s, z):
    rt = z["config_runtime"].astype(float)
    if coll == "tile:xla":
        y = rt / z["config_runtime_normalizers"]
        return 2 - y[np.argsort(s, kind="stable")[:5]].min() / y.min()
    return kendalltau(s, rt).correlation


def zscore(s):
    sd = s.std()
    return (s - s.mean()) / (sd if sd > 0 else 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--members", type=int, default=3)
    ap.add_argument("--budget", type=float, default=36)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("seeds", nargs="+")
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    res = {}
    for dseed in a.seeds:
        data = os.path.join(OUT, "data%s" % dseed)
        if not os.path.isdir(data):
            subprocess.run([P, "synth", "--out", data, "--scale", "small", "--seed", dseed,
                            "--threads", str(a.threads)], check=True, capture_output=True)
        for coll in COLLS:
            stem = os.path.join(OUT, "%s_%s" % (coll.replace(":", "_"), dseed))
            ens = stem + ".st"
            if not os.path.exists(ens):
                subprocess.run([P, "train", "--data", data, "--collection", coll, "--out", ens,
                                "--ensemble", str(a.members), "--time-budget", str(a.budget),
                                "--epochs", "1000000", "--patience", "1000000", "--threads",
                                str(a.threads), "--progress", "never"], check=True,
                               capture_output=True)
            members = split_members(ens, stem)
            rows = []
            for f in sorted(glob.glob(os.path.join(data, "npz", coll.replace(":", "/"), "valid",
                                                   "*.npz"))):
                z = np.load(f)
                S = np.array([scores(m, f) for m in members])
                cand = list(S) + [S.mean(0), np.array([zscore(s) for s in S]).mean(0),
                                  scores(ens, f)]
                rows.append([metric(coll, s, z) for s in cand])
            r = np.nanmean(np.array(rows), 0)
            res.setdefault(coll, []).append(r)
            print("%s seed %s: members %s; raw mean %.4f, z mean %.4f, perfcast %.4f"
                  % (coll, dseed, np.round(r[:len(members)], 4), *r[len(members):]), flush=True)
    print("\n| collection | mean of members | raw (= centered) mean | standardized mean |")
    print("|---|---|---|---|")
    for coll, rs in res.items():
        r = np.array(rs).mean(0)
        n = len(r) - 3
        print("| %s | %.4f | %.4f | %.4f |" % (coll, r[:n].mean(), r[n], r[n + 1]))


if __name__ == "__main__":
    main()
