#!/usr/bin/env python3
"""ZIP64 with a member over 4 GiB (opt-in: slow, ~5 GB of disk per archive).

Skipped (exit 77) unless PC_LARGE_TESTS=1 (cmake -DPC_LARGE_TESTS=ON sets it
for ctest; or export it). Needs ~10 GB free in PC_TEST_TMP and ~6 GB of RAM.

1. Python's zipfile writes an archive holding a uint8 (NROWS, NCOLS) member
   of 4.3 GB (streamed, never in memory), then a small member whose local
   header lies past 4 GiB; once stored, once deflated. perfcast reads row
   ranges near the start, across the 4 GiB mark and at the very end with
   pc_npz_read_rows (streaming inflate: the tool's peak RSS must stay far
   below the member size), and the small member after it.
2. perfcast writes a 4.3 GB member (stored and deflated); Python checks the
   sizes, the CRC (reading the whole member) and rows at both ends.

Element (r, c) is (r * 7 + c * 13) % 251, as `pc_npz_tool gen` writes.
"""
import os
import resource
import shutil
import subprocess
import sys
import time
import zipfile

if os.environ.get("PC_LARGE_TESTS") != "1":
    print("SKIP: set PC_LARGE_TESTS=1 (or configure with -DPC_LARGE_TESTS=ON) to run")
    sys.exit(77)

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not importable by %s" % sys.executable)
    sys.exit(77)

TOOL = os.environ.get("PC_NPZ_TOOL")
TMP = os.environ.get("PC_TEST_TMP") or "/tmp/pc_test_zip64_large"
NCOLS = 4096
NROWS = 1_050_000  # 4,300,800,000 bytes > 4 GiB
NBYTES = NROWS * NCOLS
ROWS_4G = (1 << 32) // NCOLS  # first row at or past the 4 GiB mark
CHUNK = 4096  # rows per write
RSS_LIMIT_MB = 1024
FAILS = []

# TABLE[k] is row pattern for (7 r) % 251 == k
TABLE = ((np.arange(251)[:, None] + 13 * np.arange(NCOLS)[None, :]) % 251).astype(np.uint8)


def rows(r0, n):
    return TABLE[(7 * np.arange(r0, r0 + n, dtype=np.int64)) % 251]


def fail(msg):
    FAILS.append(msg)
    print("FAIL:", msg)


def tool(*args):
    t0 = time.time()
    p = subprocess.run([TOOL] + [str(a) for a in args], capture_output=True, text=True)
    dt = time.time() - t0
    if p.returncode != 0:
        fail("pc_npz_tool %s: exit %d: %s" % (" ".join(map(str, args)), p.returncode,
                                              p.stderr.strip()))
        return None
    print("  pc_npz_tool %s: %.1f s" % (" ".join(map(str, args[:5])), dt))
    return p


