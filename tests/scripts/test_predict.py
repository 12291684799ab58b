#!/usr/bin/env python3
"""End-to-end tests of `perfcast predict` and `perfcast rank` on tiny synthetic data.

Covers: a tile:xla and a layout:xla:random model (2 epochs each) predicted into
one CSV (header, one row per test graph, ID format, tile rows = 5 distinct
valid indices, layout rows = a permutation of range(c) checked against the
.npz with numpy), determinism (two runs give identical bytes), predict's top-1
equal to rank's first entry on the valid split, rank's --top N and --json, and
the error cases (usage -> 2; missing model, model given twice for a
collection, empty split, wrong graph kind -> 1, no CSV left behind).

Environment (tests/CMakeLists.txt): PERFCAST, PC_TEST_TMP.
"""
import glob
import json
import os
import re
import shutil
import sys

import numpy as np

from clitest import FAILS, expect, expect_rc, run
TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_predict")


def read_csv(path):
    with open(path) as f:
        lines = f.read().splitlines()
    return lines[0], [l.split(",", 1) for l in lines[1:]]


def npz_files(data, coll, split):
    return sorted(glob.glob(os.path.join(data, "npz", coll.replace(":", "/"), split, "*.npz")))


def duplicate_configs(data, mt, ml):
    """Identical configurations get bitwise-identical scores and rank by index; the other
    configs keep their scores (up to float rounding of the batch position)."""
    for model, coll, key, extra in ((mt, "tile:xla", "config_feat", ["config_runtime_normalizers"]),
                                    (ml, "layout:xla:random", "node_config_feat", [])):
        src = npz_files(data, coll, "valid")[0]
        z = dict(np.load(src))
        c = z[key].shape[0]
        idx = np.array([0, 1, 2, 0, 1] + list(range(3, c)) + [0, 0])
        for k in [key, "config_runtime"] + extra:
            z[k] = z[k][idx]
        dup = os.path.join(TMP, "dup_%s.npz" % coll.split(":")[0])
        np.savez(dup, **z)
        scores = []
        for f in (src, dup):
            p = run("rank", "--model", model, "--json", "--top", "100000", f)
            expect_rc(p, 0, "rank --json " + f)
            top = json.loads(p.stdout)["graphs"][0]["top"] if p.returncode == 0 else []
            scores.append({t["config"]: t["score"] for t in top})
            if f == dup:
                order = [t["config"] for t in top]
        a, b = scores
        n = len(idx)
        if len(b) != n or len(a) != c:
            FAILS.append("%s: rank listed %d / %d configs, expected %d / %d" % (coll, len(a), len(b), c, n))
            continue
        for grp in ((0, 3, n - 2, n - 1), (1, 4)):
            expect(len({b[i] for i in grp}) == 1, "%s: copies %r score alike: %r"
                   % (coll, grp, [b[i] for i in grp]))
        copies0 = [i for i in order if i in (0, 3, n - 2, n - 1)]
        expect(copies0 == [0, 3, n - 2, n - 1], "%s: copies rank by index: %r" % (coll, copies0))
        worst = max(abs(b[j] - a[int(idx[j])]) for j in range(n))
        expect(worst <= 1e-5 * (1 + max(abs(v) for v in a.values())),
               "%s: scores with duplicates match the original file (max diff %g)" % (coll, worst))


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    data = os.path.join(TMP, "data")
    p = run("synth", "--out", data, "--scale", "tiny", "--seed", "1", "--threads", "2")
    expect_rc(p, 0, "synth")

    mt = os.path.join(TMP, "tile.safetensors")
    ml = os.path.join(TMP, "layout.safetensors")
    for coll, out, extra in (("tile:xla", mt, []), ("layout:xla:random", ml, ["--configs", "8"])):
        p = run("train", "--data", data, "--collection", coll, "--out", out, "--threads", "2",
                "--epochs", "2", "--hidden", "16", "--layers", "1", *extra)
        expect_rc(p, 0, "train " + coll)
    if FAILS:
        report()

    # predict both collections into one CSV
    csv = os.path.join(TMP, "sub.csv")
    p = run("predict", "--model", mt, "--model", ml, "--data", data, "--out", csv,
            "--threads", "2")
    expect_rc(p, 0, "predict test split")
    header, rows = read_csv(csv)
    expect(header == "ID,TopConfigs", "header: %r" % header)
    files = {}
    for coll in ("tile:xla", "layout:xla:random"):
        for f in npz_files(data, coll, "test"):
            files["%s:%s" % (coll, os.path.basename(f)[:-4])] = f
    ids = [r[0] for r in rows]
    expect(len(rows) == len(files) and len(files) > 0,
           "rows %d == test graphs %d" % (len(rows), len(files)))
    expect(ids == sorted(ids), "rows sorted by ID: %r" % ids)
    expect(set(ids) == set(files), "IDs %r vs files %r" % (ids, sorted(files)))
    for rid, val in rows:
        expect(re.match(r"^(tile:xla|layout:(xla|nlp):(random|default)):[^,:]+$", rid),
               "ID format: %r" % rid)
        if rid not in files:
            continue
        c = len(np.load(files[rid])["config_runtime"])
        idx = [int(v) for v in val.split(";")]
        if rid.startswith("tile:"):
            expect(len(idx) == min(5, c) and len(set(idx)) == len(idx) and
                   all(0 <= i < c for i in idx), "tile row %s: %r (c=%d)" % (rid, idx, c))
        else:
            expect(sorted(idx) == list(range(c)), "layout row %s is a permutation of range(%d)"
                   % (rid, c))

    # determinism
    csv2 = os.path.join(TMP, "sub2.csv")
    p = run("predict", "--model", ml, "--model", mt, "--data", data, "--out", csv2,
            "--threads", "1")
    expect_rc(p, 0, "predict again")
    if os.path.isfile(csv) and os.path.isfile(csv2):
        expect(open(csv, "rb").read() == open(csv2, "rb").read(), "two runs, same CSV")

    # predict top-1 == rank's first entry (valid split)
    csvv = os.path.join(TMP, "valid.csv")
    p = run("predict", "--model", mt, "--model", ml, "--data", data, "--split", "valid",
            "--out", csvv)
    expect_rc(p, 0, "predict valid split")
    _, vrows = read_csv(csvv)
    vtop = {r[0]: int(r[1].split(";")[0]) for r in vrows}
    for coll, model in (("tile:xla", mt), ("layout:xla:random", ml)):
        f = npz_files(data, coll, "valid")[0]
        rid = "%s:%s" % (coll, os.path.basename(f)[:-4])
        p = run("rank", "--model", model, f, "--top", "3")
        expect_rc(p, 0, "rank " + coll)
        lines = p.stdout.splitlines()
        expect(len(lines) == 3, "rank --top 3 prints 3 lines: %r" % p.stdout)
        m = re.match(r"^\s*1\s+config (\d+)\s+score", lines[0]) if lines else None
        expect(m and int(m.group(1)) == vtop.get(rid), "rank first %r == predict top-1 %r"
               % (lines[:1], vtop.get(rid)))
        expect("true best" in p.stderr, "rank reports the true best: %r" % p.stderr)
        p = run("rank", "--model", model, f, "--json")
        expect_rc(p, 0, "rank --json " + coll)
        try:
            out = json.loads(p.stdout)
            r = out["graphs"][0]
            c = len(np.load(f)["config_runtime"])
            expect(len(r["top"]) == min(10, c) and r["top"][0]["config"] == vtop.get(rid)
                   and out["collection"] == coll and 1 <= r["true_best"]["rank"] <= c,
                   "rank json %r" % r)
            sc = [t["score"] for t in r["top"]]
            expect(sc == sorted(sc), "rank scores ascending %r" % sc)
        except (ValueError, KeyError) as e:
            FAILS.append("rank --json output: %s (%s)" % (p.stdout, e))

    # errors
    bad = os.path.join(TMP, "bad.csv")
    usage = [
        (["predict", "--data", data, "--out", bad], "--model"),
        (["predict", "--model", mt, "--out", bad], "--data"),
        (["predict", "--model", mt, "--data", data], "--out"),
        (["predict", "--model", mt, "--data", data, "--out", bad, "--split", "dev"], "--split"),
        (["predict", "--model", mt, "--data", data, "--out", bad, "--bogus"], "unknown option"),
        (["rank", "--model", mt], "FILE"),
        (["rank", npz_files(data, "tile:xla", "valid")[0]], "--model"),
        (["rank", "--model", mt, npz_files(data, "tile:xla", "valid")[0], "--top", "-1"], "--top"),
    ]
    for args, needle in usage:
        p = run(*args)
        expect_rc(p, 2, "usage error for %r" % args)
        expect(needle in p.stderr, "message for %r mentions %r: %s" % (args, needle, p.stderr))
    fails = [
        ["predict", "--model", os.path.join(TMP, "none.safetensors"), "--data", data,
         "--out", bad],
        ["predict", "--model", mt, "--model", mt, "--data", data, "--out", bad],
        ["predict", "--model", ml, "--data", os.path.join(TMP, "empty"), "--out", bad],
        ["rank", "--model", ml, npz_files(data, "tile:xla", "valid")[0]],
        ["rank", "--model", mt, os.path.join(TMP, "none.npz")],
    ]
    # a tree with tile graphs only: the layout model's split is empty
    part = os.path.join(TMP, "empty", "npz", "tile", "xla", "test")
    os.makedirs(part, exist_ok=True)
    shutil.copy(npz_files(data, "tile:xla", "test")[0], part)
    for args in fails:
        p = run(*args)
        expect_rc(p, 1, "failure for %r" % args)
        expect("error" in p.stderr, "message for %r: %s" % (args, p.stderr))
        if "--model" in args and args.count(mt) == 2:
            expect("second model" in p.stderr, "duplicate model message: " + p.stderr)
        if os.path.join(TMP, "empty") in args:
            expect("no test graphs of layout:xla:random" in p.stderr,
                   "empty split message: " + p.stderr)
    expect(not os.path.exists(bad), "failed predict wrote no CSV")
    duplicate_configs(data, mt, ml)
    expect(not [f for f in os.listdir(TMP) if ".tmp." in f], "no temporary files left")
    report()


def report():
    if FAILS:
        for f in FAILS:
            print("FAIL:", f)
        sys.exit(1)
    print("ok")
    sys.exit(0)


if __name__ == "__main__":
    main()
