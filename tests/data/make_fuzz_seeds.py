#!/usr/bin/env python3
"""Regenerates the fuzz seed corpora fuzz/corpus/{npy_header,npz,graph}/.

    python3 tests/data/make_fuzz_seeds.py [REPO_ROOT]

Seeds are small valid (and a few nearly valid) inputs covering every dtype,
byte order, memory order, header version, stored and deflated members and
the ZIP64 records. The must-fail files in tests/data/bad/ are replayed and
used as seeds too (fuzz/run.sh, tests/scripts/test_fuzz_replay.sh), so they
are not copied here. Uses numpy, when importable, for a few archives written
by numpy itself (their timestamps make those bytes differ run to run).

The graph seeds (small tile and layout graphs, valid and broken) need numpy:
their arrays are written with numpy's .npy writer and zipped here, stored
or deflated, so those bytes are reproducible. Without numpy, fuzz/corpus/graph/
is left as it is.
"""
import io
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import make_bad_files as mb  # noqa: E402

DTYPES = [  # (descr, element size)
    ("'|b1'", 1), ("'|u1'", 1), ("'|i1'", 1), ("'<u2'", 2), ("'>u2'", 2), ("'<i2'", 2),
    ("'<u4'", 4), ("'<i4'", 4), ("'>i4'", 4), ("'<u8'", 8), ("'<i8'", 8), ("'>i8'", 8),
    ("'<f2'", 2), ("'>f2'", 2), ("'<f4'", 4), ("'>f4'", 4), ("'<f8'", 8), ("'>f8'", 8),
]


def payload(n):
    return bytes((i * 37 + 11) & 0xFF for i in range(n))


def shape_count(shape):
    c = 1
    for d in shape:
        c *= d
    return c


def shape_text(shape):
    if len(shape) == 1:
        return "(%d,)" % shape[0]
    return "(" + ", ".join(str(d) for d in shape) + ")"


def npy_seeds():
    seeds = {}
    for descr, size in DTYPES:
        tag = descr.strip("'").replace("<", "le_").replace(">", "be_").replace("|", "")
        for shape in [(3,), (2, 3)]:
            data = payload(shape_count(shape) * size)
            if descr == "'|b1'":
                data = bytes(b & 1 for b in data)
            name = "%s_%s.npy" % (tag, "x".join(map(str, shape)))
            seeds[name] = mb.npy(data, descr=descr, shape=shape_text(shape))
    seeds["f8_0d.npy"] = mb.npy(mb.f8(3.5), shape="()")
    seeds["f8_empty_0x5.npy"] = mb.npy(b"", shape="(0, 5)")
    seeds["i4_3d.npy"] = mb.npy(payload(24 * 4), descr="'<i4'", shape="(2, 3, 4)")
    seeds["u1_8d.npy"] = mb.npy(b"\x07", descr="'|u1'", shape="(1, 1, 1, 1, 1, 1, 1, 1)")
    seeds["f4_fortran.npy"] = mb.npy(payload(24), descr="'<f4'", fortran="True", shape="(2, 3)")
    seeds["i8_fortran_be.npy"] = mb.npy(payload(48), descr="'>i8'", fortran="True", shape="(3, 2)")
    seeds["f8_v2.npy"] = mb.npy(mb.f8(1, 2), version=(2, 0))
    seeds["f8_v3.npy"] = mb.npy(mb.f8(1, 2), version=(3, 0))
    seeds["f8_trailing_comma_shape.npy"] = mb.npy(mb.f8(*range(6)), shape="(2,3,)")
    seeds["f8_no_spaces.npy"] = mb.npy(
        mb.f8(1, 2), dict_text="{'descr':'<f8','fortran_order':False,'shape':(2,)}")
    seeds["f8_key_order.npy"] = mb.npy(
        mb.f8(1, 2), dict_text="{'shape': (2,), 'fortran_order': False, 'descr': '<f8'}")
    seeds["f8_double_quotes.npy"] = mb.npy(
        mb.f8(1, 2), dict_text='{"descr": "<f8", "fortran_order": False, "shape": (2,), }')
    seeds["f8_unpadded.npy"] = mb.npy(mb.f8(1, 2), pad=False)
    seeds["f8_long_header.npy"] = mb.npy(
        mb.f8(1, 2), dict_text="{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }"
        + " " * 300)
    # near misses
    seeds["near_dtype_c8.npy"] = mb.npy(payload(16), descr="'<c8'")
    seeds["near_shape_overflow.npy"] = mb.npy(b"", shape="(4294967296, 4294967296, 16)")
    seeds["near_negative.npy"] = mb.npy(b"", shape="(-1,)")
    seeds["near_9d.npy"] = mb.npy(b"", shape="(1, 1, 1, 1, 1, 1, 1, 1, 1)")
    return seeds


