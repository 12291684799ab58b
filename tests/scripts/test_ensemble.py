#!/usr/bin/env python3
"""Seed ensembles, their per-config spread and test-time augmentation (TTA), end to end.

Against direct computation with numpy on tiny synthetic data:
  - `train --ensemble 3 --seed 5` twice gives the same bytes; its members are, tensor for
    tensor, the plain runs with seeds 5, 6, 7, and one preprocessing is stored;
  - every member written out as a plain checkpoint (here, with numpy) and scored on its
    own: the ensemble's score of each config is the mean over the members of their
    scores centered over the graph's configs, its spread their population standard
    deviation (rank --json), for tile and layout; eval's metric is that of those means;
    predict adds a Spread column for ensembles only, matching rank's spreads;
  - single models: the checkpoints in tests/data/models, written before ensembles
    existed, score exactly as they did then; a plain run's output has no spread;
  - TTA on an attention model: rank --tta 3 equals the mean of the scores of the file
    as given and of two files whose configs were permuted (the permutations computed
    here from the documented splitmix64 shuffle), each scored plainly; same seed same
    bytes; eval --tta works;
  - bad values: --ensemble 0 / -1 / 65, --ensemble with --resume, --tta 0, --tta on a
    model without attention.

Environment (tests/CMakeLists.txt): PERFCAST, PC_TEST_TMP, PC_TEST_DATA.
"""
import glob
import json
import os
import shutil
import sys

import numpy as np

from clitest import FAILS, expect, expect_rc, report, run, run_checks

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_ensemble")
DATA_DIR = os.environ.get("PC_TEST_DATA", os.path.join(os.path.dirname(__file__), "..", "data"))
DATA = os.path.join(TMP, "data")
M64 = (1 << 64) - 1

# safetensors read and written with numpy, and an ensemble split into plain checkpoints:
# bench/ensemble_avg.py's (the averaging benchmark uses the same helpers)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from ensemble_avg import split_members, st_load  # noqa: E402


# ---- helpers ---------------------------------------------------------------------------


def train(out, coll, *extra):
    p = run("train", "--data", DATA, "--collection", coll, "--out", out, "--epochs", "2",
            "--threads", "2", "--progress", "never", "--hidden", "16", *extra, timeout=300)
    expect_rc(p, 0, "train %s %s" % (coll, " ".join(extra)))
    return p


def rank(model, f, *extra):
    """{config: (score, spread or None)} of every config, and the parsed output."""
    p = run("rank", "--model", model, "--json", "--top", "1000000", *extra, f)
    expect_rc(p, 0, "rank %s %s" % (model, f))
    if p.returncode:
        return {}, {}
    out = json.loads(p.stdout)
    return {t["config"]: (t["score"], t.get("spread")) for t in out["graphs"][0]["top"]}, out


def vec(d, i):
    return np.array([d[c][i] for c in range(len(d))], dtype=float)


def files(coll, split="valid"):
    return sorted(glob.glob(os.path.join(DATA, "npz", coll.replace(":", "/"), split, "*.npz")))


def close(a, b, what, tol=2e-7, scale=None):
    """|a - b| <= tol * (1 + scale) elementwise; scale: max |b| unless given (the printed
    scores carry 9 significant digits, so a difference of two is only as exact as they)."""
    a, b = np.atleast_1d(np.asarray(a, float)), np.atleast_1d(np.asarray(b, float))
    if scale is None:
        scale = np.max(np.abs(b)) if b.size else 0.0
    err = np.max(np.abs(a - b)) / (1 + scale) if a.size and a.shape == b.shape else 0.0
    expect(a.shape == b.shape and err <= tol, "%s: max error %g of scale %g (%r vs %r)"
           % (what, err, scale, a[:4], b[:4]))


# ---- checks ----------------------------------------------------------------------------


