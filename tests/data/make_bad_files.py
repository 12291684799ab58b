#!/usr/bin/env python3
"""Regenerates tests/data/bad/: small .npz/.npy files every reader must reject.

Each file must make `pc_npz_tool readall FILE` (or `load` for .npy) exit 1
with a message naming the file, quickly, without a crash or a huge
allocation (tests/scripts/test_npz_bad.py). The fuzz replay runs them too.

Only the standard library is used (no numpy), so the output is reproducible:
    python3 tests/data/make_bad_files.py [OUT_DIR]

The module also provides the small .npy/.zip builders used by
make_fuzz_seeds.py and the Python tests (hand-made headers, lying sizes,
ZIP64 records).
"""
import os
import struct
import sys
import zlib

MAGIC = b"\x93NUMPY"


# ---- .npy ------------------------------------------------------------------

def npy_header(descr="'<f8'", fortran="False", shape="(2,)", version=(1, 0),
               dict_text=None, header_len=None, pad=True, magic=MAGIC):
    """A .npy header from literal pieces (so lies are easy to write).

    dict_text replaces the whole dict literal; header_len overrides the
    length field; pad=False leaves out the 64-byte alignment padding.
    """
    if dict_text is None:
        dict_text = "{'descr': %s, 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape)
    body = dict_text.encode("latin1" if version[0] < 3 else "utf8")
    pre = 10 if version[0] == 1 else 12
    if pad:
        total = pre + len(body) + 1
        body += b" " * ((64 - total % 64) % 64)
    body += b"\n"
    n = len(body) if header_len is None else header_len
    lenfield = struct.pack("<H", n) if version[0] == 1 else struct.pack("<I", n)
    return magic + bytes(version) + lenfield + body


def npy(data=b"", **kw):
    return npy_header(**kw) + data


def f8(*vals):
    return struct.pack("<%dd" % len(vals), *vals)


# ---- .zip ------------------------------------------------------------------

def deflate_raw(data, level=6):
    c = zlib.compressobj(level, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def entry(name, data, method=0, **over):
    """A zip member. `data` is the uncompressed content; method 8 deflates it.

    Overrides (all optional): payload (bytes stored in the archive), crc,
    usize, csize (declared sizes, both headers), cd_usize/cd_csize/lh_usize/
    lh_csize (one header only), flags, lh_name, lh_sig, offset (central
    directory's local header offset), zip64 (write sizes/offset in ZIP64
    extra fields of both headers).
    """
    payload = over.pop("payload", None)
    if payload is None:
        payload = deflate_raw(data) if method == 8 else data
    e = dict(name=name, payload=payload, method=method, crc=zlib.crc32(data) & 0xFFFFFFFF,
             usize=len(data), csize=len(payload), flags=0, zip64=False)
    e.update(over)
    return e


def build_zip(entries, cd_offset=None, count=None, zip64_eocd=False, trailing=b"", comment=b""):
    out = bytearray()
    cd = bytearray()
    for e in entries:
        name = e["name"].encode("utf8")
        lh_name = e.get("lh_name", e["name"]).encode("utf8")
        offset = len(out)
        usize_l = e.get("lh_usize", e["usize"])
        csize_l = e.get("lh_csize", e["csize"])
        usize_c = e.get("cd_usize", e["usize"])
        csize_c = e.get("cd_csize", e["csize"])
        cd_off = e.get("offset", offset)
        if e["zip64"]:
            lh_extra = struct.pack("<HHQQ", 1, 16, usize_l, csize_l)
            cd_extra = struct.pack("<HHQQQ", 1, 24, usize_c, csize_c, cd_off)
            usize_l = csize_l = usize_c = csize_c = cd_off32 = 0xFFFFFFFF
            version = 45
        else:
            lh_extra = cd_extra = b""
            cd_off32 = cd_off
            version = 20
        out += struct.pack("<IHHHHHIIIHH", e.get("lh_sig", 0x04034B50), version, e["flags"],
                           e["method"], 0, 0x21, e["crc"], csize_l, usize_l, len(lh_name),
                           len(lh_extra))
        out += lh_name + lh_extra + e["payload"]
        cd += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 0x031E, version, e["flags"],
                          e["method"], 0, 0x21, e["crc"], csize_c, usize_c, len(name),
                          len(cd_extra), 0, 0, 0, 0o100644 << 16, cd_off32)
        cd += name + cd_extra
    start = len(out) if cd_offset is None else cd_offset
    n = len(entries) if count is None else count
    out += cd
    if zip64_eocd:
        eocd64_at = len(out)
        out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, n, n, len(cd), start)
        out += struct.pack("<IIQI", 0x07064B50, 0, eocd64_at, 1)
        out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF,
                           len(comment))
    else:
        out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, min(n, 0xFFFF), min(n, 0xFFFF),
                           len(cd), min(start, 0xFFFFFFFF), len(comment))
    return bytes(out) + comment + trailing


