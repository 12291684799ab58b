#!/usr/bin/env python3
"""`perfcast simulate --out / --merge`: tune's proposals as training data.

- `simulate PROPOSALS --out L`: L holds PROPOSALS' graph arrays and configs
  with config_runtime the simulated runtimes `simulate` prints (rounded to ns,
  as synth records them); tile: config_runtime_normalizers the default's;
- `--merge BASE`: BASE's arrays, its configs and recorded runtimes first, then
  the proposals BASE lacks (each once), labelled as above; merging again adds
  nothing; `--out` may be BASE (in place);
- `train` takes a folder of merged files (train and valid) as its data;
- refused with no output file: a file synth did not write, a different graph
  (or kind) in --merge, --merge without --out.

Proposals come from `tune --oracle` (a real tune output, no model needed).
Environment: PERFCAST, PC_TEST_TMP. Exit 77 without numpy.
"""
import glob
import json
import math
import os
import shutil
import sys

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy missing")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clitest import expect, expect_rc, report, run, run_checks  # noqa: E402

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_simulate_label")
SYN = ["--seed", "7", "--scale", "tiny", "--graphs", "3"]
COLLS = {"tile": "tile:xla", "layout": "layout:xla:default"}
FEAT = {"tile": "config_feat", "layout": "node_config_feat"}
DATA = os.path.join(TMP, "data")


def sub(kind, split):
    return os.path.join(DATA, "npz", *COLLS[kind].split(":"), split)


def ns(x):
    return max(1, int(math.floor(x + 0.5)))


def propose(kind, f):
    """tune --oracle's proposals for f, as OUT/<stem>.npz (simulate finds the graph by stem)."""
    out = os.path.join(TMP, "prop", kind, os.path.basename(f))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    p = run("tune", "--oracle", "--synth-seed", "7", "--synth-scale", "tiny", "--synth-graphs", "3",
            f, "--out", out, "--top", "8", "--budget-s", "1", "--max-changes", "0", "--seed", "3",
            *(["--tile-new-sizes", "--tile-max-changes", "-1"] if kind == "tile" else []))
    expect_rc(p, 0, "tune --oracle " + f)
    return out


def simulate(path, *extra, rc=0):
    p = run("simulate", path, *SYN, "--json", *extra)
    expect_rc(p, rc, "simulate %s %s" % (path, " ".join(extra)))
    return json.loads(p.stdout) if p.returncode == 0 and rc == 0 else p


def same_graph(a, b, what):
    for k in ("node_feat", "node_opcode", "edge_index", "node_config_ids", "node_splits"):
        expect((k in a) == (k in b), "%s: %s present in one file only" % (what, k))
        if k in a and k in b:
            expect(np.array_equal(a[k], b[k]), "%s: %s differs" % (what, k))


def check_out(kind):
    f = sorted(glob.glob(os.path.join(sub(kind, "train"), "*.npz")))[0]
    prop = propose(kind, f)
    lab = os.path.join(TMP, "lab_" + kind, os.path.basename(f))  # simulate needs the stem
    os.makedirs(os.path.dirname(lab), exist_ok=True)
    r = simulate(prop, "--out", lab)
    if isinstance(r, dict):
        z, pz = np.load(lab), np.load(prop)
        same_graph(z, pz, "--out " + kind)
        expect(np.array_equal(z[FEAT[kind]], pz[FEAT[kind]]), kind + ": configs changed")
        expect(r["out"]["configs"] == len(pz["config_runtime"]), kind + ": out configs")
        for c in r["runtimes"]:
            expect(z["config_runtime"][c["config"]] == ns(c["ns"]), "%s config %d: %d vs %.3f"
                   % (kind, c["config"], z["config_runtime"][c["config"]], c["ns"]))
        if kind == "tile":
            expect((z["config_runtime_normalizers"] == ns(r["default_ns"])).all(),
                   "tile normalizers are not the default's runtime")
        # the labelled file simulates to the runtimes it records
        again = simulate(lab)
        expect(isinstance(again, dict) and again["runtimes"] == [dict(x, file_runtime=ns(x["ns"]))
                                                                 for x in r["runtimes"]],
               kind + ": the labelled file's runtimes are not simulate's")