def check_determinism_and_members():
    e1, e2 = os.path.join(TMP, "ens_a.st"), os.path.join(TMP, "ens_b.st")
    p = train(e1, "tile:xla", "--ensemble", "3", "--seed", "5")
    for k in (1, 2, 3):
        expect("member %d of 3 (seed %d)" % (k, 4 + k) in p.stdout, "log names member %d" % k)
    expect("ensemble of 3 members: valid tile score" in p.stdout, "log: the ensemble's metric")
    train(e2, "tile:xla", "--ensemble", "3", "--seed", "5")
    expect(open(e1, "rb").read() == open(e2, "rb").read(), "ensemble: same seed, same bytes")
    t, meta = st_load(e1)
    pc = json.loads(meta["perfcast"])
    expect(pc.get("ensemble") == 3 and pc["train"].get("ensemble") == 3
           and len(pc["train"].get("member_metrics", [])) == 3, "ensemble metadata: %r" % pc)
    expect(sum(k.startswith("prep.") for k in t) == 8, "one preprocessing (8 tensors)")
    for k, seed in enumerate((5, 6, 7)):
        single = os.path.join(TMP, "single_%d.st" % seed)
        train(single, "tile:xla", "--seed", str(seed))
        s, _ = st_load(single)
        pre = "" if k == 0 else "member%d." % k
        for name, v in s.items():
            got = t.get(pre + name if name.startswith("param.") else name)
            expect(got is not None and got.tobytes() == v.tobytes(),
                   "member %d tensor %s equals the plain run with seed %d" % (k, name, seed))


def check_average_and_spread():
    for coll in ("tile:xla", "layout:xla:random"):
        tag = coll.split(":")[0]
        ens = os.path.join(TMP, "avg_%s.st" % tag)
        train(ens, coll, "--ensemble", "3", "--seed", "11")
        members = split_members(ens, os.path.join(TMP, "avg_%s" % tag))
        expect(len(members) == 3, "%s: 3 members" % coll)
        all_means = {}
        for f in files(coll):
            e, _ = rank(ens, f)
            S = []
            for m in members:
                d, out = rank(m, f)
                expect(all(v[1] is None for v in d.values()), "a plain model prints no spread")
                S.append(vec(d, 0))
            S = np.array(S)
            C = S - S.mean(axis=1, keepdims=True)
            scale = np.max(np.abs(S))
            close(vec(e, 0), C.mean(axis=0), "%s %s: ensemble score = mean of centered members"
                  % (coll, os.path.basename(f)), scale=scale)
            close(vec(e, 1), C.std(axis=0), "%s %s: spread = std over members"
                  % (coll, os.path.basename(f)), scale=scale)
            all_means[f] = C.mean(axis=0)
        if coll == "tile:xla":
            check_eval_and_predict(ens, all_means)


def tile_score(pred, f):
    z = np.load(f)
    y = z["config_runtime"] / z["config_runtime_normalizers"]
    top = np.argsort(pred, kind="stable")[:5]
    return 2 - y[top].min() / y.min()


def check_eval_and_predict(ens, means):
    p = run("eval", "--model", ens, "--data", DATA, "--json")
    expect_rc(p, 0, "eval of an ensemble")
    if p.returncode == 0:
        want = np.mean([tile_score(m, f) for f, m in means.items()])
        close(json.loads(p.stdout)["metric"], want, "eval: metric of the members' mean", 1e-6)
    csv = os.path.join(TMP, "ens.csv")
    p = run("predict", "--model", ens, "--data", DATA, "--split", "valid", "--out", csv)
    expect_rc(p, 0, "predict with an ensemble")
    if p.returncode:
        return
    lines = open(csv).read().splitlines()
    expect(lines[0] == "ID,TopConfigs,Spread", "ensemble CSV header: %r" % lines[0])
    by_stem = {os.path.basename(f)[:-4]: f for f in means}
    for line in lines[1:]:
        rid, top, spread = line.split(",")
        f = by_stem[rid.split(":", 2)[2]]
        e, _ = rank(ens, f)
        idx = [int(i) for i in top.split(";")]
        close([float(s) for s in spread.split(";")], [e[i][1] for i in idx],
              "predict: Spread of %s" % rid, 1e-5)
    single = os.path.join(TMP, "single_5.st")
    p = run("predict", "--model", single, "--data", DATA, "--split", "valid", "--out", csv)
    expect_rc(p, 0, "predict with a single model")
    expect(open(csv).read().splitlines()[0] == "ID,TopConfigs", "single model: no Spread column")


def check_old_checkpoints():
    """Checkpoints written before ensembles: the same scores, exactly."""
    want = json.load(open(os.path.join(DATA_DIR, "models", "expected_v1.json")))
    for kind in ("tile", "layout"):
        model = os.path.join(DATA_DIR, "models", "%s_v1.safetensors" % kind)
        graph = os.path.join(DATA_DIR, "models", "%s_graph.npz" % kind)
        _, out = rank(model, graph)
        # the fields that apply; scores as the 9 digits that rank printed then
        top = [{k: float("%.9g" % v) if k == "score" else v for k, v in t.items()
                if v is not None} for t in (out["graphs"][0]["top"] if out else [])]
        expect(top == want[kind], "%s_v1: scores as before" % kind)