def npz_seeds():
    seeds = {}
    members = [
        mb.entry("f8.npy", mb.npy(mb.f8(1.5, -2.0, 3.25), shape="(3,)")),
        mb.entry("i4.npy", mb.npy(payload(24), descr="'<i4'", shape="(2, 3)")),
        mb.entry("be.npy", mb.npy(payload(24), descr="'>i8'", shape="(3,)")),
        mb.entry("h.npy", mb.npy(payload(8), descr="'<f2'", shape="(2, 2)")),
        mb.entry("b.npy", mb.npy(bytes([1, 0, 1, 1]), descr="'|b1'", shape="(4,)")),
        mb.entry("F.npy", mb.npy(payload(24), descr="'<f4'", fortran="True", shape="(3, 2)")),
        mb.entry("s.npy", mb.npy(mb.f8(7.0), shape="()")),
        mb.entry("e.npy", mb.npy(b"", descr="'<u2'", shape="(0, 5)")),
    ]
    for method, mtag in [(0, "stored"), (8, "deflated")]:
        def m(e, **kw):
            return mb.entry(e["name"], e["payload"], method, **kw)

        seeds["mixed_%s.npz" % mtag] = mb.build_zip([m(e) for e in members])
        seeds["zip64_extra_%s.npz" % mtag] = mb.build_zip([m(e, zip64=True) for e in members[:3]])
        seeds["zip64_eocd_%s.npz" % mtag] = mb.build_zip([m(e) for e in members[:3]],
                                                         zip64_eocd=True)
        seeds["one_%s.npz" % mtag] = mb.build_zip([m(members[1])])
        seeds["rows_%s.npz" % mtag] = mb.build_zip(
            [mb.entry("r.npy", mb.npy(payload(64 * 12 * 4), descr="'<i4'", shape="(64, 12)"),
                      method)])
    seeds["empty_archive.npz"] = mb.build_zip([])
    seeds["with_comment.npz"] = mb.build_zip(members[:2], comment=b"a zip comment")
    seeds["non_npy_member.npz"] = mb.build_zip(
        [mb.entry("readme.txt", b"hello\n")] + members[:2])
    seeds["dir_entry.npz"] = mb.build_zip([mb.entry("sub/", b"")] + members[:1])
    seeds["nested_key.npz"] = mb.build_zip([mb.entry("sub/x.npy", members[0]["payload"])])
    seeds["near_crc.npz"] = mb.build_zip([mb.entry("x.npy", members[0]["payload"], crc=1)])
    seeds["near_size_lie.npz"] = mb.build_zip(
        [mb.entry("x.npy", members[0]["payload"], 8, usize=1 << 33, zip64=True)])
    # whole .npy files go through the npz target's single-file path
    seeds["single_f8.npy"] = mb.npy(mb.f8(1, 2, 3), shape="(3,)")
    seeds["single_be_fortran.npy"] = mb.npy(payload(48), descr="'>i8'", fortran="True",
                                            shape="(3, 2)")
    seeds["single_f2.npy"] = mb.npy(payload(12), descr="'<f2'", shape="(2, 3)")
    try:
        import numpy as np
    except ImportError:
        return seeds
    arrays = {
        "u1": np.arange(12, dtype=np.uint8).reshape(3, 4),
        "f4": np.linspace(0, 1, 6, dtype=np.float32),
        "i8be": np.arange(4, dtype=">i8"),
        "f2": np.array([0.5, -1.0, 65504.0], dtype=np.float16),
        "F": np.asfortranarray(np.arange(6, dtype=np.int16).reshape(2, 3)),
        "z": np.zeros((0, 3), dtype=np.float64),
        "b": np.array([True, False]),
    }
    for fn, tag in [(np.savez, "numpy_savez"), (np.savez_compressed, "numpy_savez_compressed")]:
        buf = io.BytesIO()
        fn(buf, **arrays)
        seeds[tag + ".npz"] = buf.getvalue()
        buf = io.BytesIO()
        fn(buf, np.arange(5, dtype=np.int32))  # positional: key arr_0
        seeds[tag + "_positional.npz"] = buf.getvalue()
    return seeds


# ---- graph seeds (fuzz/corpus/graph/) ---------------------------------------

