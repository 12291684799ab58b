#!/usr/bin/env python3
"""Writes the seed corpus of the hlo_proto fuzz target (fuzz/corpus/hlo_proto/).

Small tuning protos built from scratch with tests/scripts/hloproto.py (no
bytes are copied from ../shared): a TuningData of tile kernels, a
ModuleTuningData with layout runs, a bare HloModuleProto, modules with every
feature group set, each with a few truncations, plus files that break the id
and call-graph rules. Deterministic; run it again after changing hloproto.py:

    python3 tests/data/make_hlo_proto_corpus.py
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
import hloproto as H  # noqa: E402
from hloproto import comp, inst, module, msg  # noqa: E402

OUT = os.path.join(HERE, "..", "..", "fuzz", "corpus", "hlo_proto")
F32 = 11


def rich_module():
    add = comp("scalar_add", 1, 3, [inst("a", "parameter", 1, F32),
                                    inst("b", "parameter", 2, F32, extra=[(9, 1)]),
                                    inst("s", "add", 3, F32, operands=[1, 2])])
    window = msg((1, msg((1, 3), (2, 2), (3, 1), (4, 1), (5, 1), (6, 1), (7, 1))))
    conv_dims = msg((7, 0), (8, 3), (11, [1, 2]), (3, 2), (4, 3), (6, [0, 1]), (9, 0), (10, 3))
    main = comp("while_cluster", 2, 19, [
        inst("x", "parameter", 10, F32, [8, 16, 16, 3], layout=[3, 2, 1, 0]),
        inst("w", "parameter", 11, F32, [3, 3, 3, 4], extra=[(9, 1)]),
        inst("c", "convolution", 12, F32, [8, 8, 16, 4], operands=[10, 11],
             extra=[(15, window), (16, conv_dims), (50, 1), (58, 1)]),
        inst("sl", "slice", 13, F32, [8, 4, 16, 4], operands=[12],
             extra=[(17, msg((1, 0), (2, 8), (3, 2)))]),
        inst("z", "constant", 14, F32),
        inst("p", "pad", 15, F32, [8, 6, 16, 4], operands=[13, 14],
             extra=[(21, msg((1, msg((1, 1), (2, -1)))))]),
        inst("d", "dynamic-slice", 16, F32, [2, 2, 2, 2], operands=[15, 14],
             extra=[(20, [2, 2, 2, 2])]),
        inst("r", "reduce", 17, F32, [2], operands=[16, 14], calls=[1], extra=[(14, [1, 2, 3])]),
        inst("s", "sort", 18, F32, [2], operands=[17], calls=[1], extra=[(60, 1)]),
        inst("u", "some-new-op", 19, 21, [2], operands=[18, 18]),
    ])
    return module("rich", [add, main], 2)


def small(name, n=3):
    insts = [inst("p", "parameter", 1, F32, [4])]
    for i in range(2, n + 1):
        insts.append(inst("n%d" % i, "negate", i, F32, [4], operands=[i - 1]))
    return module(name, [comp("entry", 1, n, insts)], 1)


def tile_file():
    runs = [H.tile_run(900, output=[2, 4], default=True), H.tile_run(700, kernel=[1, 2, 3]),
            H.tile_run(0, error=True, profile=False), H.tile_run(1, output=[1])]
    return H.tuning_data([H.module_tuning(rich_module(), runs, fingerprint=1),
                          H.module_tuning(small("k2"), runs[:2], fingerprint=2)])


def layout_file():
    runs = [H.layout_run(5000, [[], []], default=True),
            H.layout_run(4000, [[[1, 0], [0, 1], [1, 0]], [[0]]]),
            H.layout_run(0, [[], []], error=True, profile=False)]
    return H.module_tuning(rich_module(), runs, config_nodes=[5, 7], fingerprint=3)


def main():
    os.makedirs(OUT, exist_ok=True)
    files = {
        "tile.pb": tile_file(),
        "layout.pb": layout_file(),
        "bare_module.pb": rich_module(),
        "small_tile.pb": H.tuning_data([H.module_tuning(small("k"), [
            H.tile_run(10, output=[1], default=True), H.tile_run(20, output=[2])])]),
        "bad_operand.pb": H.module_tuning(module("m", [comp("e", 1, 2, [
            inst("p", "parameter", 1, F32), inst("n", "negate", 2, F32, operands=[9])])], 1),
            [H.layout_run(5, [[]], default=True)], config_nodes=[1]),
        "bad_cycle.pb": H.module_tuning(module("m", [
            comp("a", 1, 11, [inst("x", "call", 11, F32, calls=[2])]),
            comp("b", 2, 21, [inst("y", "call", 21, F32, calls=[1])])], 2),
            [H.layout_run(5, [[]], default=True)], config_nodes=[0]),
        "bad_config_node.pb": H.module_tuning(small("m"), [H.layout_run(5, [[]], default=True)],
                                              config_nodes=[7]),
        "four_tensors.pb": H.module_tuning(small("m"), [
            H.layout_run(5, [[[0], [0], [0], [0]]], default=True)], config_nodes=[1]),
    }
    for name, data in sorted(files.items()):
        assert len(data) < 20000, name
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    for name in ("tile.pb", "layout.pb"):
        data = files[name]
        for cut in (len(data) // 3, len(data) // 2, len(data) - 1):
            with open(os.path.join(OUT, "%s_cut%d.pb" % (name[:-3], cut)), "wb") as f:
                f.write(data[:cut])
    print("wrote %d files to %s" % (len(os.listdir(OUT)), os.path.normpath(OUT)))


if __name__ == "__main__":
    main()
