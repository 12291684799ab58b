#!/usr/bin/env python3
"""`perfcast import` on small tuning protos built here (tests/scripts/hloproto.py).

One HLO module exercises every feature group of tpugraphs.md 6.3: a
convolution with a window (reversal included) and dimension numbers, a slice,
a pad with a negative edge, a dynamic-slice, a reduce and a sort calling a
computation, a while calling its condition and body, a tuple-shaped
parameter, duplicated operands, a layout, and an unknown opcode. It is
imported as tile data (a TuningData of three modules: one kept, one with a
single run and one without a default run, both skipped) and as layout data
(a ModuleTuningData with two configurable nodes). The arrays are checked
against numbers worked out by hand and against the independent featurizer
in hloproto.py; the run filtering (errors, missing profiles, <= 1 ns) and
the report lines are checked too.

Then every way a file can be wrong: unknown operand / called computation,
a cycle of calls, duplicate ids, a self operand, a called computation
without its root, configurable node ids out of range or repeated, layout
configs of the wrong size or with four tensors, no default run, mixed run
kinds, a bare HloModuleProto, garbage, the wrong --kind: exit 1, a message
naming the file and the problem, and no output. Usage errors exit 2.

Environment (tests/CMakeLists.txt): PERFCAST, PC_TEST_TMP.
Exit 0 pass, 1 fail, 77 skip (numpy missing).
"""
import os
import shutil
import sys

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy missing")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hloproto as H  # noqa: E402
from hloproto import comp, inst, module, msg  # noqa: E402
from clitest import FAILS, expect, expect_rc, run  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_import")
F32, S32, PRED, TUPLE = 11, 4, 1, 13


def window(*dims):
    """dims: (size, stride, pad_low, pad_high, window_dilation, base_dilation, reversal)."""
    return msg(*[(1, msg((1, s), (2, st), (3, lo), (4, hi), (5, wd), (6, bd), (7, 1 if r else None)))
                 for s, st, lo, hi, wd, bd, r in dims])


def big_module():
    """Node indices: scalar_add 0-2, while_body.1 3-5, while_cond.1 6-7, cluster_main 8-19."""
    scalar_add = comp("scalar_add", 1, 103, [
        inst("a", "parameter", 101, F32),
        inst("b", "parameter", 102, F32, extra=[(9, 1)]),
        inst("add", "add", 103, F32, operands=[101, 102]),
    ])
    body = comp("while_body.1", 2, 203, [
        msg((1, "p"), (2, "parameter"), (3, H.shape(TUPLE, tuples=2)), (35, 201)),
        inst("gte", "get-tuple-element", 202, F32, operands=[201]),
        inst("tuple", "tuple", 203, TUPLE, operands=[202, 202]),
    ])
    cond = comp("while_cond.1", 3, 302, [
        inst("p", "parameter", 301, TUPLE),
        inst("c", "constant", 302, PRED),
    ])
    conv_dims = msg((7, 0), (8, 3), (11, [1, 2]), (3, 2), (4, 3), (6, [0, 1]), (9, 0), (10, 3),
                    (12, [1, 2]))
    slices = [(17, msg((1, s), (2, l), (3, st))) for s, l, st in
              ((0, 8, 1), (0, 16, 2), (0, 16, 2), (0, 4, 1))]
    padding = msg(*[(1, msg((1, lo), (2, hi))) for lo, hi in ((0, 0), (1, -1), (1, 2), (0, 0))])
    main = comp("cluster_main", 4, 412, [
        inst("x", "parameter", 401, F32, [8, 16, 16, 3], layout=[3, 2, 1, 0]),
        inst("w", "parameter", 402, F32, [3, 3, 3, 4], extra=[(9, 1)]),
        inst("conv", "convolution", 403, F32, [8, 16, 16, 4], operands=[401, 402],
             extra=[(15, window((3, 1, 1, 1, 1, 1, False), (3, 2, 0, 2, 1, 1, True))),
                    (16, conv_dims), (50, 1), (58, 1)]),
        inst("slice", "slice", 404, F32, [8, 8, 8, 4], operands=[403], extra=slices),
        inst("zero", "constant", 405, F32),
        inst("pad", "pad", 406, F32, [8, 8, 11, 4], operands=[404, 405], extra=[(21, padding)]),
        inst("ds", "dynamic-slice", 407, F32, [4, 5, 5, 4], operands=[406, 408, 408, 408, 408],
             extra=[(20, [4, 5, 5, 4])]),
        inst("i", "constant", 408, S32),
        inst("red", "reduce", 409, F32, [4, 4], operands=[407, 405], calls=[1],
             extra=[(14, [1, 2])]),
        inst("loop", "while", 410, TUPLE, operands=[409], calls=[3, 2]),
        inst("sort", "sort", 411, F32, [4, 4], operands=[409], calls=[1],
             extra=[(14, [1]), (60, 1)]),
        inst("mine", "my-custom-op", 412, F32, [4, 4], operands=[411]),
    ])
    return module("big", [scalar_add, body, cond, main], 4)


