#!/usr/bin/env python3
"""A tile model trained on synthetic data, evaluated on the 15 real TPU kernels (issue #5).

Imports ../shared/fixtures/tpugraphs_raw/op_tuning_data.pb (15 fused kernels, 754 runs,
752 kept), trains a tiny tile:xla model on tiny synthetic data for a few epochs, and runs
`perfcast eval --json` (all kernels, and each kernel alone) and `perfcast rank --json`
on the imported kernels. Asserts what must hold whatever the model's quality:
15 kernels evaluated, config counts equal to the import's (752 in all), every config
scored once with the runtime stored in the npz, metrics in their valid ranges, and
perfcast's per-kernel Kendall tau equal to scipy.stats.kendalltau(rank scores, npz
runtimes) to 1e-6 (and top-1/top-5 slowdown equal to numpy's, ties by lower index), and
the all-kernel eval equal to the mean of the per-kernel ones. It does NOT assert that
the model ranks well (bench/run_real_kernels.sh measures that).

Environment (tests/CMakeLists.txt): PERFCAST, PC_TEST_TMP, PC_SHARED_DIR.
Exit 0 pass, 1 fail, 77 skip (no shared fixtures, or no numpy/scipy).
"""
import glob
import json
import math
import os
import shutil
import sys

try:
    import numpy as np
    import scipy.stats
except ImportError:
    print("SKIP: numpy or scipy missing")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clitest import FAILS, expect, expect_rc, run  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_real_kernels")
RAW = os.path.join(os.environ.get("PC_SHARED_DIR", os.path.join(ROOT, "..", "shared")),
                   "fixtures", "tpugraphs_raw")
TILE = os.path.join(RAW, "op_tuning_data.pb")


def close(a, b, tol=1e-6):
    if a is None or b is None or math.isnan(a) or math.isnan(b):
        return (a is None or math.isnan(a)) and (b is None or math.isnan(b))
    return abs(a - b) <= tol


def topk_slowdown(score, rt, k):
    top = np.argsort(score, kind="stable")[:k]  # ties: lower index first, as perfcast
    return rt[top].min() / rt.min() - 1.0


def eval_json(model, data, what):
    p = run("eval", "--model", model, "--data", data, "--split", "test", "--json",
            "--threads", "2")
    expect_rc(p, 0, "eval " + what)
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        FAILS.append("eval %s --json: %r (%s)" % (what, p.stdout, e))
        return None


def check_ranges(r, what):
    expect(r["collection"] == "tile:xla" and r["metric_name"] == "tile_score",
           "%s: fields %r" % (what, r))
    expect(r["metric"] is not None and r["metric"] <= 1.0 + 1e-12,
           "%s: tile score %r not <= 1" % (what, r["metric"]))
    expect(r["kendall_tau"] is None or -1.0 - 1e-12 <= r["kendall_tau"] <= 1.0 + 1e-12,
           "%s: tau %r" % (what, r["kendall_tau"]))
    expect(r["opa"] is not None and 0.0 <= r["opa"] <= 1.0, "%s: opa %r" % (what, r["opa"]))
    sd = [r["top1_slowdown"], r["top5_slowdown"], r["top10_slowdown"]]
    expect(all(v is not None and v >= 0.0 for v in sd) and sd[0] >= sd[1] >= sd[2],
           "%s: slowdowns %r not >= 0 and non-increasing in K" % (what, sd))
    expect(close(r["metric"], 1.0 - r["top5_slowdown"], 1e-9),
           "%s: tile score %r != 1 - top5 slowdown %r" % (what, r["metric"],
                                                         r["top5_slowdown"]))


