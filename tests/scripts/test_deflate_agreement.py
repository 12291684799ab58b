#!/usr/bin/env python3
"""One deflate verdict whatever the path and the size (issue #18 item 2).

Deflate streams that libdeflate and zlib (as libzip drives it) judged
differently, each in a tile graph's node_feat member with the CRC and size of
the bytes it was meant to hold:

- far: a match with distance code 30, after more than 32 KiB of output. The
  format reserves codes 30 and 31; zlib calls them invalid, libdeflate (1.14)
  decoded code 30 as code 29 (24577 back, 13 extra bits), so the whole
  (libdeflate) load accepted what the streamed check refused.
- nonfinal: the data, then a sync flush and no final block (the stream never
  ends); libzip's streamed read accepted it, libdeflate refused it.
- truncated: the last byte of a good stream cut off; the same split.

Each must now be refused alike, naming the file and the member, by check
(streamed rows), info, rank (a whole read) and train (a whole read), at a
small node_feat (64 rows, 36 KB) and a large one (40000 rows, 22 MB); the
untouched stream (good) is accepted by all. Environment (tests/CMakeLists.txt):
PERFCAST, PC_TEST_TMP, PC_TEST_DATA.
"""
import io
import os
import shutil
import struct
import subprocess
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clitest import CLI, FAILS, expect, report, run  # noqa: E402

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_deflate_agreement")
DATA = os.environ.get("PC_TEST_DATA",
                      os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data"))
MODEL = os.path.join(DATA, "models", "tile_v1.safetensors")
FAR = 24577  # what libdeflate 1.14 made of distance code 30 with zero extra bits


class Bits:
    def __init__(self):
        self.acc, self.n, self.out = 0, 0, bytearray()

    def put(self, v, n):  # LSB first
        self.acc |= v << self.n
        self.n += n
        while self.n >= 8:
            self.out.append(self.acc & 0xFF)
            self.acc >>= 8
            self.n -= 8

    def huff(self, code, n):  # Huffman codes go MSB first
        self.put(int(format(code, "0%db" % n)[::-1], 2), n)

    def done(self):
        if self.n:
            self.out.append(self.acc & 0xFF)
        return bytes(self.out)


def fixed_lit(sym):
    if sym < 144:
        return 0x30 + sym, 8
    if sym < 256:
        return 0x190 + sym - 144, 9
    if sym < 280:
        return sym - 256, 7
    return 0xC0 + sym - 280, 8


def npy(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def feat_bytes(rows):
    """node_feat bytes (0x00 / 0x3f only: finite floats) whose last 103 bytes start with a
    3-byte copy of the bytes FAR before them (the CRC is right for libdeflate's reading)."""
    rng = np.random.default_rng(rows)
    pat = rng.integers(0, 2, size=rows * 140 * 4).astype(np.uint8) * 0x3F
    content = bytearray(npy(np.frombuffer(pat.tobytes(), np.float32).reshape(rows, 140)))
    at = len(content) - 103
    content[at:at + 3] = content[at - FAR:at - FAR + 3]
    return bytes(content), at


def streams(content, at):
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    good = c.compress(content) + c.flush()
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    nonfinal = c.compress(content) + c.flush(zlib.Z_SYNC_FLUSH)
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    far = bytearray(c.compress(content[:at]) + c.flush(zlib.Z_SYNC_FLUSH))
    w = Bits()  # a final fixed-Huffman block: length 3 at distance code 30, literals, end
    w.put(1, 1)
    w.put(1, 2)
    w.huff(*fixed_lit(257))
    w.huff(30, 5)
    w.put(0, 13)
    for b in content[at + 3:]:
        w.huff(*fixed_lit(b))
    w.huff(*fixed_lit(256))
    far += w.done()
    return {"good": good, "far": bytes(far), "nonfinal": nonfinal, "truncated": good[:-1]}


def write_zip(path, members):
    """members: (name, raw, method, crc, size); a plain zip written by hand so a member's
    compressed bytes are exactly `raw`."""
    out, cd = io.BytesIO(), io.BytesIO()
    for name, raw, method, crc, size in members:
        off, nb = out.tell(), name.encode()
        out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0x21, crc,
                              len(raw), size, len(nb), 0))
        out.write(nb + raw)
        cd.write(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, method, 0, 0x21,
                             crc, len(raw), size, len(nb), 0, 0, 0, 0, 0, off))
        cd.write(nb)
    start, cdb = out.tell(), cd.getvalue()
    out.write(cdb)
    out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members),
                          len(cdb), start, 0))
    with open(path, "wb") as f:
        f.write(out.getvalue())


def tile_graph(path, rows, raw, content):
    members = [("node_feat.npy", raw, 8, zlib.crc32(content), len(content))]
    small = {"node_opcode": np.zeros(rows, np.uint8), "edge_index": np.zeros((0, 2), np.int64),
             "config_feat": np.ones((4, 24), np.float32),
             "config_runtime": np.arange(1, 5, dtype=np.int64) * 1000,
             "config_runtime_normalizers": np.full(4, 1000, np.int64)}
    for k, v in small.items():
        b = npy(v)
        members.append((k + ".npy", b, 0, zlib.crc32(b), len(b)))
    write_zip(path, members)


def verdict(args):
    p = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout + p.stderr


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    data = os.path.join(TMP, "data")
    p = run("synth", "--out", data, "--scale", "tiny", "--seed", "5",
            "--collections", "tile:xla")
    if p.returncode != 0:
        print("FAIL: synth: " + p.stderr)
        return 1
    for rows in (64, 40000):
        content, at = feat_bytes(rows)
        for kind, raw in streams(content, at).items():
            path = os.path.join(TMP, "%s_%d.npz" % (kind, rows))
            tile_graph(path, rows, raw, content)
            want = 0 if kind == "good" else 1
            cmds = {"check": ["check", path], "info": ["info", path],
                    "rank": ["rank", "--model", MODEL, path, "--top", "1"]}
            if rows == 64:
                tree = os.path.join(TMP, "tree_" + kind)
                shutil.rmtree(tree, ignore_errors=True)
                shutil.copytree(data, tree)
                shutil.copy(path, os.path.join(tree, "npz", "tile", "xla", "train", "zz.npz"))
                cmds["train"] = ["train", "--data", tree, "--collection", "tile:xla", "--out",
                                 os.path.join(TMP, "m.st"), "--epochs", "1", "--hidden", "8",
                                 "--layers", "1", "--threads", "1", "--progress", "never"]
            seen = []
            for name, args in cmds.items():
                rc, text = verdict(args)
                seen.append("%s %d" % (name, rc))
                expect(rc == want, "%s %s (%d rows): exit %d, expected %d\n%s"
                       % (name, kind, rows, rc, want, text[-800:]))
                if want:
                    expect("node_feat.npy" in text and ("zz.npz" in text or path in text),
                           "%s %s: the message names neither file nor member:\n%s"
                           % (name, kind, text[-800:]))
            print("  ok %-10s %6d rows: %s" % (kind, rows, ", ".join(seen)))
    rc = report("deflate: check, info, rank and train give one verdict on four streams at "
                "two sizes")
    if rc == 0:
        shutil.rmtree(TMP, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
