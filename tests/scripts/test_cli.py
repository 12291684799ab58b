#!/usr/bin/env python3
"""End-to-end tests of the perfcast command line.

Covers: help/version, usage errors (exit 2 with a message), synth
determinism, stats/check/info on synthetic data (text and --json), check
listing every problem of a broken graph, the cache round trip, and clean
failures (exit 1, file named, no half-written output).

Environment (tests/CMakeLists.txt): PERFCAST, PC_TEST_TMP. numpy (Debian
python3-numpy) builds the broken graph.
"""
import filecmp
import json
import os
import shutil
import sys

import numpy as np

from clitest import FAILS, expect, expect_rc, report, run, run_checks
TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_cli")


def test_help():
    p = run("--help")
    expect_rc(p, 0, "--help")
    for cmd in ("info", "stats", "check", "synth", "cache"):
        expect(cmd in p.stdout, "--help lists " + cmd)
        q = run(cmd, "--help")
        expect_rc(q, 0, cmd + " --help")
        expect("usage: perfcast " + cmd in q.stdout, cmd + " --help prints usage")
    p = run("--version")
    expect_rc(p, 0, "--version")
    expect(p.stdout.startswith("perfcast "), "--version output")


def test_usage_errors():
    cases = [
        ([], "usage"),
        (["frobnicate"], "unknown command"),
        (["info"], "expected at least one FILE"),
        (["info", "--bogus", "x.npz"], "unknown option"),
        (["stats", "--threads", "lots", "d"], "--threads"),
        (["stats", "--threads", "-3", "d"], "--threads"),
        (["synth"], "--out"),
        (["synth", "--out", TMP + "/x", "--scale", "huge"], "--scale"),
        (["synth", "--out", TMP + "/x", "--seed", "1e9"], "--seed"),
        (["synth", "--out", TMP + "/x", "--collections", "tile:gpu"], "--collections"),
        (["synth", "--out", TMP + "/x", "--layout-nodes", "0"], "--layout-nodes"),
        (["check"], "PATH"),
        (["cache", "d"], "--out"),
    ]
    for args, needle in cases:
        p = run(*args)
        expect_rc(p, 2, "usage error for %r" % args)
        expect(needle in p.stderr, "message for %r mentions %r: %s" % (args, needle, p.stderr))
    expect(not os.path.exists(TMP + "/x"), "a refused synth wrote nothing")


def synth(out, seed):
    p = run("synth", "--out", out, "--scale", "tiny", "--seed", str(seed), "--threads", "2")
    expect_rc(p, 0, "synth seed %d" % seed)


def same_tree(a, b):
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.diff_files or cmp.funny_files:
        return False
    for sub in cmp.common_dirs:
        if not same_tree(os.path.join(a, sub), os.path.join(b, sub)):
            return False
    # dircmp compares shallowly (size+mtime); compare bytes too.
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    return not mismatch and not errors


def test_synth_determinism(d1):
    d2, d3 = TMP + "/synth_again", TMP + "/synth_other"
    synth(d2, 7)
    synth(d3, 8)
    expect(same_tree(d1, d2), "same seed gives byte-identical trees")
    expect(not same_tree(d1, d3), "a different seed gives different data")


