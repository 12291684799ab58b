#!/usr/bin/env python3
"""perfcast's safetensors code against an independent Python implementation.

Python (struct + json + numpy.frombuffer, no safetensors package) writes files
of every supported dtype, 0-d and empty tensors, unicode names and metadata,
padded and unpadded headers, data in any order; perfcast
(tests/tools/pc_st_tool) must read them to the same values. perfcast writes
files (a fixed checkpoint, and copies of the Python files); Python parses them
and checks the values, the header padding, contiguity and the on-disk order
(element size descending, then name), and that a copy of a copy is
byte-identical. Must-fail files made here end in a clean PC_ERR_FORMAT whose
message names the file. If torch and safetensors are importable, the
perfcast-written file is also loaded with safetensors.torch.load_file.

Environment (set by tests/CMakeLists.txt): PC_ST_TOOL, PC_TEST_TMP.
Exit 0 pass, 1 fail, 77 skip (numpy missing).
"""
import json
import os
import shutil
import struct
import zlib
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not importable by %s (install python3-numpy)" % sys.executable)
    sys.exit(77)

TOOL = os.environ.get("PC_ST_TOOL")
TMP = os.environ.get("PC_TEST_TMP") or os.path.join("/tmp", "pc_test_safetensors_py")
FAILS = []

DTYPES = {  # safetensors name -> numpy dtype (little-endian)
    "BOOL": np.dtype("bool"), "U8": np.dtype("<u1"), "I8": np.dtype("<i1"),
    "U16": np.dtype("<u2"), "I16": np.dtype("<i2"), "U32": np.dtype("<u4"),
    "I32": np.dtype("<i4"), "U64": np.dtype("<u8"), "I64": np.dtype("<i8"),
    "F16": np.dtype("<f2"), "F32": np.dtype("<f4"), "F64": np.dtype("<f8"),
}
NAME_OF = {v: k for k, v in DTYPES.items()}


def c_order(a):
    """A C-order copy; unlike np.ascontiguousarray, keeps 0-d arrays 0-d."""
    return np.array(a, order="C", copy=True)


def fail(msg):
    FAILS.append(msg)
    print("FAIL:", msg)


def st_name(arr):
    return NAME_OF[arr.dtype.newbyteorder("<") if arr.dtype.itemsize > 1 else arr.dtype]