def check_merge(kind):
    added = 0
    for split in ("train", "valid"):
        for f in sorted(glob.glob(os.path.join(sub(kind, split), "*.npz"))):
            prop = propose(kind, f)
            merged = os.path.join(TMP, "merged", *COLLS[kind].split(":"), split,
                                  os.path.basename(f))
            os.makedirs(os.path.dirname(merged), exist_ok=True)
            r = simulate(prop, "--out", merged, "--merge", f)
            if not isinstance(r, dict):
                continue
            b, m, pz = np.load(f), np.load(merged), np.load(prop)
            same_graph(b, m, "--merge " + f)
            nb = len(b["config_runtime"])
            fb, fm, fp = b[FEAT[kind]], m[FEAT[kind]], pz[FEAT[kind]]
            expect(np.array_equal(fm[:nb], fb), f + ": the base's configs changed")
            expect(np.array_equal(m["config_runtime"][:nb], b["config_runtime"]),
                   f + ": the base's recorded runtimes changed")
            if kind == "tile":
                expect(np.array_equal(m["config_runtime_normalizers"][:nb],
                                      b["config_runtime_normalizers"]), f + ": normalizers")
            new, seen = [], [x.tobytes() for x in fb]
            for i, x in enumerate(fp):
                if x.tobytes() not in seen:
                    seen.append(x.tobytes())
                    new.append(i)
            added += len(new)
            expect(len(fm) == nb + len(new) and r["out"]["added"] == len(new),
                   "%s: %d configs, expected %d + %d" % (f, len(fm), nb, len(new)))
            by = {c["config"]: c["ns"] for c in r["runtimes"]}
            for j, i in enumerate(new):
                if nb + j < len(fm):
                    expect(np.array_equal(fm[nb + j], fp[i]), "%s: new config %d" % (f, j))
                    expect(m["config_runtime"][nb + j] == ns(by[i]),
                           "%s: new config %d runtime %d, simulate printed %.3f"
                           % (f, j, m["config_runtime"][nb + j], by[i]))
            # again, in place: nothing new
            r2 = simulate(prop, "--out", merged, "--merge", merged)
            expect(isinstance(r2, dict) and r2["out"]["added"] == 0
                   and len(np.load(merged)["config_runtime"]) == len(fm),
                   f + ": merging the same proposals again added configs")
    expect(added > 0, kind + ": no proposal was new to its file (the test shows nothing)")
    # train takes the merged files as its data
    model = os.path.join(TMP, "m_%s.st" % kind)
    p = run("train", "--data", os.path.join(TMP, "merged"), "--collection", COLLS[kind],
            "--out", model, "--epochs", "1", "--threads", "1", timeout=600)
    expect_rc(p, 0, "train on merged " + kind)
    expect(os.path.exists(model), "train on merged %s: no model" % kind)


def check_merge_layout():
    check_merge("layout")


def check_merge_tile():
    check_merge("tile")


def check_out_both():
    check_out("tile")
    check_out("layout")


def check_refused():
    bad = os.path.join(TMP, "bad")
    shutil.rmtree(bad, ignore_errors=True)
    os.makedirs(bad)
    out = os.path.join(bad, "out.npz")
    lay = sorted(glob.glob(os.path.join(sub("layout", "train"), "*.npz")))
    tile = sorted(glob.glob(os.path.join(sub("tile", "train"), "*.npz")))
    prop = propose("layout", lay[0])
    # a file synth did not write: node_feat edited, same stem
    z = dict(np.load(prop))
    z["node_feat"] = z["node_feat"].copy()
    z["node_feat"][0, 21] += 1
    edited = os.path.join(bad, os.path.basename(prop))
    np.savez(edited, **z)
    p = simulate(edited, "--out", out, rc=1)
    expect("node_feat" in p.stderr, "message: " + p.stderr)
    expect(not os.path.exists(out), "an output was left for a file synth did not write")
    p = simulate(edited, "--out", out, "--merge", lay[0], rc=1)
    expect(not os.path.exists(out), "an output was left for a file synth did not write (merge)")
    # a different graph in --merge: another program, or the other kind
    for other, field in ((lay[1], "node_feat"), (tile[0], "kind")):
        p = simulate(prop, "--out", out, "--merge", other, rc=1)
        expect(other in p.stderr and field in p.stderr and "same graph" in p.stderr,
               "message: " + p.stderr)
        expect(not os.path.exists(out), "an output was left for --merge " + other)
    # the merge base edited: same stem, other graph arrays
    z = dict(np.load(lay[0]))
    z["edge_index"] = z["edge_index"][:-1]
    base = os.path.join(bad, "base.npz")
    np.savez(base, **z)
    p = simulate(prop, "--out", out, "--merge", base, rc=1)
    expect("edge_index" in p.stderr, "message: " + p.stderr)
    expect(not os.path.exists(out), "an output was left for an edited --merge base")
    p = run("simulate", prop, *SYN, "--merge", lay[0])
    expect_rc(p, 2, "--merge without --out")
    expect(not [x for x in os.listdir(bad) if x not in ("base.npz", os.path.basename(prop))],
           "files left behind: %s" % os.listdir(bad))


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    p = run("synth", "--out", DATA, *SYN, "--collections", ",".join(COLLS.values()))
    expect_rc(p, 0, "synth")
    run_checks([check_out_both, check_merge_layout, check_merge_tile, check_refused])
    return report("simulate --out/--merge: ok")


if __name__ == "__main__":
    sys.exit(main())