def test_stats_prune(d):
    """--prune-hops: per-graph reduction, checked against a BFS in numpy."""
    p = run("stats", "--json", "--prune-hops", "1", d)
    expect_rc(p, 0, "stats --prune-hops 1")
    out = json.loads(p.stdout)
    pr = out["pruning"]
    expect(sorted(out) == ["dataset", "pruning", "splits"] and len(out["splits"]) == 15,
           "stats --json --prune-hops has the shape of stats --json: %s" % sorted(out))
    expect(pr["hops"] == 1 and pr["collapse_chains"] is False and len(pr["graphs"]) > 0,
           "pruning rows present")
    if pr["graphs"]:
        g = pr["graphs"][0]
        z = np.load(g["file"])
        n = len(z["node_opcode"])
        e = z["edge_index"].astype(np.int64)
        keep = np.zeros(n, bool)
        keep[z["node_config_ids"]] = True
        hop = keep.copy()
        hop[e[keep[e[:, 0]], 1]] = True  # operands of configurable nodes
        hop[e[keep[e[:, 1]], 0]] = True  # users of configurable nodes
        both = hop[e[:, 0]] & hop[e[:, 1]]
        expect(g["nodes"] == n and g["nodes_after"] == int(hop.sum()),
               "pruned node count %r vs numpy %d" % (g, int(hop.sum())))
        expect(g["edges_after"] == int(both.sum()), "pruned edge count %r vs numpy %d"
               % (g, int(both.sum())))
    p = run("stats", "--prune-hops", "2", "--collapse-chains", d)
    expect_rc(p, 0, "stats --prune-hops 2 --collapse-chains")
    expect("(all)" in p.stdout and "chains collapsed" in p.stdout, "pruning table: " + p.stdout)
    p = run("stats", "--collapse-chains", d)
    expect_rc(p, 2, "--collapse-chains alone")
    p = run("stats", "--prune-hops", "0", d)  # 0 = no pruning, as in train: nothing to report
    expect_rc(p, 2, "stats --prune-hops 0")
    expect("0 means no pruning" in p.stderr, "stats --prune-hops 0 says why: " + p.stderr)


def test_stats(d):
    test_stats_prune(d)
    p = run("stats", d)
    expect_rc(p, 0, "stats")
    for c in ("tile:xla", "layout:xla:random", "layout:xla:default", "layout:nlp:random",
              "layout:nlp:default"):
        expect(c in p.stdout, "stats lists " + c)
    p = run("stats", "--json", d)
    expect_rc(p, 0, "stats --json")
    out = json.loads(p.stdout)
    expect(out["pruning"] is None, "no pruning without --prune-hops")
    rows = out["splits"]
    expect(len(rows) == 15, "15 collection x split rows, got %d" % len(rows))
    n_files = sum(len(fs) for _, _, fs in os.walk(d))
    expect(sum(r["graphs"] for r in rows) == n_files, "stats counts every file")
    test_rows = [r for r in rows if r["split"] == "test"]
    expect(all(r["graphs_without_runtimes"] == r["graphs"] for r in test_rows),
           "test splits have no runtimes")
    # Cross-check one row against numpy.
    tile_train = [r for r in rows if r["collection"] == "tile:xla" and r["split"] == "train"]
    expect(len(tile_train) == 1, "one tile:xla train row, got %r" % rows)
    if not tile_train:
        return
    tile_train = tile_train[0]
    tdir = os.path.join(d, "npz/tile/xla/train")
    nodes = configs = 0
    for f in os.listdir(tdir):
        z = np.load(os.path.join(tdir, f))
        nodes += z["node_feat"].shape[0]
        configs += z["config_runtime"].shape[0]
    expect(tile_train["nodes"] == nodes and tile_train["configs"] == configs,
           "stats totals match numpy (%r vs %d nodes, %d configs)" % (tile_train, nodes, configs))


def test_check_ok(d):
    p = run("check", "--quiet", d)
    expect_rc(p, 0, "check on synthetic data")
    expect("0 with problems" in p.stdout, "check summary")


def test_info(d):
    f = sorted(os.listdir(os.path.join(d, "npz/layout/xla/random/train")))[0]
    path = os.path.join(d, "npz/layout/xla/random/train", f)
    p = run("info", path)
    expect_rc(p, 0, "info")
    expect("graph: layout" in p.stdout, "info graph summary")
    p = run("info", "--json", path)
    expect_rc(p, 0, "info --json")
    doc = json.loads(p.stdout)[0]
    z = np.load(path)
    arrays = {a["key"]: a for a in doc["arrays"]}
    expect(set(arrays) == set(z.files), "info lists every array")
    for k in z.files:
        a = z[k]
        expect(list(a.shape) == arrays[k]["shape"], "info shape of " + k)
        if a.size:
            expect(np.isclose(arrays[k]["min"], a.min()) and np.isclose(arrays[k]["max"], a.max())
                   and np.isclose(arrays[k]["mean"], a.astype(np.float64).mean(), rtol=1e-6),
                   "info min/max/mean of %s" % k)
    expect(doc["graph"]["nodes"] == z["node_feat"].shape[0], "info graph nodes")


