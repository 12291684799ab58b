#!/usr/bin/env python3
"""`perfcast import` on the two real TpuGraphs tuning protos in ../shared.

- op_tuning_data.pb (a TuningData: 15 fused kernels, 754 tile runs, 2 with an
  error) -> 15 tile .npz files with 752 configs in all;
- module_tuning_data_layout.pb (a ModuleTuningData: one program of 143
  computations and 3,163 instructions, 62 configurable nodes, 122 layout
  runs: 10 with an error, 1 default) -> one layout .npz with 112 configs.

Every array is compared with an independent reading of the raw protobuf
(tests/scripts/hloproto.py: the featurizer written from tpugraphs.md 6.3-6.4),
dtypes with the public dataset's, a few values with numbers worked out by
hand from the fixture, and the files must pass `perfcast check`. Truncated
and bit-flipped copies must fail with exit 1 and a message, leaving no file.

Environment (tests/CMakeLists.txt): PERFCAST, PC_TEST_TMP, PC_SHARED_DIR.
Exit 0 pass, 1 fail, 77 skip (no shared fixtures, or no numpy).
"""
import glob
import os
import random
import shutil
import sys

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy missing")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hloproto as H  # noqa: E402
from clitest import FAILS, expect, expect_rc, run  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_import_fixtures")
RAW = os.path.join(os.environ.get("PC_SHARED_DIR", os.path.join(ROOT, "..", "shared")),
                   "fixtures", "tpugraphs_raw")
TILE = os.path.join(RAW, "op_tuning_data.pb")
LAYOUT = os.path.join(RAW, "module_tuning_data_layout.pb")


def load(path):
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def same(a, b, what):
    a, b = np.asarray(a), np.asarray(b)
    ok = a.shape == b.shape and np.array_equal(a, b)
    if not ok:
        bad = ""
        if a.shape == b.shape:
            idx = np.argwhere(a != b)[:3].tolist()
            bad = " first differences at %s: %s vs %s" % (
                idx, [a[tuple(i)] for i in idx], [b[tuple(i)] for i in idx])
        FAILS.append("%s: perfcast %s %s, reference %s%s" % (what, a.shape, a.dtype, b.shape, bad))
    return ok


def check_dtypes(z, kind, path):
    want = {"node_feat": np.float32, "node_opcode": np.uint8, "edge_index": np.int64,
            "config_runtime": np.int64}
    if kind == "tile":
        want.update(config_feat=np.float32, config_runtime_normalizers=np.int64)
    else:
        want.update(node_config_feat=np.float32, node_config_ids=np.int64, node_splits=np.int64)
    expect(sorted(z) == sorted(want), "%s: keys %s" % (path, sorted(z)))
    for k, t in want.items():
        if k in z:
            expect(z[k].dtype == t, "%s: %s is %s, expected %s" % (path, k, z[k].dtype, t))