def main():
    if not os.path.isfile(TILE):
        print("SKIP: fixture not found: %s" % TILE)
        return 77
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)

    imp = os.path.join(TMP, "imported")
    p = run("import", TILE, "--out", imp)
    expect_rc(p, 0, "import op_tuning_data.pb")
    expect("TuningData, 15 modules (tile): 15 written, 0 skipped" in p.stdout, p.stdout)
    expect("754 in the file, 752 kept (15 default)" in p.stdout, p.stdout)
    files = sorted(glob.glob(os.path.join(imp, "*.npz")))
    expect(len(files) == 15, "imported %d files" % len(files))
    real = os.path.join(TMP, "real")
    os.makedirs(os.path.join(real, "tile", "xla", "test"))
    kernels = []
    for f in files:
        name = os.path.basename(f)
        with np.load(f) as z:
            rt = z["config_runtime"].astype(np.float64)
        shutil.copy(f, os.path.join(real, "tile", "xla", "test", name))
        one = os.path.join(TMP, "per", name[:-4])
        os.makedirs(os.path.join(one, "tile", "xla", "test"))
        os.symlink(f, os.path.join(one, "tile", "xla", "test", name))
        kernels.append((name[:-4], f, one, rt))
    expect(sum(len(k[3]) for k in kernels) == 752,
           "configs in the npz files: %d" % sum(len(k[3]) for k in kernels))

    syn = os.path.join(TMP, "syn")
    p = run("synth", "--out", syn, "--scale", "tiny", "--seed", "1", "--threads", "2",
            "--collections", "tile:xla")
    expect_rc(p, 0, "synth tile")
    model = os.path.join(TMP, "tile.st")
    p = run("train", "--data", syn, "--collection", "tile:xla", "--out", model, "--threads",
            "2", "--epochs", "3", "--seed", "1", "--hidden", "16", "--layers", "2",
            "--progress", "never")
    expect_rc(p, 0, "train tile on synthetic data")
    if FAILS:
        return report()

    allr = eval_json(model, real, "on the 15 real kernels")
    if allr:
        expect(allr["graphs"] == 15 and allr["split"] == "test", "eval all: %r" % allr)
        check_ranges(allr, "eval all kernels")

    per = {"tau": [], "top1": [], "top5": [], "top10": [], "opa": [], "metric": []}
    for name, path, one, rt in kernels:
        p = run("rank", "--model", model, path, "--top", "100000", "--json", "--threads", "2")
        expect_rc(p, 0, "rank " + name)
        try:
            r = json.loads(p.stdout)["graphs"][0]
        except ValueError as e:
            FAILS.append("rank %s --json: %r (%s)" % (name, p.stdout, e))
            continue
        n = len(rt)
        expect(r["configs"] == n and len(r["top"]) == n,
               "%s: rank has %d configs / %d rows, npz %d" % (name, r["configs"],
                                                             len(r["top"]), n))
        ids = [row["config"] for row in r["top"]]
        expect(sorted(ids) == list(range(n)), "%s: every config ranked once" % name)
        if sorted(ids) != list(range(n)):
            continue
        score = np.empty(n)
        for row in r["top"]:
            score[row["config"]] = row["score"]
        expect(np.isfinite(score).all(), "%s: scores finite" % name)
        expect(all(row["runtime"] == rt[row["config"]] for row in r["top"]),
               "%s: rank runtimes equal the npz's" % name)
        expect([row["rank"] for row in r["top"]] == list(range(1, n + 1)), "%s: ranks" % name)
        expect(all(a["score"] <= b["score"] for a, b in zip(r["top"], r["top"][1:])),
               "%s: rank rows best (lowest score) first" % name)
        expect(r["true_best"]["config"] == int(np.argmin(rt))
               and r["true_best"]["runtime"] == rt.min()
               and ids[r["true_best"]["rank"] - 1] == r["true_best"]["config"],
               "%s: true_best %r" % (name, r["true_best"]))

        e = eval_json(model, one, name + " alone")
        if not e:
            continue
        expect(e["graphs"] == 1, "%s: eval graphs %r" % (name, e["graphs"]))
        check_ranges(e, "eval " + name)
        tau = float(scipy.stats.kendalltau(score, rt)[0])
        expect(close(e["kendall_tau"], tau),
               "%s: perfcast tau %r, scipy.stats.kendalltau(rank scores, runtimes) %r"
               % (name, e["kendall_tau"], tau))
        for k in (1, 5, 10):
            want = topk_slowdown(score, rt, k)
            expect(close(e["top%d_slowdown" % k], want),
                   "%s: top-%d slowdown %r, numpy %r" % (name, k, e["top%d_slowdown" % k],
                                                        want))
            per["top%d" % k].append(e["top%d_slowdown" % k])
        per["tau"].append(e["kendall_tau"])
        per["opa"].append(e["opa"])
        per["metric"].append(e["metric"])

    # the all-kernel eval is the mean of the per-kernel ones (tau: over defined values)
    if allr and len(per["metric"]) == 15:
        for key, ak in (("tau", "kendall_tau"), ("opa", "opa"), ("metric", "metric"),
                        ("top1", "top1_slowdown"), ("top5", "top5_slowdown"),
                        ("top10", "top10_slowdown")):
            vals = [v for v in per[key] if v is not None and not math.isnan(v)]
            want = float(np.mean(vals)) if vals else float("nan")
            expect(close(allr[ak], want), "eval all %s %r != mean over kernels %r"
                   % (ak, allr[ak], want))
    print("real kernels: %d evaluated, %d configs; mean tau %s, top-1 slowdown %s "
          "(tiny model, quality not asserted)"
          % (len(per["metric"]), sum(len(k[3]) for k in kernels),
             allr and allr["kendall_tau"], allr and allr["top1_slowdown"]))
    return report()


def report():
    if FAILS:
        for f in FAILS:
            print("FAIL:", f)
        return 1
    shutil.rmtree(TMP, ignore_errors=True)
    print("real kernels: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
