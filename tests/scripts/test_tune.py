#!/usr/bin/env python3
"""`perfcast tune` with tiny models trained on synthetic data.

- every proposal is valid: the output .npz holds the input's graph arrays,
  K configs of the right shape and zero runtimes, and `simulate` (which
  refuses anything but -1 or a permutation of each tensor's true rank, and
  tile bounds outside the kernel's extents) times all of them; `--data`
  writes one <stem>.npz per test graph, byte-identical to tuning the file
  alone (the model is loaded once for the split), with the same document;
- deterministic for a seed with --max-scored (same bytes twice);
- the policy: --max-changes N keeps every proposal within N changed tensors
  of the default, --risk and --max-changes are echoed in the JSON and refuse
  negative values; the tile region follows the model: 2 bounds and new sizes
  for a model trained with rsteps (train's default), the file's configs only
  for one trained without; explicit flags win;
- the oracle search (--oracle, the simulator as scorer) is never slower than
  the compiler default nor than the file's best config;
- imported HLO (PC_SHARED_DIR/fixtures/hlo, skipped without): layout and
  tile proposals printed in rank's notation read back by `rank --configs`
  (which checks every permutation against the real shapes);
- bad input: a tile model on a layout graph, a graph-only .npz (no configs),
  a space of one configuration, --budget-s 0, --oracle on a file synth did
  not write: clear messages, non-zero exit, no output file.

Environment: PERFCAST, PC_TEST_TMP, PC_SHARED_DIR. Exit 77 without numpy.
"""
import glob
import json
import os
import shutil
import sys

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy missing")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clitest import expect, expect_rc, report, run, run_checks, tiny_models  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_tune")
HLO = os.path.join(os.environ.get("PC_SHARED_DIR", os.path.join(ROOT, "..", "shared")),
                   "fixtures", "hlo")
DATA = os.path.join(TMP, "data")
SYN = ("--synth-seed", "3", "--synth-scale", "tiny")
MODELS = {}


def setup():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    MODELS.update(tiny_models(DATA, TMP, 3, "layout:xla:default"))


def test_files(coll):
    return sorted(glob.glob(os.path.join(DATA, "npz", coll.split(":")[0], *coll.split(":")[1:],
                                         "test", "*.npz")))


def simulate(path):
    p = run("simulate", path, "--seed", "3", "--scale", "tiny", "--json")
    expect_rc(p, 0, "simulate " + path)
    return json.loads(p.stdout) if p.returncode == 0 else None


def check_output(src, out, k):
    a, b = np.load(src), np.load(out)
    for key in ("node_feat", "node_opcode", "edge_index", "node_config_ids", "node_splits"):
        if key in a.files:
            expect(key in b.files and np.array_equal(a[key], b[key]), "%s: %s differs" % (out, key))
    cf = "config_feat" if "config_feat" in a.files else "node_config_feat"
    expect(b[cf].shape[0] == k and b[cf].shape[1:] == a[cf].shape[1:],
           "%s: %s shape %s" % (out, cf, b[cf].shape))
    expect(b["config_runtime"].shape == (k,) and not b["config_runtime"].any(), out + ": runtimes")


def check_valid_proposals():
    for coll in ("layout:xla:default", "tile:xla"):
        out = os.path.join(TMP, "split_" + coll.replace(":", "_"))
        p = run("tune", "--model", MODELS[coll], "--data", DATA, "--out", out, "--top", "4",
                "--budget-s", "20", "--max-scored", "1500", "--threads", "2", "--json")
        expect_rc(p, 0, "tune --data " + coll)
        docs = json.loads(p.stdout) if p.returncode == 0 else []
        srcs = test_files(coll)
        expect(len(srcs) >= 1, "no test files for " + coll)
        for i, src in enumerate(srcs):
            dst = os.path.join(out, os.path.basename(src))
            expect(os.path.exists(dst), "no output for " + src)
            if not os.path.exists(dst):
                continue
            check_output(src, dst, 4)
            r = simulate(dst)  # refuses invalid configs
            expect(r is not None and r["configs"] == 4, "simulated proposals of " + dst)
            check_same_as_file(coll, src, dst, docs[i] if i < len(docs) else None)