def test_tile(opcodes):
    out = os.path.join(TMP, "tile")
    p = run("import", TILE, "--out", out)
    expect_rc(p, 0, "import op_tuning_data.pb")
    expect("TuningData, 15 modules (tile): 15 written, 0 skipped" in p.stdout, p.stdout)
    expect("754 in the file, 752 kept (15 default); dropped: 2 with an error, 0 without a "
           "profile, 0 with a runtime <= 1 ns" in p.stdout, p.stdout)
    files = sorted(glob.glob(os.path.join(out, "*.npz")))
    expect(len(files) == 15, "tile files: %d" % len(files))
    expect(os.path.basename(files[0]) == "op_tuning_data_000_fusion.232.npz", files[:1])

    mods = H.read_tuning(open(TILE, "rb").read())
    expect(len(mods) == 15, "reference modules: %d" % len(mods))
    total_runs = total_kept = 0
    for i, (mtd, path) in enumerate(zip(mods, files)):
        z = load(path)
        check_dtypes(z, "tile", path)
        feat, ops, edges, _ = H.featurize(mtd[1][0], opcodes)
        same(z["node_feat"], feat, path + " node_feat")
        same(z["node_opcode"], ops, path + " node_opcode")
        same(z["edge_index"], edges, path + " edge_index")
        runs = H.runs_of(mtd)
        total_runs += len(runs)
        kept = [r for r in runs if not r["error"] and r["ns"] > 1]
        total_kept += len(kept)
        default = [r for r in kept if r["default"]][0]["ns"]
        same(z["config_runtime"], np.array([r["ns"] for r in kept], np.int64), path + " runtime")
        same(z["config_runtime_normalizers"], np.full(len(kept), default, np.int64),
             path + " normalizers")
        same(z["config_feat"], np.array([H.tile_config(r["raw"]) for r in kept], np.float32),
             path + " config_feat")
    expect(total_runs == 754 and total_kept == 752, "runs %d kept %d" % (total_runs, total_kept))

    # By hand, kernel 0 (fusion.232): computations region_0.169 (3 instructions),
    # fused_computation.17.clone (14), fusion.232 (3) -> 20 nodes.
    z = load(files[0])
    f = z["node_feat"]
    expect(f.shape == (20, 140), "fusion.232 node_feat %s" % (f.shape,))
    # node 4 = broadcast.556: u32[32,26,26,192]{3,0,2,1}
    same(f[4, 2:21], np.eye(19, dtype=np.float32)[8], "broadcast.556 element type (U32 one-hot)")
    same(f[4, 21:29], np.array([32, 26, 26, 192, 0, 0, 276, 4153344], np.float32),
         "broadcast.556 shape dims 6+sum+product")
    same(f[4, 134:140], np.array([3, 0, 2, 1, 0, 0], np.float32), "broadcast.556 minor_to_major")
    # roots: add.172 (2), reduce.100 (16), fusion.232 (19); reduce.100 reduces dims {0,1,2}
    same(np.flatnonzero(f[:, 0]), np.array([2, 16, 19]), "fusion.232 root flags")
    same(f[16, 31:37], np.array([0, 1, 2, 0, 0, 0], np.float32), "reduce.100 dimensions")
    same(np.flatnonzero(f[:, 30]), np.array([1, 7, 18]), "parameter_number 1 nodes")
    same(f[16, 21:29], np.array([192, 0, 0, 0, 0, 0, 192, 192], np.float32), "reduce.100 dims")
    same(f[3, 21:29], np.array([0, 0, 0, 0, 0, 0, 0, 1], np.float32), "scalar constant dims")
    # reduce.100 uses select.206 (14), constant.578 (15) and calls region_0.169 (root 2);
    # fusion.232 uses its two parameters and calls the fused computation (root 16).
    e = z["edge_index"]
    same(e[e[:, 0] == 16], np.array([[16, 2], [16, 14], [16, 15]]), "reduce.100 edges")
    same(e[e[:, 0] == 19], np.array([[19, 16], [19, 17], [19, 18]]), "fusion.232 edges")
    # default run: output_bounds [2,26,4,2], no kernel/input bounds (product of none = 0)
    same(z["config_feat"][0], np.array([0] * 8 + [2, 26, 4, 2, 0, 0, 34, 416] + [0] * 8,
                                       np.float32), "fusion.232 default config_feat")
    same(z["config_runtime"][:3], np.array([57188, 126955, 138284]), "fusion.232 runtimes")

    p = run("check", *files)
    expect_rc(p, 0, "check tile imports")
    p = run("info", files[1])
    expect_rc(p, 0, "info tile import")
    expect("graph: tile, 31 nodes" in p.stdout, "info: " + p.stdout[-300:])


def test_layout(opcodes):
    out = os.path.join(TMP, "layout")
    p = run("import", LAYOUT, "--out", out, "--kind", "layout", "--compress")
    expect_rc(p, 0, "import module_tuning_data_layout.pb")
    expect("ModuleTuningData, 1 module (layout): 1 written, 0 skipped" in p.stdout, p.stdout)
    expect("122 in the file, 112 kept (1 default); dropped: 10 with an error" in p.stdout, p.stdout)
    path = os.path.join(out, "module_tuning_data_layout.npz")
    expect(sorted(os.listdir(out)) == ["module_tuning_data_layout.npz"], os.listdir(out))
    z = load(path)
    check_dtypes(z, "layout", path)

    mtd = H.read_tuning(open(LAYOUT, "rb").read())[0]
    mod = H.decode(mtd[1][0])
    expect(len(mod[3]) == 143, "computations %d" % len(mod[3]))
    feat, ops, edges, splits = H.featurize(mtd[1][0], opcodes)
    expect(feat.shape[0] == 3163, "instructions %d" % feat.shape[0])
    same(z["node_feat"], feat, "layout node_feat")
    same(z["node_opcode"], ops, "layout node_opcode")
    same(z["edge_index"], edges, "layout edge_index")
    same(z["node_splits"], splits.reshape(1, -1), "layout node_splits")
    ids = np.array(H.ints(mtd, 4), np.int64)
    expect(len(ids) == 62, "config nodes %d" % len(ids))
    same(z["node_config_ids"], ids, "node_config_ids")
    # configurable nodes are convolutions (26) and reshapes (75) here
    expect(set(z["node_opcode"][ids].tolist()) <= {26, 34, 75},
           "config node opcodes %s" % set(z["node_opcode"][ids].tolist()))
    runs = H.runs_of(mtd)
    expect(len(runs) == 122 and sum(r["error"] for r in runs) == 10
           and sum(r["default"] for r in runs) == 1, "reference run counts")
    kept = [r for r in runs if r["layout"] and not r["error"] and r["profile"] and r["ns"] > 0]
    expect(len(kept) == 112, "kept %d" % len(kept))
    same(z["config_runtime"], np.array([r["ns"] for r in kept], np.int64), "layout runtimes")
    same(z["node_config_feat"], np.array([H.layout_config(r["raw"], 62) for r in kept],
                                         np.float32), "node_config_feat")
    # By hand: the default run (the first) leaves nodes 0-3 to the compiler (no tensors:
    # all -1); node 4 sets three tensors of two dims each.
    expect(kept[0]["default"], "first kept run is not the default")
    expect((z["node_config_feat"][0, :4] == -1).all(), "default run nodes 0-3 not all -1")
    same(z["node_config_feat"][0, 4], np.array([4, 0, -1, -1, -1, -1, 4, 0, -1, -1, -1, -1,
                                                4, 3, -1, -1, -1, -1], np.float32),
         "default run node 4")
    expect(z["node_config_feat"].min() == -1 and z["node_config_feat"].max() <= 5,
           "layout values outside -1..5")
    expect(z["config_runtime"][0] == 910903932, "default runtime %d" % z["config_runtime"][0])

    p = run("check", path)
    expect_rc(p, 0, "check layout import")
    p = run("info", path)
    expect("graph: layout, 3163 nodes" in p.stdout and "62 configurable nodes" in p.stdout,
           "info: " + p.stdout[-400:])


