#!/usr/bin/env python3
"""How sure `perfcast eval` is, end to end, on tiny synthetic data.

Eval's 95% intervals against a direct computation: every graph of the split
scored with `perfcast rank --json`, its metric computed with numpy / scipy
(tile score, Kendall tau-b, OPA, top-K slowdown), and the bootstrap redone by
tests/scripts/bootstrap_ref.py (the same splitmix64 draws, numpy's
percentile). Then `train --seeds 2`: the per-seed checkpoints, MODEL as a
byte copy of the best on valid, the summary; `eval --seeds` and `eval --model
A --model B`: each one's interval and mean ± std (numpy) over them; bad input.

Environment (tests/CMakeLists.txt): PERFCAST, PC_TEST_TMP.
Exit 0 pass, 1 fail, 77 skip (numpy or scipy missing).
"""
import filecmp
import glob
import json
import math
import os
import shutil
import sys

try:
    import numpy as np
    from scipy import stats
except ImportError:
    print("SKIP: numpy/scipy not importable by %s" % sys.executable)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bootstrap_ref  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from ensemble_avg import split_members  # noqa: E402
from clitest import FAILS, expect, expect_rc, report, run, run_checks  # noqa: E402

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_eval_ci")
DATA = os.path.join(TMP, "data")
RESAMPLES, SEED, LEVEL = 2000, 20231101, 0.95  # PC_BOOTSTRAP_* (perfcast/metrics.h)


def graph_values(model, coll, split):
    """Per graph (in the split's file order): metric, tau, opa, slowdown@1/5/10."""
    out = []
    for f in sorted(glob.glob(os.path.join(DATA, "npz", coll.replace(":", "/"), split, "*.npz"))):
        p = run("rank", "--model", model, "--json", "--top", "1000000", f)
        expect_rc(p, 0, "rank " + f)
        score = {t["config"]: t["score"] for t in json.loads(p.stdout)["graphs"][0]["top"]}
        z = np.load(f)
        rt = z["config_runtime"].astype(np.float64)
        pred = np.array([score[i] for i in range(rt.size)])
        tau = stats.kendalltau(pred, rt).correlation
        i, j = np.triu_indices(rt.size, 1)
        diff = rt[i] != rt[j]
        opa = float(np.mean(np.sign(pred[i] - pred[j])[diff] == np.sign(rt[i] - rt[j])[diff]))
        v = {"kendall_tau": tau, "opa": opa, "metric": tau}
        if coll == "tile:xla":
            y = rt / z["config_runtime_normalizers"].astype(np.float64)
            order = np.argsort(pred, kind="stable")
            for k in (1, 5, 10):
                v["top%d_slowdown" % k] = (y[order[:k]].min() - y.min()) / y.min()
            v["metric"] = 2 - y[order[:5]].min() / y.min()
        out.append(v)
    return out


def check_intervals(model, coll, split):
    p = run("eval", "--model", model, "--data", DATA, "--split", split, "--json")
    expect_rc(p, 0, "eval --json")
    r = json.loads(p.stdout)
    vals = graph_values(model, coll, split)
    expect(r["graphs"] == len(vals), "%s: %d graphs, rank saw %d" % (coll, r["graphs"], len(vals)))
    expect(r["ci"] == {"level": LEVEL, "resamples": RESAMPLES, "over": "graphs"}, "ci %r" % r["ci"])
    keys = ["metric", "kendall_tau", "opa"]
    if coll == "tile:xla":
        keys += ["top1_slowdown", "top5_slowdown", "top10_slowdown"]
    for k in keys:
        v = np.array([g[k] for g in vals if not math.isnan(g[k])])
        lo, hi = bootstrap_ref.mean_ci(v, RESAMPLES, SEED, LEVEL)
        got = r[k + "_ci95"]
        expect(abs(r[k] - v.mean()) < 1e-6, "%s %s: eval %r, numpy mean %r" % (coll, k, r[k], v.mean()))
        expect(abs(got[0] - lo) < 1e-6 and abs(got[1] - hi) < 1e-6,
               "%s %s: eval interval %r, direct %r" % (coll, k, got, [lo, hi]))
        expect(got[0] <= r[k] + 1e-12 <= got[1] + 2e-12, "%s %s: mean inside %r" % (coll, k, got))
    print("%s %s: %d graphs, %s %.4f [%.4f, %.4f] as computed directly"
          % (coll, split, len(vals), r["metric_name"], r["metric"], *r["metric_ci95"]))
    q = run("eval", "--model", model, "--data", DATA, "--split", split)
    expect("95% CI [" in q.stdout, "eval text shows the interval: " + q.stdout)