def write_st(path, tensors, meta=None, order=None, pad=True, indent=None):
    """Independent writer: tensors laid out in `order` (default: dict order)."""
    header = {}
    if meta is not None:
        header["__metadata__"] = meta
    names = order or list(tensors)
    pos = 0
    blobs = []
    for n in names:
        a = c_order(tensors[n])
        b = a.astype(a.dtype.newbyteorder("<")).tobytes()
        header[n] = {"dtype": st_name(a), "shape": list(a.shape), "data_offsets": [pos, pos + len(b)]}
        blobs.append(b)
        pos += len(b)
    h = json.dumps(header, indent=indent, ensure_ascii=False).encode("utf-8")
    if pad:
        h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read_st(path):
    """Independent reader with the spec's checks; returns (meta, tensors, info)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    assert 8 + n <= len(raw), "header past EOF"
    htext = raw[8:8 + n]
    header = json.loads(htext.decode("utf-8"))
    meta = header.pop("__metadata__", {})
    buf = raw[8 + n:]
    spans = sorted((v["data_offsets"][0], v["data_offsets"][1], k) for k, v in header.items())
    pos = 0
    for b, e, k in spans:
        assert b == pos, "not contiguous at %s" % k
        pos = e
    assert pos == len(buf), "trailing bytes"
    out = {}
    for k, v in header.items():
        dt = DTYPES[v["dtype"]]
        b, e = v["data_offsets"]
        a = np.frombuffer(buf[b:e], dtype=dt).reshape(v["shape"])
        out[k] = a
    return meta, out, {"hlen": n, "htext": htext, "header": header, "raw": raw}


def run(*args):
    return subprocess.run([TOOL] + list(args), capture_output=True, text=True, timeout=120)


def dump(path):
    p = run("dump", path)
    if p.returncode != 0:
        fail("dump %s: exit %d: %s" % (path, p.returncode, p.stderr.strip()))
        return None
    return json.loads(p.stdout)


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def check_dump(label, d, tensors, meta):
    if d is None:
        return
    if d["meta"] != (meta or {}):
        fail("%s: metadata %r != %r" % (label, d["meta"], meta))
    names = [t["name"] for t in d["tensors"]]
    if names != sorted(tensors, key=lambda s: s.encode("utf-8")):
        fail("%s: names %r not the sorted tensor names" % (label, names))
    for t in d["tensors"]:
        want = tensors.get(t["name"])
        if want is None:
            fail("%s: unexpected tensor %r" % (label, t["name"]))
            continue
        want = c_order(want)
        if t["dtype"] != st_name(want) or t["shape"] != list(want.shape):
            fail("%s: %s: dtype/shape %s %s, want %s %s" % (label, t["name"], t["dtype"], t["shape"],
                                                            st_name(want), list(want.shape)))
        if bytes.fromhex(t["hex"]) != want.astype(want.dtype.newbyteorder("<")).tobytes():
            fail("%s: %s: data differs" % (label, t["name"]))


def sample_tensors():
    rng = np.random.default_rng(7)
    return {
        "enc.weight": rng.standard_normal((3, 5)).astype(np.float32),
        "enc.bias": rng.standard_normal(5),
        "counts": np.array([-(2 ** 63), -1, 0, 2 ** 63 - 1], dtype=np.int64),
        "ids": np.arange(-6, 6, dtype=np.int32).reshape(2, 3, 2),
        "bytes": np.array([0, 1, 254, 255], dtype=np.uint8),
        "flags": np.array([True, False, True]),
        "half": np.array([1.0, -2.5, 65504.0], dtype=np.float16),
        "small": np.array([-128, 0, 127], dtype=np.int8),
        "u16": np.array([0, 65535], dtype=np.uint16),
        "i16": np.array([-32768, 32767], dtype=np.int16),
        "u32": np.array([0, 2 ** 32 - 1], dtype=np.uint32),
        "u64": np.array([0, 2 ** 64 - 1], dtype=np.uint64),
        "scalar": np.array(3.25),
        "scalar_i": np.array(-9, dtype=np.int64),
        "empty": np.zeros((0, 4), dtype=np.float32),
        "empty1": np.zeros((0,), dtype=np.int64),
        "caf\u00e9 \u65e5\u672c \"q\"": np.array([1.5], dtype=np.float32),
        "odd.u8": np.array([9, 8, 7], dtype=np.uint8),
    }


META = {
    "arch": json.dumps({"hidden": [64, 32], "act": "relu", "name": "mlp \"v1\""}),
    "unicode": "na\u00efve \u2013 \u65e5\u672c \U0001F680\n\ttab",
    "empty": "",
}


def test_python_writes(tmp):
    tensors = sample_tensors()
    names = list(tensors)
    variants = [
        ("padded", dict(meta=META)),
        ("unpadded_reversed", dict(meta=META, order=names[::-1], pad=False)),
        ("indented_no_meta", dict(meta=None, indent=2, order=sorted(names))),
    ]
    for label, kw in variants:
        path = os.path.join(tmp, "py_%s.safetensors" % label)
        write_st(path, tensors, **kw)
        check_dump("python %s" % label, dump(path), tensors, kw.get("meta"))

        # perfcast copies it; the copy is parsed here and must hold the same
        out = os.path.join(tmp, "pc_%s.safetensors" % label)
        p = run("copy", path, out)
        if p.returncode != 0:
            fail("copy %s: %s" % (label, p.stderr.strip()))
            continue
        check_pc_file("copy %s" % label, out, tensors, kw.get("meta"))
        # a copy of the copy is byte-identical
        out2 = os.path.join(tmp, "pc_%s_again.safetensors" % label)
        p = run("copy", out, out2)
        if p.returncode != 0 or open(out, "rb").read() != open(out2, "rb").read():
            fail("copy %s: copying the copy did not give the same bytes" % label)


def check_pc_file(label, path, tensors, meta):
    try:
        m, got, info = read_st(path)
    except Exception as e:  # noqa: BLE001
        fail("%s: Python cannot parse perfcast's file: %r" % (label, e))
        return None
    crc = m.pop("pc_crc32", None)
    if m != (meta or {}):
        fail("%s: metadata %r != %r" % (label, m, meta))
    # the writer's checksum: zlib's CRC-32 of the file with its 8 digits read as zeros
    raw = info["raw"]
    at = raw.find(b'"pc_crc32":"')
    if crc is None or at < 0:
        fail("%s: perfcast's file has no pc_crc32 checksum" % label)
    else:
        zeroed = raw[:at + 12] + b"00000000" + raw[at + 20:]
        if "%08x" % zlib.crc32(zeroed) != crc:
            fail("%s: pc_crc32 %s, zlib.crc32 gives %08x" % (label, crc, zlib.crc32(zeroed)))
    if set(got) != set(tensors):
        fail("%s: names %r != %r" % (label, sorted(got), sorted(tensors)))
        return None
    for k, want in tensors.items():
        if not same(got[k], c_order(want).astype(want.dtype.newbyteorder("<"))):
            fail("%s: %s: values differ" % (label, k))
    n = info["hlen"]
    if n % 8:
        fail("%s: header length %d is not a multiple of 8" % (label, n))
    h = info["htext"]
    if not h.startswith(b"{") or not h.rstrip(b" ").endswith(b"}") or \
            len(h) - len(h.rstrip(b" ")) > 7:
        fail("%s: header is not a JSON object padded with at most 7 spaces" % label)
    # on-disk order: element size descending, then name (bytewise)
    hdr = info["header"]
    disk = sorted(hdr, key=lambda k: hdr[k]["data_offsets"])
    want_order = sorted(hdr, key=lambda k: (-DTYPES[hdr[k]["dtype"]].itemsize, k.encode("utf-8")))
    nonempty = [k for k in disk if hdr[k]["data_offsets"][0] != hdr[k]["data_offsets"][1]]
    if nonempty != [k for k in want_order if k in nonempty]:
        fail("%s: on-disk order %r, want %r" % (label, disk, want_order))
    for k in hdr:
        b = hdr[k]["data_offsets"][0]
        if (8 + n + b) % DTYPES[hdr[k]["dtype"]].itemsize:
            fail("%s: %s is not aligned to its element size" % (label, k))
    return got


def test_perfcast_writes(tmp):
    path = os.path.join(tmp, "gen.safetensors")
    p = run("gen", path)
    if p.returncode != 0:
        fail("gen: %s" % p.stderr.strip())
        return
    k12 = np.arange(12)
    want = {
        "layer.0.weight": (k12.astype(np.float32) * np.float32(0.5) - np.float32(2)).reshape(3, 4),
        "layer.0.bias": np.arange(4) / 3.0,
        "vocab": np.arange(5, dtype=np.int64) * 1000000007 - 2 ** 40,
        "ids": (-np.arange(4, dtype=np.int32) * 7).reshape(2, 2),
        "mask": np.array([0, 100, 200], dtype=np.uint8),
        "step": np.array(12345, dtype=np.int64),
        "empty": np.zeros((0, 4), dtype=np.float32),
    }
    meta = {"arch": "{\"hidden\": [64, 32], \"act\": \"relu\"}", "format": "pt",
            "note": "line\nbreak \"quoted\" caf\u00e9"}
    check_pc_file("gen", path, want, meta)
    check_dump("gen (perfcast reads back)", dump(path), want, meta)
    try:
        import torch  # noqa: F401
        from safetensors.torch import load_file
    except ImportError:
        print("note: torch/safetensors not importable; skipped loading with safetensors.torch")
        return
    loaded = load_file(path)
    for k, v in want.items():
        if not np.array_equal(loaded[k].numpy(), v):
            fail("safetensors.torch: %s differs" % k)


def test_must_fail(tmp):
    def raw(name, header, data=b"", hlen=None, text=None):
        h = text.encode("utf-8") if text is not None else json.dumps(header).encode("utf-8")
        path = os.path.join(tmp, name)
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(h) if hlen is None else hlen) + h + data)
        return path

    t = lambda off, dt="F32", shape=(2,): {"dtype": dt, "shape": list(shape), "data_offsets": off}  # noqa: E731
    cases = [
        (raw("bad_overlap.safetensors", {"a": t([0, 8]), "b": t([4, 12])}, bytes(12)), "overlap"),
        (raw("bad_hole.safetensors", {"a": t([0, 8]), "b": t([12, 20])}, bytes(20)), "hole"),
        (raw("bad_range.safetensors", {"a": t([0, 8])}, bytes(4)), "out of range"),
        (raw("bad_shape.safetensors", {"a": t([0, 8], shape=(3,))}, bytes(8)), "expected 12"),
        (raw("bad_dtype.safetensors", {"a": t([0, 8], dt="Q32")}, bytes(8)), "unknown dtype"),
        (raw("bad_json.safetensors", None, text='{"a": {"dtype": "F32", '), "not valid JSON"),
        (raw("bad_eof.safetensors", {}, hlen=4096), "past the end"),
        (raw("bad_huge.safetensors", {}, hlen=2 ** 64 - 1), "past the end"),
        (raw("bad_dup.safetensors", None, bytes(16), text='{"a": %s, "a": %s}' % (
            json.dumps(t([0, 8])), json.dumps(t([8, 16])))), "duplicate tensor name"),
        (raw("bad_trailing.safetensors", {"a": t([0, 8])}, bytes(12)), "bytes after the last"),
    ]
    trunc = os.path.join(tmp, "bad_truncated.safetensors")
    with open(trunc, "wb") as f:
        f.write(b"\x10\x00\x00")
    cases.append((trunc, "too short"))
    for path, expect in cases:
        p = run("dump", path)
        name = os.path.basename(path)
        if p.returncode != 1 or "(format error)" not in p.stderr or name not in p.stderr \
                or expect not in p.stderr:
            fail("%s: want exit 1, '(format error)', '%s' and the file name; got exit %d: %s"
                 % (name, expect, p.returncode, p.stderr.strip()))


def main():
    if not TOOL or not os.access(TOOL, os.X_OK):
        print("FAIL: PC_ST_TOOL (%r) is not an executable; run through ctest" % TOOL)
        return 1
    tmp = TMP
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    test_python_writes(tmp)
    test_perfcast_writes(tmp)
    test_must_fail(tmp)
    if FAILS:
        print("%d failure(s)" % len(FAILS))
        return 1
    shutil.rmtree(tmp, ignore_errors=True)
    print("ok: safetensors round trips with Python")
    return 0


if __name__ == "__main__":
    sys.exit(main())