def expect_fails(path, what, out):
    p = run("import", path, "--out", out)
    expect_rc(p, 1, what)
    expect("error:" in p.stderr and path in p.stderr, "%s: message %r" % (what, p.stderr))
    expect(not os.path.exists(out), "%s: left %s behind" % (what, out))
    return p


def test_corrupt():
    bad = os.path.join(TMP, "bad")
    os.makedirs(bad)
    tile = open(TILE, "rb").read()
    layout = open(LAYOUT, "rb").read()
    # Truncations inside a field (a cut at a module boundary would be a valid, shorter file).
    for name, data, cuts in (("tile", tile, (1, 7, 1000, len(tile) // 2, len(tile) - 1)),
                             ("layout", layout, (2, 5000, len(layout) // 3, len(layout) - 3))):
        for n in cuts:
            path = os.path.join(bad, "%s_cut%d.pb" % (name, n))
            open(path, "wb").write(data[:n])
            p = expect_fails(path, "%s truncated to %d bytes" % (name, n),
                             os.path.join(bad, "out_%s_%d" % (name, n)))
            expect("not a valid tuning protobuf, truncated or corrupt" in p.stderr, p.stderr)
    # Bit flips that must break the file: the first key's wire type (-> group), and the
    # first length's top bit (the length then runs past the end).
    for what, pos, bit in (("wire type", 0, 0x01), ("length", 1, 0x80)):
        for name, data in (("tile", tile), ("layout", layout)):
            d = bytearray(data)
            d[pos] ^= bit
            if bit == 0x80:
                d[pos] |= 0x80
                d[pos + 1:pos + 4] = b"\xff\xff\x7f"
            path = os.path.join(bad, "%s_flip_%s.pb" % (name, what.replace(" ", "_")))
            open(path, "wb").write(bytes(d))
            expect_fails(path, "%s with a flipped %s" % (name, what),
                         os.path.join(bad, "out_flip"))
    # Random flips: exit 0 (still valid, e.g. a name byte) with files that pass check, or
    # exit 1 with a message and no files; never a crash.
    rnd = random.Random(5)
    for k in range(24):
        name, data = (("tile", tile), ("layout", layout))[k % 2]
        d = bytearray(data)
        for _ in range(1 + k % 3):
            d[rnd.randrange(len(d))] ^= 1 << rnd.randrange(8)
        path = os.path.join(bad, "rnd%d.pb" % k)
        open(path, "wb").write(bytes(d))
        out = os.path.join(bad, "out_rnd%d" % k)
        p = run("import", path, "--out", out, "--quiet")
        expect(p.returncode in (0, 1), "random flip %d: exit %d: %s" % (k, p.returncode, p.stderr))
        if p.returncode == 1:
            expect("error:" in p.stderr and not os.path.exists(out),
                   "random flip %d: %r" % (k, p.stderr))
        elif p.returncode == 0:
            files = glob.glob(os.path.join(out, "*.npz"))
            q = run("check", *files)
            expect_rc(q, 0, "check after random flip %d" % k)
    # Asking for the other kind fails before anything is written.
    out = os.path.join(bad, "out_kind")
    p = run("import", TILE, "--out", out, "--kind", "layout")
    expect_rc(p, 1, "--kind layout on tile data")
    expect("holds tile runs, but layout was asked for" in p.stderr, p.stderr)
    expect(not os.path.exists(out), "--kind mismatch left output")


def main():
    if not (os.path.isfile(TILE) and os.path.isfile(LAYOUT)):
        print("SKIP: fixtures not found in %s" % RAW)
        return 77
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    opcodes = H.opcode_table(ROOT)
    expect(len(opcodes) == 120 and opcodes["tan"] == 120 and opcodes["dot"] == 34,
           "opcode table %d" % len(opcodes))
    test_tile(opcodes)
    test_layout(opcodes)
    test_corrupt()
    if FAILS:
        for f in FAILS:
            print("FAIL:", f)
        return 1
    shutil.rmtree(TMP, ignore_errors=True)
    print("import fixtures: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