def good_members():
    """Three ordinary members, as np.savez would hold them (stored)."""
    return [
        entry("a.npy", npy(f8(*range(8)), shape="(8,)")),
        entry("b.npy", npy(struct.pack("<6i", *range(6)), descr="'<i4'", shape="(2, 3)")),
        entry("c.npy", npy(bytes([1, 0, 1]), descr="'|b1'", shape="(3,)")),
    ]


# ---- the must-fail files ----------------------------------------------------

def bad_files():
    """name -> bytes. Names say what is wrong."""
    files = {}
    good = build_zip(good_members())
    good_deflated = build_zip([entry(e["name"], e["payload"], 8) for e in good_members()])
    # b.npy's position, for cuts
    b_at = good.index(b"b.npy")
    cd_at = good.index(b"PK\x01\x02")

    # not archives
    files["empty.npz"] = b""
    files["not_a_zip.npz"] = b"this is a text file, not a zip archive\n" * 4
    files["npy_named_npz.npz"] = npy(f8(1, 2), shape="(2,)")
    # truncations
    files["truncated_mid_member.npz"] = good[: b_at + 80]
    files["truncated_in_central_dir.npz"] = good[: cd_at + 30]
    files["truncated_eocd.npz"] = good[:-6]
    files["truncated_deflated.npz"] = good_deflated[: len(good_deflated) // 2]
    # zip structure lies
    files["cd_offset_past_eof.npz"] = build_zip(good_members(), cd_offset=1 << 20)
    files["entry_count_lie.npz"] = build_zip(good_members(), count=500)
    m = good_members()
    m[1]["offset"] = 1 << 30
    files["local_offset_past_eof.npz"] = build_zip(m)
    m = good_members()
    m[1]["lh_sig"] = 0x08074B50
    files["local_header_bad_signature.npz"] = build_zip(m)
    m = good_members()
    m[0].update(usize=10_000_000, csize=10_000_000)
    files["stored_size_lie.npz"] = build_zip(m)
    m = good_members()
    m[0].update(cd_usize=60, cd_csize=60)
    files["stored_size_short.npz"] = build_zip(m)
    # deflated member claiming 1 TiB uncompressed, header consistent with it:
    # reading must not allocate by the claim.
    big = 1 << 40
    hdr = npy_header(shape="(%d,)" % ((big - 128) // 8), descr="'<f8'")
    assert len(hdr) == 128
    files["deflated_size_lie_1tib.npz"] = build_zip(
        [entry("x.npy", hdr + b"\0" * 4096, 8, usize=big, zip64=True)])
    # same with a 4 GiB claim and a plausible-looking 32-bit size field
    hdr = npy_header(shape="(%d,)" % ((0xFFFFFF80 - 128) // 8), descr="'<f8'")
    files["deflated_size_lie_4gib.npz"] = build_zip(
        [entry("x.npy", hdr + b"\0" * 4096, 8, usize=0xFFFFFF80)])
    # inflates to far more than declared
    payload = npy(b"\0" * 200_000, shape="(25000,)", descr="'<f8'")
    files["deflated_longer_than_declared.npz"] = build_zip(
        [entry("x.npy", payload, 8, usize=1000)])
    # corrupt deflate streams
    ok = npy(f8(*range(64)), shape="(64,)")
    raw = bytearray(deflate_raw(ok))
    raw[0] |= 0x06  # BTYPE=11: reserved block type
    files["corrupt_deflate_block_type.npz"] = build_zip([entry("x.npy", ok, 8, payload=bytes(raw))])
    raw = deflate_raw(ok)
    files["corrupt_deflate_cut_stream.npz"] = build_zip(
        [entry("x.npy", ok, 8, payload=raw[: len(raw) * 2 // 3])])
    raw = bytearray(deflate_raw(npy(bytes(range(256)) * 8, shape="(2048,)", descr="'|u1'")))
    for i in range(len(raw) // 2, len(raw) // 2 + 16):
        raw[i] ^= 0x5A
    files["corrupt_deflate_garbled.npz"] = build_zip(
        [entry("x.npy", npy(bytes(range(256)) * 8, shape="(2048,)", descr="'|u1'"), 8,
               payload=bytes(raw))])
    # CRC mismatches (data otherwise well formed)
    m = good_members()
    p = bytearray(m[0]["payload"])
    p[-1] ^= 0xFF
    m[0]["payload"] = bytes(p)
    files["crc_mismatch_stored.npz"] = build_zip(m)
    m = [entry("x.npy", ok, 8, crc=0x12345678)]
    files["crc_mismatch_deflated.npz"] = build_zip(m)
    # unsupported zip features
    m = good_members()
    m[0]["flags"] = 1
    files["encrypted_member.npz"] = build_zip(m)
    m = good_members()
    m[0]["method"] = 77
    files["unknown_compression_method.npz"] = build_zip(m)
    files["duplicate_keys.npz"] = build_zip(good_members() + [good_members()[0]])

    # .npy headers inside members
    def one(name, blob, method=0):
        files[name] = build_zip([entry("x.npy", blob, method)] + good_members()[1:])

    one("member_wrong_magic.npz", npy(f8(1, 2), magic=b"\x93NUMPZ"))
    one("member_magic_only.npz", MAGIC)
    one("member_empty.npz", b"")
    one("member_header_len_past_end.npz", npy(f8(1), shape="(1,)", header_len=60000))
    one("member_header_len_v2_huge.npz", npy(f8(1), shape="(1,)", version=(2, 0),
                                             header_len=0xFFFFFFF0))
    # v1 header length fields of 0 and 1: shorter than the 12-byte preamble
    # (found by fuzz_npz: heap overflow in pc_npz_info)
    one("member_header_len_zero.npz", MAGIC + b"\x01\x00\x00\x00" + b"\0" * 40)
    one("member_header_len_one.npz", MAGIC + b"\x01\x00\x01\x00{" + b"\0" * 40)
    one("member_header_len_zero_deflated.npz", MAGIC + b"\x01\x00\x00\x00" + b"\0" * 40, 8)
    one("member_bad_version.npz", npy(f8(1), shape="(1,)", version=(9, 0)))
    one("member_huge_shape.npz", npy(f8(1, 2, 3, 4), shape="(1000000000000,)"))
    one("member_huge_shape_deflated.npz", npy(f8(1, 2, 3, 4), shape="(1000000000000,)"), 8)
    one("member_shape_overflow.npz", npy(f8(1), shape="(4294967296, 4294967296, 16)"))
    one("member_shape_bytes_overflow.npz", npy(f8(1), shape="(2305843009213693952,)"))
    one("member_shape_int64_overflow.npz", npy(f8(1), shape="(99999999999999999999999,)"))
    one("member_negative_dim.npz", npy(f8(1, 2, 3), shape="(-1, 3)"))
    one("member_too_many_dims.npz", npy(f8(1), shape="(1, 1, 1, 1, 1, 1, 1, 1, 1)"))
    one("member_data_short.npz", npy(f8(*range(10)), shape="(100,)"))
    one("member_data_short_deflated.npz", npy(f8(*range(10)), shape="(100,)"), 8)
    one("member_dtype_complex.npz", npy(b"\0" * 16, descr="'<c8'"))
    one("member_dtype_object.npz", npy(b"\0" * 16, descr="'|O'"))
    one("member_dtype_unicode.npz", npy(b"\0" * 24, descr="'<U3'"))
    one("member_dtype_garbage.npz", npy(b"\0" * 16, descr="'zz9'"))
    one("member_dtype_f16_size.npz", npy(b"\0" * 32, descr="'<f16'"))
    one("member_dtype_struct.npz", npy(b"\0" * 8, descr="[('a', '<i4')]"))
    one("member_dtype_not_string.npz", npy(b"\0" * 16, descr="8"))
    one("member_missing_shape.npz",
        npy(f8(1, 2), dict_text="{'descr': '<f8', 'fortran_order': False, }"))
    one("member_missing_descr.npz",
        npy(f8(1, 2), dict_text="{'fortran_order': False, 'shape': (2,), }"))
    one("member_fortran_not_bool.npz", npy(f8(1, 2), fortran="'yes'"))
    one("member_shape_not_tuple.npz", npy(f8(1, 2), shape="'2'"))
    one("member_shape_float.npz", npy(f8(1, 2), shape="(2.0,)"))
    one("member_garbage_dict.npz", npy(f8(1, 2), dict_text="this is not a dict"))
    one("member_unterminated_dict.npz",
        npy(f8(1, 2), dict_text="{'descr': '<f8', 'fortran_order': False, 'shape': (2,"))
    one("member_trailing_garbage.npz",
        npy(f8(1, 2), dict_text="{'descr': '<f8', 'fortran_order': False, 'shape': (2,), } junk"))
    one("member_nul_in_header.npz",
        npy(f8(1, 2), dict_text="{'descr': '<f8\0', 'fortran_order': False, 'shape': (2,), }"))

    # single .npy files
    files["empty.npy"] = b""
    files["wrong_magic.npy"] = npy(f8(1, 2), magic=b"\x89PNG\r\n")
    files["magic_only.npy"] = MAGIC + b"\x01\x00"
    files["truncated_header.npy"] = npy(f8(1, 2))[:40]
    files["truncated_data.npy"] = npy(f8(*range(10)), shape="(100,)")
    files["huge_shape.npy"] = npy(f8(1, 2), shape="(1000000000000,)")
    files["shape_overflow.npy"] = npy(f8(1), shape="(4294967296, 4294967296, 16)")
    files["dtype_object.npy"] = npy(b"\0" * 16, descr="'|O'")
    files["header_len_zero.npy"] = MAGIC + b"\x01\x00\x00\x00" + b"\0" * 40
    files["header_len_past_end.npy"] = npy(f8(1), shape="(1,)", header_len=60000)
    files["zip_named_npy.npy"] = good
    return files


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "bad")
    os.makedirs(out, exist_ok=True)
    files = bad_files()
    for name in os.listdir(out):  # drop files no longer generated
        if name not in files and (name.endswith(".npz") or name.endswith(".npy")):
            os.remove(os.path.join(out, name))
    for name, blob in sorted(files.items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(blob)
    print("wrote %d files to %s" % (len(files), out))


if __name__ == "__main__":
    main()