def small_module(name):
    return module(name, [comp("entry", 1, 2, [inst("p", "parameter", 1, F32, [4]),
                                              inst("n", "negate", 2, F32, [4], operands=[1])])], 1)


def write(name, data):
    path = os.path.join(TMP, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def load(path):
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def close(a, b, what):
    a, b = np.asarray(a), np.asarray(b)
    expect(a.shape == b.shape and np.array_equal(a, b), "%s: got %s, expected %s" %
           (what, a.tolist(), b.tolist()))


def check_features(f, opcodes, mod):
    feat, ops, edges, splits = H.featurize(mod, opcodes)
    close(f["node_feat"], feat, "node_feat vs reference")
    close(f["node_opcode"], ops, "node_opcode vs reference")
    close(f["edge_index"], edges, "edge_index vs reference")
    x = f["node_feat"]
    expect(x.shape == (20, 140), "shape %s" % (x.shape,))
    close(np.flatnonzero(x[:, 0]), [2, 5, 7, 19], "root flags")
    # convolution (node 10): f32 one-hot, dims, window (6+sum+product each), reversal, conv dims
    close(x[10, 2:21], np.eye(19)[11], "conv element type")
    close(x[10, 21:29], [8, 16, 16, 4, 0, 0, 44, 8192], "conv dims")
    close(x[10, 37:45], [3, 3, 0, 0, 0, 0, 6, 9], "window size")
    close(x[10, 45:53], [1, 2, 0, 0, 0, 0, 3, 2], "window stride")
    close(x[10, 53:61], [1, 0, 0, 0, 0, 0, 1, 0], "window padding_low")
    close(x[10, 61:69], [1, 2, 0, 0, 0, 0, 3, 2], "window padding_high")
    close(x[10, 69:85], [1, 1, 0, 0, 0, 0, 2, 1] * 2, "window dilations")
    close(x[10, 85:93], [0, 1, 0, 0, 0, 0, 1, 1], "window reversal")
    close(x[10, 93:107], [0, 3, 1, 2, 0, 0, 2, 3, 0, 1, 0, 0, 0, 3], "conv dimension numbers")
    close(x[10, 107:109], [1, 1], "group counts")
    close(x[10, 109:133], [0, 0, 0, 1] * 6, "no slice / dynamic slice / padding: product 1")
    close(x[11, 109:121], [0, 0, 0, 0, 1, 2, 6, 4, 8, 16, 44, 8192], "slice start/stride/limit")
    close(x[14, 121:125], [4, 5, 18, 400], "dynamic_slice_sizes")
    close(x[13, 125:133], [0, 1, 2, 0, 0, -1, 1, 0], "padding low/high (negative edge)")
    close(x[18, [31, 133]], [1, 1], "sort dimensions and is_stable")
    close(x[16, 31:37], [1, 2, 0, 0, 0, 0], "reduce dimensions")
    close(x[8, 134:140], [3, 2, 1, 0, 0, 0], "layout minor_to_major")
    close(x[[1, 9], 30], [1, 1], "parameter_number")
    close(x[3, [18, 29]], [1, 2], "tuple parameter: TUPLE one-hot, 2 tuple shapes")
    close(x[7, 3], 1, "PRED one-hot")
    close(f["node_opcode"][[10, 16, 17, 19]], [26, 70, 102, 0], "opcodes (unknown -> 0)")
    e = f["edge_index"]
    close(e[e[:, 0] == 5], [[5, 4]], "duplicate operands: one edge")
    close(e[e[:, 0] == 16], [[16, 2], [16, 12], [16, 14]], "reduce: operands + callee root")
    close(e[e[:, 0] == 17], [[17, 5], [17, 7], [17, 16]], "while: body and cond roots")
    close(e[e[:, 0] == 14], [[14, 13], [14, 15]], "dynamic-slice: repeated index operand")
    return splits


def test_tile(opcodes):
    mod = big_module()
    runs = [H.tile_run(1000, output=[1, 2, 3, 4, 5, 6, 7], inp=[2], default=True),
            H.tile_run(0, kernel=[1], error=True, profile=False),
            H.tile_run(1, kernel=[1]),
            H.tile_run(0, kernel=[1], profile=False),
            H.tile_run(2000, kernel=[3, 4])]
    data = H.tuning_data([
        H.module_tuning(mod, runs, fingerprint=7),
        H.module_tuning(small_module("single"), [H.tile_run(5, output=[1], default=True)]),
        H.module_tuning(small_module("nodefault"), [H.tile_run(5, output=[1]),
                                                    H.tile_run(6, output=[2])]),
    ])
    path = write("kernels.pb", data)
    out = os.path.join(TMP, "tile")
    p = run("import", path, "--out", out)
    expect_rc(p, 0, "import synthetic tile")
    expect("TuningData, 3 modules (tile): 1 written, 2 skipped" in p.stdout, p.stdout)
    expect("8 in the file, 2 kept (1 default); dropped: 1 with an error, 1 without a profile, "
           "1 with a runtime <= 1 ns" in p.stdout, p.stdout)
    expect("20 nodes, 20 edges, 1 instructions with an unknown opcode" in p.stdout, p.stdout)
    expect("skipped module 1 ('single'): only 1 run" in p.stderr, p.stderr)
    expect("skipped module 2 ('nodefault'): no default run" in p.stderr, p.stderr)
    files = sorted(os.listdir(out))
    expect(files == ["kernels_000_big.npz"], files)
    z = load(os.path.join(out, "kernels_000_big.npz"))
    expect(sorted(z) == sorted(["node_feat", "node_opcode", "edge_index", "config_feat",
                                "config_runtime", "config_runtime_normalizers"]), sorted(z))
    check_features(z, opcodes, mod)
    close(z["config_runtime"], [1000, 2000], "tile runtimes")
    close(z["config_runtime_normalizers"], [1000, 1000], "tile normalizers")
    # kernel/output/input bounds, 6+sum+product each, the product of none is 0
    close(z["config_feat"], [[0] * 8 + [1, 2, 3, 4, 5, 6, 28, 5040] + [2, 0, 0, 0, 0, 0, 2, 2],
                             [3, 4, 0, 0, 0, 0, 7, 12] + [0] * 16], "config_feat")
    expect(z["config_feat"].dtype == np.float32 and z["edge_index"].dtype == np.int64
           and z["node_opcode"].dtype == np.uint8, "dtypes")
    p = run("check", os.path.join(out, "kernels_000_big.npz"))
    expect_rc(p, 0, "check synthetic tile")


def test_layout(opcodes):
    mod = big_module()
    runs = [H.layout_run(5000, [[], []], default=True),
            H.layout_run(4000, [[[3, 2, 1, 0], [0, 1, 2, 3], [1, 0, 2, 3]], [[1, 0]]]),
            H.layout_run(0, [[], []], error=True, profile=False),
            H.layout_run(0, [[], []]),
            H.layout_run(4500, [[[0, 1, 2, 3, 4, 5, 6]], [[], [2, 1, 0]]])]
    path = write("program.pb", H.module_tuning(mod, runs, config_nodes=[10, 13], fingerprint=9))
    out = os.path.join(TMP, "layout")
    p = run("import", path, "--out", out, "--compress")
    expect_rc(p, 0, "import synthetic layout")
    expect("ModuleTuningData, 1 module (layout): 1 written" in p.stdout, p.stdout)
    expect("5 in the file, 3 kept (1 default); dropped: 1 with an error, 0 without a profile, "
           "1 with a runtime <= 0 ns" in p.stdout, p.stdout)
    z = load(os.path.join(out, "program.npz"))
    splits = check_features(z, opcodes, mod)
    close(z["node_splits"], [[0, 6, 8, 20]], "node_splits (while, cond, cluster)")
    close(splits, [0, 6, 8, 20], "reference node_splits")
    close(z["node_config_ids"], [10, 13], "node_config_ids")
    close(z["config_runtime"], [5000, 4000, 4500], "layout runtimes")
    m = -1
    close(z["node_config_feat"], [
        [[m] * 18, [m] * 18],
        [[3, 2, 1, 0, m, m, 0, 1, 2, 3, m, m, 1, 0, 2, 3, m, m], [1, 0] + [m] * 16],
        [[0, 1, 2, 3, 4, 5] + [m] * 12, [m] * 6 + [2, 1, 0, m, m, m] + [m] * 6],
    ], "node_config_feat")
    p = run("check", os.path.join(out, "program.npz"))
    expect_rc(p, 0, "check synthetic layout")
    p = run("info", os.path.join(out, "program.npz"))
    expect("2 configurable nodes" in p.stdout, p.stdout[-300:])


def test_bad():
    f = lambda *i: comp("entry", 1, i[-1][0], [inst(n, op, iid, F32, operands=ops, calls=calls)
                                               for iid, n, op, ops, calls in i])
    def layout(mod, nodes=(0,), runs=None):
        if runs is None:
            runs = [H.layout_run(5, [[]] * len(nodes), default=True)]
        return H.module_tuning(mod, runs, config_nodes=list(nodes))

    callee = comp("callee", 2, 21, [inst("q", "parameter", 21, F32)])
    cases = [
        ("missing operand", layout(module("m", [f((1, "p", "parameter", [], []),
                                                  (2, "n", "negate", [999], []))], 1)),
         "operand id 999, which is not an instruction of the module"),
        ("missing callee", layout(module("m", [f((1, "p", "parameter", [], []),
                                                 (2, "c", "call", [1], [77]))], 1)),
         "calls computation id 77, which is not in the module"),
        ("call cycle", layout(module("m", [
            comp("a", 1, 11, [inst("x", "call", 11, F32, calls=[2])]),
            comp("b", 2, 21, [inst("y", "call", 21, F32, calls=[1])])], 2)),
         "a cycle in called_computation_ids"),
        ("duplicate instruction id", layout(module("m", [f((1, "p", "parameter", [], []),
                                                           (1, "n", "negate", [], []))], 1)),
         "has id 1, already used"),
        ("duplicate computation id", layout(module("m", [callee, comp("e", 2, 1, [
            inst("p", "parameter", 1, F32)])], 2)), "id 2 is used twice"),
        ("self operand", layout(module("m", [f((1, "p", "parameter", [], []),
                                               (2, "n", "negate", [2], []))], 1)),
         "is its own operand"),
        ("callee without root", layout(module("m", [
            comp("callee", 2, 99, [inst("q", "parameter", 21, F32)]),
            f((1, "p", "parameter", [], []), (2, "c", "call", [1], [2]))], 1)),
         "has no root instruction"),
        ("config node out of range", layout(small_module("m"), nodes=[0, 5]),
         "config_index_to_node[1] = 5 is not a node index"),
        ("config node repeated", layout(small_module("m"), nodes=[1, 1]),
         "config_index_to_node[1] = 1 is listed twice"),
        ("layout config size", layout(small_module("m"), nodes=[1, 0],
                                      runs=[H.layout_run(5, [[]], default=True)]),
         "its layout config has 1 nodes, config_index_to_node has 2"),
        ("four tensors", layout(small_module("m"), runs=[
            H.layout_run(5, [[[0], [0], [0], [0]]], default=True)]), "has 4 tensors (at most 3"),
        ("no default", layout(small_module("m"), runs=[H.layout_run(5, [[]])]),
         "no module left to import"),
        ("mixed runs", H.module_tuning(small_module("m"), [H.tile_run(5, default=True),
                                                           H.layout_run(5, [[]])], [0]),
         "mixes 1 tile and 1 layout runs"),
        ("bare module", big_module(), "a bare HloModuleProto without tuning runs"),
        ("garbage", b"\xff" * 12, "not a valid tuning protobuf"),
        ("group wire type", b"\x0b\x0c", "not a valid tuning protobuf"),
        ("empty", b"", "empty file"),
    ]
    for name, data, want in cases:
        path = write(name.replace(" ", "_") + ".pb", data)
        out = os.path.join(TMP, "bad_out")
        p = run("import", path, "--out", out)
        expect_rc(p, 1, name)
        expect(want in p.stderr and path in p.stderr, "%s: message %r, expected %r" %
               (name, p.stderr, want))
        expect(not os.path.exists(out), "%s: output left behind" % name)

    # the wrong kind, and a missing file
    path = write("layout_kind.pb", layout(small_module("m"), nodes=[1]))
    p = run("import", path, "--out", os.path.join(TMP, "o"), "--kind", "tile")
    expect_rc(p, 1, "--kind tile on layout data")
    expect("holds layout runs, but tile was asked for" in p.stderr, p.stderr)
    p = run("import", os.path.join(TMP, "missing.pb"), "--out", os.path.join(TMP, "o"))
    expect_rc(p, 1, "missing file")
    expect(not os.path.exists(os.path.join(TMP, "o")), "output after failures")

    # usage
    for args in (("import",), ("import", path), ("import", path, path, "--out", "x"),
                 ("import", path, "--out", "x", "--kind", "tiles"), ("import", "--bogus")):
        p = run(*args)
        expect_rc(p, 2, " ".join(args))
    p = run("import", "--help")
    expect_rc(p, 0, "import --help")
    expect("--kind" in p.stdout and "ModuleTuningData" in p.stdout, p.stdout)
    p = run("--help")
    expect(" import " in p.stdout, "import missing from perfcast --help")


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    opcodes = H.opcode_table(ROOT)
    test_tile(opcodes)
    test_layout(opcodes)
    test_bad()
    if FAILS:
        for f in FAILS:
            print("FAIL:", f)
        return 1
    shutil.rmtree(TMP, ignore_errors=True)
    print("import: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