def check_same_as_file(coll, src, dst, doc):
    """--data loads the model once for all graphs: each graph's proposals and document
    are those of tuning the file alone (the model loaded for it)."""
    one = os.path.join(TMP, "one_" + os.path.basename(src))
    p = run("tune", "--model", MODELS[coll], src, "--out", one, "--top", "4", "--budget-s", "20",
            "--max-scored", "1500", "--threads", "2", "--json")
    expect_rc(p, 0, "tune " + src)
    if p.returncode != 0:
        return
    with open(one, "rb") as f, open(dst, "rb") as g:
        expect(f.read() == g.read(), "%s: --data wrote other bytes than tuning it alone" % dst)
    drop = ("seconds", "out")
    alone = {k: v for k, v in json.loads(p.stdout).items() if k not in drop}
    expect(doc is not None and {k: v for k, v in doc.items() if k not in drop} == alone,
           "%s: --data's document differs from tuning it alone" % src)


def check_deterministic():
    src = test_files("layout:xla:default")[0]
    outs = []
    for i in range(2):
        out = os.path.join(TMP, "det%d.npz" % i)
        p = run("tune", "--model", MODELS["layout:xla:default"], src, "--out", out, "--seed", "9",
                "--max-scored", "1200", "--budget-s", "60", "--threads", "2")
        expect_rc(p, 0, "tune det")
        outs.append(out)
    a, b = np.load(outs[0]), np.load(outs[1])
    expect(np.array_equal(a["node_config_feat"], b["node_config_feat"]), "same seed, other proposals")


def check_policy():
    """--max-changes N: no proposal changes more than N tensors from the default
    (all -1); --risk, --tile-risk and --max-changes refuse negative values, and
    --tile-risk (default 0) is echoed."""
    src = test_files("layout:xla:default")[0]
    for n in ("1", "3", "0"):
        out = os.path.join(TMP, "trust%s.npz" % n)
        p = run("tune", "--model", MODELS["layout:xla:default"], src, "--out", out,
                "--max-changes", n, "--risk", "0.5", "--max-scored", "1500", "--budget-s", "60",
                "--threads", "2", "--json")
        expect_rc(p, 0, "tune --max-changes " + n)
        if p.returncode:
            continue
        j = json.loads(p.stdout)
        expect(j["max_changes"] == int(n) and j["risk"] == 0.5 and j["tile_risk"] == 0,
               "policy in the JSON: %s" % j)
        cf = np.load(out)["node_config_feat"]  # (k, nc, 18): tensors at slots 0, 6, 12
        changed = (cf[:, :, [0, 6, 12]] != -1).sum(axis=(1, 2))
        if n != "0":
            expect(changed.max() <= int(n), "--max-changes %s: proposals change %s tensors"
                   % (n, changed.tolist()))
    for flag in ("--risk", "--tile-risk", "--max-changes"):
        p = run("tune", "--model", MODELS["layout:xla:default"], src, flag, "-1")
        expect_rc(p, 2, flag + " -1")
        expect(flag in p.stderr, "message: " + p.stderr)


def check_tile_policy():
    """The tile trust region is decided by the model's encoding unless given."""
    src = test_files("tile:xla")[0]
    plain = os.path.join(TMP, "tile_steps.st")  # trained without rsteps
    p = run("train", "--data", DATA, "--collection", "tile:xla", "--out", plain, "--threads", "2",
            "--epochs", "1", "--hidden", "8", "--layers", "1", "--configs", "4", "--encode",
            "steps")
    expect_rc(p, 0, "train --encode steps")
    file_rows = {tuple(r) for r in np.load(src)["config_feat"].tolist()}
    for model, flags, region, new, only_file in (
            (MODELS["tile:xla"], (), 2, True, False),
            (MODELS["tile:xla"], ("--no-tile-new-sizes",), 2, False, False),
            (MODELS["tile:xla"], ("--tile-max-changes", "0"), 0, False, True),
            (plain, (), 0, False, True),
            (plain, ("--tile-max-changes", "1", "--tile-new-sizes"), 1, True, False)):
        out = os.path.join(TMP, "tpol.npz")
        p = run("tune", "--model", model, src, "--out", out, "--max-scored", "400",
                "--budget-s", "30", "--threads", "2", "--json", *flags)
        expect_rc(p, 0, "tune %s %s" % (os.path.basename(model), flags))
        if p.returncode:
            continue
        j = json.loads(p.stdout)
        expect(j["tile_max_changes"] == region and j["tile_new_sizes"] is new,
               "%s %s: policy %s" % (os.path.basename(model), flags, j))
        if only_file:
            rows = np.load(out)["config_feat"].tolist()
            expect(all(tuple(r) in file_rows for r in rows),
                   "region 0 proposed a config the file does not hold")