def graph_seeds(np):
    """Small TpuGraphs-shaped archives: every integer width the loader widens,
    node_splits as (k,) and (1, k), float16/32/64 and Fortran-order configs,
    and graphs that load but fail validation, or fail to load."""

    def npy_bytes(a):
        buf = io.BytesIO()
        np.lib.format.write_array(buf, a, allow_pickle=False)
        return buf.getvalue()

    def archive(arrays, method):
        return mb.build_zip([mb.entry(k + ".npy", npy_bytes(v), method)
                             for k, v in arrays.items()])

    def feat(shape, dtype=np.float32):
        count = shape_count(shape)
        return ((np.arange(count) % 7) / 4.0 - 0.5).reshape(shape).astype(dtype)

    def tile(it, n=5, d=12, c=3):
        return {
            "node_feat": feat((n, d)),
            "node_opcode": (np.arange(n) * 37 % 120).astype(it),
            "edge_index": np.array([[i, i - 1] for i in range(1, n)], dtype=it),
            "config_feat": feat((c, 24)),
            "config_runtime": (np.arange(c) * 40 + 100).astype(it),
            "config_runtime_normalizers": np.full(c, 90, dtype=it),
        }

    def layout(it, n=6, d=12, c=4, splits_2d=False):
        ids = np.array([1, 3, 4], dtype=it)
        splits = np.array([0, 2, 4], dtype=it)
        return {
            "node_feat": feat((n, d)),
            "node_opcode": (np.arange(n) * 41 % 200).astype(it),
            "edge_index": np.array([[i, i - 1] for i in range(1, n)] + [[n - 1, 0]], dtype=it),
            "node_config_ids": ids,
            "node_config_feat": feat((c, len(ids), 18)),
            "node_splits": splits.reshape(1, -1) if splits_2d else splits,
            "config_runtime": (np.arange(c) * 30 + 120).astype(it),
        }

    seeds = {}
    ints = [("i64", np.int64), ("i32", np.int32), ("u8", np.uint8)]
    for method, mtag in [(0, "stored"), (8, "deflated")]:
        for tag, it in ints:
            seeds["tile_%s_%s.npz" % (tag, mtag)] = archive(tile(it), method)
            seeds["layout_%s_%s.npz" % (tag, mtag)] = archive(
                layout(it, splits_2d=(tag == "i32")), method)
        g = layout(np.int64)
        g["node_config_feat"] = g["node_config_feat"].astype(np.float64)
        seeds["layout_ncf_f64_%s.npz" % mtag] = archive(g, method)  # streamed via scratch
        g = layout(np.int64)
        g["node_config_feat"] = g["node_config_feat"].astype(np.float16)
        seeds["layout_ncf_f16_%s.npz" % mtag] = archive(g, method)
    # valid variants
    seeds["tile_feat140_deflated.npz"] = archive(tile(np.int64, n=4, d=140), 8)
    seeds["tile_one_node.npz"] = archive(tile(np.int64, n=1, c=1), 0)
    g = tile(np.int64, c=2)
    g["edge_index"] = np.zeros((0,), dtype=np.int64)  # saved from an empty list
    seeds["tile_edgeless.npz"] = archive(g, 0)
    g = tile(np.int16, c=2)
    g["config_runtime"][:] = 0
    g["config_runtime_normalizers"][:] = 0
    seeds["tile_zero_runtimes_test_split.npz"] = archive(g, 0)
    g = tile(np.uint16, c=2)
    g["node_feat"] = g["node_feat"].astype(np.float16)
    g["config_feat"] = g["config_feat"].astype(np.float64)
    g["extra"] = np.arange(3)  # unknown keys are ignored
    seeds["tile_f16_f64_extra_key.npz"] = archive(g, 8)
    g = layout(np.int64)
    del g["node_splits"]
    seeds["layout_no_splits.npz"] = archive(g, 0)
    g = layout(np.int32)
    g["node_config_feat"] = np.asfortranarray(g["node_config_feat"])
    seeds["layout_ncf_fortran.npz"] = archive(g, 0)  # cannot be streamed
    g = layout(np.int64, c=40)
    seeds["layout_many_configs_deflated.npz"] = archive(g, 8)
    g = layout(np.int64, c=1)
    g["edge_index"] = np.zeros((0,), dtype=np.int64)
    g["node_splits"] = np.zeros((1, 0), dtype=np.int64)
    seeds["layout_edgeless_empty_splits.npz"] = archive(g, 0)
    g = layout(np.int64, c=0)
    seeds["layout_no_configs.npz"] = archive(g, 0)  # loads, fails validation
    g = layout(np.int8)
    g["node_config_ids"] = np.zeros((0,), dtype=np.int8)
    g["node_config_feat"] = np.zeros((4, 0, 18), dtype=np.float32)
    seeds["layout_no_config_nodes.npz"] = archive(g, 0)
    # load, then fail validation
    g = tile(np.int64)
    g["edge_index"][1, 0] = 5  # n = 5
    seeds["bad_tile_edge_out_of_range.npz"] = archive(g, 0)
    g = layout(np.int32)
    g["edge_index"][0, 1] = -1
    seeds["bad_layout_edge_negative.npz"] = archive(g, 8)
    g = layout(np.int64)
    g["node_config_ids"] = np.array([1, 3, 1], dtype=np.int64)
    seeds["bad_layout_duplicate_config_ids.npz"] = archive(g, 0)
    g = layout(np.int64)
    g["node_config_ids"] = np.array([1, 6, 4], dtype=np.int64)
    seeds["bad_layout_config_id_out_of_range.npz"] = archive(g, 0)
    g = tile(np.int64)
    g["node_feat"][2, 3] = np.nan
    g["config_feat"][1, 0] = np.inf
    seeds["bad_tile_nan_inf.npz"] = archive(g, 0)
    g = layout(np.int64)
    g["node_config_feat"][2, 1, 5] = np.nan
    seeds["bad_layout_ncf_nan.npz"] = archive(g, 8)  # found by the streamed scan too
    g = layout(np.int64)
    g["node_config_feat"] = g["node_config_feat"].astype(np.float16)
    g["node_config_feat"][3, 2, 17] = -np.inf
    seeds["bad_layout_ncf_f16_inf.npz"] = archive(g, 0)
    g = layout(np.int64)
    g["node_splits"] = np.array([0, 4, 2, 9], dtype=np.int64)
    seeds["bad_layout_splits.npz"] = archive(g, 0)
    g = tile(np.int64)
    g["config_runtime"][1] = -5
    g["config_runtime_normalizers"][0] = 0
    g["node_opcode"][0] = 300
    seeds["bad_tile_runtime_opcode.npz"] = archive(g, 0)
    # fail to load
    g = layout(np.int64)
    g["node_config_feat"] = feat((4, 2, 18))  # nc = 3 from node_config_ids
    seeds["bad_layout_ncf_nc_mismatch.npz"] = archive(g, 0)
    g = tile(np.int64)
    g["config_runtime_normalizers"] = np.full(2, 90, dtype=np.int64)
    seeds["bad_tile_normalizers_length.npz"] = archive(g, 0)
    g = tile(np.int64)
    g["edge_index"] = np.array([[1, 0, 2]], dtype=np.int64)
    seeds["bad_tile_edge_shape.npz"] = archive(g, 0)
    g = tile(np.int64)
    g["edge_index"][0, 0] = 1 << 40  # does not fit int32
    seeds["bad_tile_edge_int64_overflow.npz"] = archive(g, 8)
    g = layout(np.int64)
    g["node_opcode"] = g["node_opcode"].astype(np.float32)
    seeds["bad_layout_float_opcode.npz"] = archive(g, 0)
    g = layout(np.int64)
    g["node_splits"] = np.array([[0, 2], [3, 4]], dtype=np.int64)
    seeds["bad_layout_splits_shape.npz"] = archive(g, 0)
    g = layout(np.int64)
    del g["node_config_ids"]
    seeds["bad_layout_missing_ids.npz"] = archive(g, 0)
    g = tile(np.int64)
    del g["config_feat"]
    seeds["bad_neither_kind.npz"] = archive(g, 0)
    # written by numpy itself (timestamps differ run to run)
    buf = io.BytesIO()
    np.savez(buf, **tile(np.int64, n=3, c=2))
    seeds["numpy_savez_tile.npz"] = buf.getvalue()
    buf = io.BytesIO()
    np.savez_compressed(buf, **layout(np.int64))
    seeds["numpy_savez_compressed_layout.npz"] = buf.getvalue()
    return seeds


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..")
    corpora = [("npy_header", npy_seeds()), ("npz", npz_seeds())]
    try:
        import numpy as np
        corpora.append(("graph", graph_seeds(np)))
    except ImportError:
        print("numpy is not importable: fuzz/corpus/graph/ left as it is")
    for target, seeds in corpora:
        out = os.path.join(root, "fuzz", "corpus", target)
        os.makedirs(out, exist_ok=True)
        for name, blob in sorted(seeds.items()):
            assert len(blob) <= 4096, name
            with open(os.path.join(out, name), "wb") as f:
                f.write(blob)
        print("wrote %d seeds to %s" % (len(seeds), os.path.normpath(out)))


if __name__ == "__main__":
    main()