def check_seeds():
    out = os.path.join(TMP, "lay.safetensors")
    p = run("train", "--data", DATA, "--collection", "layout:xla:random", "--out", out,
            "--epochs", "2", "--hidden", "16", "--layers", "1", "--threads", "2",
            "--progress", "never", "--seeds", "2", "--seed", "5", timeout=300)
    expect_rc(p, 0, "train --seeds 2")
    paths = [os.path.join(TMP, "lay.seed%d.safetensors" % s) for s in (5, 6)]
    expect(all(os.path.isfile(f) for f in paths), "per-seed checkpoints: %s" % os.listdir(TMP))
    best = {}
    for line in p.stdout.splitlines():
        if line.startswith("seed ") and ": best valid" in line:
            best[int(line.split()[1].rstrip(":"))] = float(line.rsplit("(", 1)[0].split()[-1])
    expect(sorted(best) == [5, 6], "per-seed lines: " + p.stdout)
    summary = [l for l in p.stdout.splitlines() if l.startswith("seeds 5..6:")]
    expect(len(summary) == 1, "summary line: " + p.stdout)
    if len(best) == 2 and summary:
        m, sd = np.mean(list(best.values())), np.std(list(best.values()), ddof=1)
        w = summary[0].split()
        got_m, got_sd = float(w[w.index("mean") + 1]), float(w[w.index("±") + 1])
        expect(abs(got_m - m) < 2e-6 and abs(got_sd - sd) < 2e-6, "summary %r vs %.6f ± %.6f"
               % (summary[0], m, sd))
        top = max(best, key=lambda s: best[s])
        expect(filecmp.cmp(out, paths[top - 5], shallow=False), "MODEL is the best seed's copy")
    e = run("eval", "--model", out, "--seeds", "2", "--seed", "5", "--data", DATA, "--split",
            "train", "--json")
    expect_rc(e, 0, "eval --seeds 2")
    r = json.loads(e.stdout)
    expect([m["model"] for m in r["models"]] == paths, "eval --seeds models %r" % r.get("models"))
    for k in ("metric", "opa"):
        v = [m[k] for m in r["models"]]
        expect(abs(r["mean"][k] - np.mean(v)) < 1e-9 and abs(r["std"][k] - np.std(v, ddof=1)) < 1e-9
               and r["min"][k] == min(v) and r["max"][k] == max(v), "%s over seeds %r" % (k, r))
        expect(all(len(m[k + "_ci95"]) == 2 for m in r["models"]), "each model has its interval")
    e2 = run("eval", "--model", paths[0], "--model", paths[1], "--data", DATA, "--split", "train",
             "--json")
    expect(e2.returncode == 0 and json.loads(e2.stdout) == r, "--model twice equals --seeds 2")
    t = run("eval", "--model", out, "--seeds", "2", "--seed", "5", "--data", DATA, "--split",
            "train")
    expect("over 2 checkpoints: mean ± std" in t.stdout, "eval text summary: " + t.stdout)