def max_child_rss_mb():
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def write_big_with_python(path, method):
    t0 = time.time()
    hdr = np.lib.format.header_data_from_array_1_0(np.zeros((1, 1), np.uint8))
    hdr["shape"] = (NROWS, NCOLS)
    with zipfile.ZipFile(path, "w", method, allowZip64=True, compresslevel=1) as zf:
        with zf.open("big.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array_header_1_0(f, hdr)
            for r0 in range(0, NROWS, CHUNK):
                f.write(rows(r0, min(CHUNK, NROWS - r0)).tobytes())
        with zf.open("after.npy", "w") as f:
            np.lib.format.write_array(f, np.arange(10, dtype=np.int64))
    print("  python wrote %s (%.1f GB) in %.1f s" % (os.path.basename(path),
                                                   os.path.getsize(path) / 1e9, time.time() - t0))


def check_rows_file(out, r0, n):
    got = np.load(out)
    want = rows(r0, n)
    if got.shape != want.shape or got.dtype != np.uint8 or not np.array_equal(got, want):
        fail("rows [%d, +%d): got %s %s, values differ" % (r0, n, got.dtype, got.shape))


def test_read(method, tag):
    path = os.path.join(TMP, "big_%s.npz" % tag)
    write_big_with_python(path, method)
    out = os.path.join(TMP, "rows.npy")
    for r0, n in [(NROWS - 5, 5), (ROWS_4G - 3, 6), (0, 4), (NROWS - 1, 1)]:
        if tool("rows", path, "big", r0, n, out):
            check_rows_file(out, r0, n)
    rss = max_child_rss_mb()
    print("  peak RSS of the tool so far: %.0f MB" % rss)
    if rss > RSS_LIMIT_MB:
        fail("%s: reading a few rows of a %.1f GB member took %.0f MB (limit %d MB): not "
             "streaming" % (tag, NBYTES / 1e9, rss, RSS_LIMIT_MB))
    if tool("read", path, "after", out):
        got = np.load(out)
        if not np.array_equal(got, np.arange(10, dtype=np.int64)):
            fail("%s: the member after the 4 GiB one reads wrong: %s" % (tag, got))
    p = tool("info", path)
    if p and str(NBYTES + 128) not in p.stdout:
        fail("%s: info does not show the member size %d:\n%s" % (tag, NBYTES + 128, p.stdout))
    os.remove(path)


def test_write(compress):
    tag = "deflated" if compress else "stored"
    path = os.path.join(TMP, "gen_%s.npz" % tag)
    args = ["gen", path, "big", NROWS, NCOLS] + (["--compress", "--level", "1"] if compress else [])
    if not tool(*args):
        return
    t0 = time.time()
    with zipfile.ZipFile(path) as zf:
        zi = zf.getinfo("big.npy")
        want_type = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
        if zi.compress_type != want_type:
            fail("%s: compression %d, expected %d" % (path, zi.compress_type, want_type))
        with zf.open(zi) as f:
            version = np.lib.format.read_magic(f)
            shape, fortran, dtype = np.lib.format._read_array_header(f, version)
            if shape != (NROWS, NCOLS) or fortran or dtype != np.uint8:
                fail("%s: header says %s %s %s" % (path, shape, fortran, dtype))
            off = f.tell()
            if zi.file_size != off + NBYTES:
                fail("%s: member size %d, expected %d" % (path, zi.file_size, off + NBYTES))
            first = np.frombuffer(f.read(4 * NCOLS), np.uint8).reshape(4, NCOLS)
            if not np.array_equal(first, rows(0, 4)):
                fail("%s: first rows differ" % path)
            # read everything (zipfile checks the CRC at the end), keep the tail
            r = 4
            while r < NROWS:
                n = min(CHUNK, NROWS - r)
                block = f.read(n * NCOLS)
                if len(block) != n * NCOLS:
                    fail("%s: member ends early at row %d" % (path, r))
                    break
                if r + n == NROWS or r <= ROWS_4G < r + n:
                    got = np.frombuffer(block, np.uint8).reshape(n, NCOLS)
                    if not np.array_equal(got, rows(r, n)):
                        fail("%s: rows [%d, +%d) differ" % (path, r, n))
                r += n
            if f.read(1):
                fail("%s: member longer than its header says" % path)
    print("  python verified %s (CRC included) in %.1f s" % (os.path.basename(path),
                                                            time.time() - t0))
    os.remove(path)


def main():
    if not TOOL or not os.access(TOOL, os.X_OK):
        print("FAIL: PC_NPZ_TOOL (%r) is not an executable; run through ctest" % TOOL)
        return 1
    os.makedirs(TMP, exist_ok=True)
    free = shutil.disk_usage(TMP).free
    if free < 10e9:
        print("FAIL: PC_LARGE_TESTS=1 but only %.1f GB free in %s (need 10)" % (free / 1e9, TMP))
        return 1
    t0 = time.time()
    print("read, member written by python, stored:")
    test_read(zipfile.ZIP_STORED, "stored")
    print("read, member written by python, deflated:")
    test_read(zipfile.ZIP_DEFLATED, "deflated")
    print("write with perfcast, stored:")
    test_write(False)
    print("write with perfcast, deflated:")
    test_write(True)
    shutil.rmtree(TMP, ignore_errors=True)
    print("%.0f s" % (time.time() - t0))
    if FAILS:
        print("%d failure(s)" % len(FAILS))
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