def splitmix(state):
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def tta_perm(seed, p, n):
    """Ordering p of n configs (src/gnn/infer.h, pc_infer_tta_perm)."""
    r = seed ^ 0x77A0C0DE5EED
    r, z = splitmix(r)
    r ^= (z + p * 0x9E3779B97F4A7C15) & M64
    perm = list(range(n))
    for i in range(n - 1, 0, -1):
        r, v = splitmix(r)
        j = v % (i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    return np.array(perm)


def check_tta():
    model = os.path.join(TMP, "attn.st")
    train(model, "tile:xla", "--cfg-attention", "2", "--configs", "4")
    f = files("tile:xla")[0]
    z = dict(np.load(f))
    c = z["config_feat"].shape[0]
    seed, M = 9, 3
    runs = [vec(rank(model, f)[0], 0)]
    for p in range(1, M):
        perm = tta_perm(seed, p, c)
        zp = dict(z)
        for k in ("config_feat", "config_runtime", "config_runtime_normalizers"):
            zp[k] = z[k][perm]
        fp = os.path.join(TMP, "perm%d.npz" % p)
        np.savez(fp, **zp)
        sp = vec(rank(model, fp)[0], 0)  # position i holds config perm[i]
        s = np.empty(c)
        s[perm] = sp
        runs.append(s)
    expect(not np.array_equal(runs[0], runs[1]), "attention: another ordering, other scores")
    t, out = rank(model, f, "--tta", str(M), "--tta-seed", str(seed))
    close(vec(t, 0), np.mean(runs, axis=0), "TTA = mean of the permuted runs")
    expect(all(v[1] is None for v in t.values()), "TTA on a single model prints no spread")
    t2, _ = rank(model, f, "--tta", str(M), "--tta-seed", str(seed))
    expect(t == t2, "TTA: same seed, same scores")
    p = run("eval", "--model", model, "--data", DATA, "--tta", "3")
    expect_rc(p, 0, "eval --tta 3 on an attention model")


def check_bad_values():
    out = os.path.join(TMP, "bad.st")
    for v in ("0", "-1", "65", "x"):
        p = run("train", "--data", DATA, "--collection", "tile:xla", "--out", out, "--ensemble", v)
        expect_rc(p, 2, "--ensemble %s" % v)
        expect("--ensemble expects 1..64" in p.stderr, "--ensemble %s: message %r" % (v, p.stderr))
    p = run("train", "--data", DATA, "--collection", "tile:xla", "--out", out, "--ensemble", "2",
            "--resume")
    expect_rc(p, 1, "--ensemble 2 --resume")
    expect("--resume does not apply to ensembles (--ensemble > 1" in p.stderr,
           "--ensemble with --resume: message %r" % p.stderr)
    f = files("tile:xla")[0]
    single = os.path.join(TMP, "single_5.st")
    for cmd in (["rank", "--model", single, f], ["eval", "--model", single, "--data", DATA]):
        p = run(*cmd, "--tta", "0")
        expect_rc(p, 2, "%s --tta 0" % cmd[0])
        expect("--tta expects 1..1000" in p.stderr, "--tta 0: message %r" % p.stderr)
        p = run(*cmd, "--tta", "2")
        expect_rc(p, 1, "%s --tta 2 without attention" % cmd[0])
        expect("applies to models with cross-configuration attention (perfcast train "
               "--cfg-attention N)" in p.stderr, "--tta without attention: message %r" % p.stderr)
    p = run("rank", "--model", single, f, "--tta", "1")
    expect_rc(p, 0, "--tta 1 is no augmentation, allowed on any model")
    p = run("predict", "--model", single, "--data", DATA, "--out", out, "--tta-seed", "-3")
    expect_rc(p, 2, "predict --tta-seed -3")


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    p = run("synth", "--out", DATA, "--scale", "tiny", "--seed", "1", "--threads", "2")
    expect_rc(p, 0, "synth")
    if p.returncode:
        return report("")
    run_checks([check_determinism_and_members, check_average_and_spread, check_old_checkpoints,
                check_tta, check_bad_values])
    return report("ensembles, spread and TTA: ok")


if __name__ == "__main__":
    sys.exit(main())