def write_broken(path):
    n = 6
    np.savez(path,
             node_feat=np.array([[0.0] * 140] * (n - 1) + [[np.nan] * 140], np.float32),
             node_opcode=np.array([2, 13, 24, 26, 34, 41], np.uint8),
             edge_index=np.array([[1, 0], [2, 9], [3, -1]], np.int64),
             node_config_ids=np.array([3, 3], np.int64),
             node_config_feat=np.full((2, 2, 18), -1, np.float32),
             node_splits=np.array([[0, 4, 2, 6]], np.int64),
             config_runtime=np.array([5, 0], np.int64))


def test_check_problems():
    d = TMP + "/broken/npz/layout/xla/random/train"
    os.makedirs(d, exist_ok=True)
    path = d + "/broken.npz"
    write_broken(path)
    p = run("check", path)
    expect_rc(p, 1, "check on a broken graph")
    out = p.stdout
    for needle in ("edge", "node_config_ids", "node_splits", "config_runtime", "node_feat"):
        expect(needle in out, "check reports a %s problem:\n%s" % (needle, out))
    expect(out.count("broken.npz") >= 5, "every problem line names the file:\n" + out)
    p = run("check", TMP + "/broken")  # the tree form finds it too
    expect_rc(p, 1, "check on a tree with a broken graph")


def test_bad_files():
    junk = TMP + "/junk.npz"
    with open(junk, "wb") as f:
        f.write(b"PK\x03\x04 this is not really a zip file")
    for args in (["info", junk], ["check", junk], ["info", TMP + "/missing.npz"],
                 ["check", TMP + "/missing.npz"], ["stats", TMP + "/nothing_here"]):
        p = run(*args)
        expect_rc(p, 1, "clean failure for %r" % args)
        expect(os.path.basename(args[-1]) in (p.stderr + p.stdout), "message names the file for %r"
               % args)


def test_synth_unwritable():
    blocker = TMP + "/blocker"
    with open(blocker, "w") as f:
        f.write("a file, not a directory")
    p = run("synth", "--out", blocker + "/sub", "--scale", "tiny")
    expect_rc(p, 1, "synth into an impossible directory")
    expect("blocker" in p.stderr, "synth error names the path: " + p.stderr)


def test_cache(d):
    c = TMP + "/cache"
    p = run("cache", d, "--out", c)
    expect_rc(p, 0, "cache build")
    p1 = run("stats", "--json", d)
    p2 = run("stats", "--json", c)
    expect_rc(p2, 0, "stats on the cache")
    strip = lambda out: json.loads(out)["splits"]
    expect(strip(p1.stdout) == strip(p2.stdout), "stats identical on cache and source")
    p = run("check", "--quiet", c)
    expect_rc(p, 0, "check on the cache")
    stamp = {}
    for root, dirs, files in os.walk(c):
        for f in files:
            stamp[os.path.join(root, f)] = os.stat(os.path.join(root, f)).st_ino
    p = run("cache", d, "--out", c)
    expect_rc(p, 0, "cache rebuild")
    same = all(os.stat(f).st_ino == ino for f, ino in stamp.items() if os.path.exists(f))
    expect(same, "an up-to-date cache is kept, not rewritten")
    leftovers = [f for _, _, fs in os.walk(c) for f in fs if "tmp" in f]
    expect(not leftovers, "no temporary files left: %r" % leftovers[:5])


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    d1 = TMP + "/synth"
    synth(d1, 7)
    if FAILS:  # everything below reads this tree
        return report("")
    run_checks((test_help, test_usage_errors, lambda: test_synth_determinism(d1),
                lambda: test_stats(d1), lambda: test_check_ok(d1), lambda: test_info(d1),
                test_check_problems, test_bad_files, test_synth_unwritable,
                lambda: test_cache(d1)))
    return report("all CLI checks passed")


if __name__ == "__main__":
    sys.exit(main())