def check_members():
    """An ensemble's members scored alone: eval's mean, std and two-way interval over
    graphs and members against each member split into a plain checkpoint (numpy)."""
    ens = os.path.join(TMP, "ens.safetensors")
    p = run("train", "--data", DATA, "--collection", "tile:xla", "--out", ens, "--epochs", "2",
            "--hidden", "16", "--layers", "1", "--threads", "2", "--progress", "never",
            "--ensemble", "3", timeout=300)
    expect_rc(p, 0, "train --ensemble 3")
    e = run("eval", "--model", ens, "--data", DATA, "--split", "train", "--json")
    expect_rc(e, 0, "eval of an ensemble")
    if e.returncode:
        return
    r = json.loads(e.stdout)
    per = [graph_values(m, "tile:xla", "train")
           for m in split_members(ens, os.path.join(TMP, "ens"))]
    table = np.array([[per[j][g]["metric"] for j in range(3)] for g in range(len(per[0]))])
    means = table.mean(axis=0)
    lo, hi = bootstrap_ref.mean2_ci(table, RESAMPLES, SEED, LEVEL)
    expect(r.get("members") == 3, "members %r" % r.get("members"))
    mm = r.get("member_metric", {})
    expect(abs(mm.get("mean", 0) - means.mean()) < 1e-6
           and abs(mm.get("std", 0) - means.std(ddof=1)) < 1e-6,
           "member mean/std %r vs %r, %r" % (mm, means.mean(), means.std(ddof=1)))
    got = r.get("member_metric_ci95", [0, 0])
    expect(abs(got[0] - lo) < 1e-6 and abs(got[1] - hi) < 1e-6,
           "two-way interval %r, direct %r" % (got, [lo, hi]))
    print("ensemble of 3: members alone %.4f ± %.4f, [%.4f, %.4f] as computed directly"
          % (means.mean(), means.std(ddof=1), lo, hi))
    t = run("eval", "--model", ens, "--data", DATA, "--split", "train")
    expect("3 members alone:" in t.stdout and "CI over graphs and members" in t.stdout,
           "eval text shows the members: " + t.stdout)
    plain = run("eval", "--model", os.path.join(TMP, "tile.safetensors"), "--data", DATA,
                "--split", "train", "--json")
    expect("members" not in json.loads(plain.stdout), "a plain model has no member fields")


def check_bad_input(tile):
    common = ["--data", DATA, "--collection", "tile:xla", "--out", os.path.join(TMP, "x.st")]
    for args, what in ((["train", *common, "--seeds", "0"], "--seeds"),
                       (["train", *common, "--seeds", "2", "--resume"], "--resume"),
                       (["eval", "--model", tile, "--model", tile, "--seeds", "2", "--data", DATA],
                        "--seeds"),
                       (["eval", "--model", tile, "--seeds", "x", "--data", DATA], "--seeds")):
        p = run(*args)
        expect_rc(p, 2, " ".join(args))
        expect(what in p.stderr, "%s: message names %s: %r" % (args, what, p.stderr))
    lay = os.path.join(TMP, "lay.safetensors")
    p = run("eval", "--model", tile, "--model", lay, "--data", DATA)
    expect_rc(p, 1, "eval of two collections")
    expect("share a collection" in p.stderr, "two collections: " + p.stderr)
    p = run("eval", "--model", tile, "--seeds", "2", "--seed", "77", "--data", DATA)
    expect(p.returncode == 1 and "seed77" in p.stderr, "missing seed checkpoint: " + p.stderr)


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    p = run("synth", "--out", DATA, "--scale", "tiny", "--seed", "2", "--threads", "2")
    expect_rc(p, 0, "synth")
    tile = os.path.join(TMP, "tile.safetensors")
    p = run("train", "--data", DATA, "--collection", "tile:xla", "--out", tile, "--epochs", "2",
            "--hidden", "16", "--layers", "1", "--threads", "2", "--progress", "never",
            timeout=300)
    expect_rc(p, 0, "train tile")
    run_checks([lambda: check_intervals(tile, "tile:xla", "train"), check_seeds,
                lambda: check_intervals(os.path.join(TMP, "lay.safetensors"),
                                        "layout:xla:random", "train"),
                check_members, lambda: check_bad_input(tile)])
    code = report("PASS")
    if not FAILS:
        shutil.rmtree(TMP, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