def check_oracle():
    for coll in ("layout:xla:default", "tile:xla"):
        for src in test_files(coll)[:2]:
            out = os.path.join(TMP, "oracle", os.path.basename(src))
            os.makedirs(os.path.dirname(out), exist_ok=True)
            p = run("tune", "--oracle", *SYN, src, "--out", out, "--budget-s", "5", "--json")
            expect_rc(p, 0, "tune --oracle " + src)
            got, base = simulate(out), simulate(src)
            if not got or not base:
                continue
            first = next(r["ns"] for r in got["runtimes"] if r["config"] == 0)
            expect(first <= base["default_ns"] + 1e-6, "%s: oracle %.1f slower than default %.1f"
                   % (src, first, base["default_ns"]))
            expect(first <= base["best"]["ns"] + 1e-6, "%s: oracle %.1f slower than the file's "
                   "best %.1f" % (src, first, base["best"]["ns"]))


def check_hlo():
    if not os.path.isdir(HLO):
        print("note: no HLO fixtures, HLO checks skipped")
        return
    cases = (("layout:xla:default", "ssd_mobilenet_tf.hlo", ()),
             ("tile:xla", "dot.hlo", ()))
    for coll, name, extra in cases:
        prog = os.path.join(HLO, name)
        out = os.path.join(TMP, "hlo_" + name + ".npz")
        p = run("tune", "--model", MODELS[coll], prog, "--out", out, "--max-scored", "800",
                "--budget-s", "30", "--threads", "2", "--top", "3", "--json", *extra)
        expect_rc(p, 0, "tune " + name)
        if p.returncode:
            continue
        p = run("tune", "--model", MODELS[coll], prog, "--max-scored", "800", "--budget-s", "30",
                "--threads", "2", "--top", "3", *extra)
        lines = [ln.split("  ", 3)[-1].strip() for ln in p.stdout.splitlines()
                 if ln.startswith("  ") and "score" in ln and ln.strip()[0].isdigit()]
        expect(len(lines) >= 1, "%s: proposals printed: %s" % (name, p.stdout[-500:]))
        cfg = os.path.join(TMP, name + ".cfg")
        with open(cfg, "w") as f:
            f.write("\n".join(lines) + "\n")
        p = run("rank", "--model", MODELS[coll], prog, "--configs", cfg, "--json")
        expect_rc(p, 0, "rank --configs with tune's proposals of " + name)
        files = [out] if os.path.exists(out) else sorted(glob.glob(out[:-4] + ".*.npz"))
        expect(len(files) >= 1, "no output for " + name)


def check_bad_input():
    src = test_files("layout:xla:default")[0]
    out = os.path.join(TMP, "bad.npz")
    p = run("tune", "--model", MODELS["tile:xla"], src, "--out", out)
    expect_rc(p, 1, "tile model on a layout graph")
    expect("layout graph" in p.stderr and "tile" in p.stderr, "message: " + p.stderr)
    p = run("tune", "--model", MODELS["layout:xla:default"], src, "--out", out, "--budget-s", "0")
    expect_rc(p, 2, "budget 0")
    expect("--budget-s" in p.stderr, "message: " + p.stderr)
    z = dict(np.load(src))
    z["node_config_feat"] = z["node_config_feat"][:0]
    z["config_runtime"] = z["config_runtime"][:0]
    empty = os.path.join(TMP, "noconfigs.npz")
    np.savez(empty, **z)
    p = run("tune", "--model", MODELS["layout:xla:default"], empty, "--out", out)
    expect(p.returncode != 0 and "noconfigs.npz" in p.stderr and "configs" in p.stderr,
           "graph without configs: %d %s" % (p.returncode, p.stderr))
    t = dict(np.load(test_files("tile:xla")[0]))
    t["config_feat"] = np.repeat(np.array([[1.0] * 3 + [0] * 3 + [3, 1] + [1.0] * 3 + [0] * 3 + [3, 1]
                                           + [0] * 8], dtype=np.float32), 4, axis=0)
    for k in ("config_runtime", "config_runtime_normalizers"):
        t[k] = np.ones(4, dtype=np.int64)
    one = os.path.join(TMP, "oneconfig.npz")
    np.savez(one, **t)
    p = run("tune", "--model", MODELS["tile:xla"], one, "--out", out)
    expect_rc(p, 1, "a one-config space")
    expect("one configuration" in p.stderr, "message: " + p.stderr)
    p = run("tune", "--oracle", *SYN, empty, "--out", out)
    expect_rc(p, 1, "oracle on a file synth did not write")
    expect(not os.path.exists(out), "an output file was left behind")


def main():
    setup()
    run_checks([check_valid_proposals, check_deterministic, check_policy, check_tile_policy,
                check_oracle, check_hlo, check_bad_input])
    return report("tune: ok")


if __name__ == "__main__":
    sys.exit(main())
