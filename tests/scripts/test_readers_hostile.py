#!/usr/bin/env python3
"""The data readers under hostile files (issue #18 items 1 and 2).

- FIFOs given as .npz, .npy, a cache entry's marker or array, or sitting in a
  dataset tree make info, check and train fail within seconds (never block).
- Entries named *.npz that are not regular files (a directory, a FIFO, a
  dangling symbolic link) are problems for check and refused by train.
- A zip bomb (a ~1 MB .npz whose node_feat inflates to ~1 GiB): with
  --max-memory 64MiB check, info and train refuse it fast, naming the file,
  the member and the sizes; with the default budget check and info stream it
  with a peak RSS far below its inflated size.
- What check fails, train refuses (widths 139/141, 23/25, 17; an edge out of
  range; a negative runtime; a CRC mismatch, stored or deflated, with the
  resident and streamed readers agreeing), and what check passes trains.
- info on a broken .pcc cache entry exits non-zero.
- eval, predict and rank honour --max-memory as check, info and train do: a
  tiny budget refuses the checkpoint (naming it and the budget), 64MiB
  refuses the zip bomb among the graphs they load (naming it, its member and
  the budget); the default budget scores the clean data.

Each child's peak RSS is measured with resource.getrusage in a wrapper
process. Environment (tests/CMakeLists.txt): PERFCAST, PC_TEST_TMP.
"""
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import time
import zipfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clitest import CLI, FAILS, expect, report, run, run_checks  # noqa: E402

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_readers_hostile")
DATA = os.path.join(TMP, "data")
TIMEOUT = 10
TRAIN = ["--epochs", "1", "--hidden", "16", "--layers", "1", "--threads", "2",
         "--progress", "never"]
BOMB_ROWS = 1 << 21  # node_feat (2^21, 140) float32: 1.09 GiB inflated
WRAP = ("import json, resource, subprocess, sys\n"
        "t = float(sys.argv[2])\n"
        "try:\n"
        "    p = subprocess.run(sys.argv[3:], capture_output=True, text=True, errors='replace',"
        " timeout=t)\n"
        "    r = [p.returncode, p.stdout[-4000:], p.stderr[-4000:]]\n"
        "except subprocess.TimeoutExpired:\n"
        "    r = [None, '', '']\n"
        "r.append(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0)\n"
        "open(sys.argv[1], 'w').write(json.dumps(r))\n")


def measured(*args, timeout=TIMEOUT):
    """(rc or None on timeout, stdout, stderr, peak RSS MiB, seconds) of `perfcast args`."""
    out = os.path.join(TMP, "measure.json")
    t0 = time.time()
    subprocess.run([sys.executable, "-c", WRAP, out, str(timeout), CLI, *args], check=True)
    rc, so, se, rss = json.load(open(out))
    return rc, so, se, rss, time.time() - t0


def fails(what, args, needles=(), timeout=TIMEOUT, max_rss=None):
    rc, so, se, rss, dt = measured(*args, timeout=timeout)
    text = so + se
    if rc is None:
        FAILS.append("%s: still running after %d s" % (what, timeout))
        return text
    expect(rc == 1, "%s: exit %d, expected 1\n%s" % (what, rc, text[-1500:]))
    for n in needles:
        expect(n in text, "%s: output lacks %r:\n%s" % (what, n, text[-1500:]))
    if max_rss:
        expect(rss < max_rss, "%s: peak RSS %.0f MiB, over %d" % (what, rss, max_rss))
    print("  ok %-52s %5.2f s %6.0f MiB  %s" % (what, dt, rss, (se or so).strip()
                                                 .splitlines()[-1][:150] if text.strip() else ""))
    return text


def passes(what, args, timeout=120, max_rss=None):
    rc, so, se, rss, dt = measured(*args, timeout=timeout)
    expect(rc == 0, "%s: exit %s, expected 0\n%s" % (what, rc, (so + se)[-1500:]))
    if max_rss:
        expect(rss < max_rss, "%s: peak RSS %.0f MiB, over %d" % (what, rss, max_rss))
    print("  ok %-52s %5.2f s %6.0f MiB" % (what, dt, rss))
    return rss, dt


# ---- files ------------------------------------------------------------------


def first(coll_dir, split="train"):
    d = os.path.join(DATA, "npz", coll_dir, split)
    return os.path.join(d, sorted(f for f in os.listdir(d) if f.endswith(".npz"))[0])


def load(path):
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def save(path, arrays, compressed=True):
    """np.savez[_compressed] under exactly `path` (numpy appends .npz otherwise)."""
    with open(path, "wb") as f:
        (np.savez_compressed if compressed else np.savez)(f, **arrays)
    return path


def dataset_with(name, coll_dir, filename, arrays=None, special=None):
    """A copy of the synthetic dataset whose train split of coll_dir also holds filename:
    `arrays` saved there, or `special(path)` making it."""
    root = os.path.join(TMP, name)
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(DATA, root, symlinks=True)
    path = os.path.join(root, "npz", coll_dir, "train", filename)
    if arrays is not None:
        save(path, arrays)
    else:
        special(path)
    return root, path


def write_bomb(path):
    """A valid tile graph whose node_feat (BOMB_ROWS, 140) zeros deflate to ~1 MB."""
    hdr = io.BytesIO()
    np.lib.format.write_array_header_1_0(hdr, {"descr": "<f4", "fortran_order": False,
                                               "shape": (BOMB_ROWS, 140)})
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        with z.open("node_feat.npy", "w", force_zip64=True) as f:
            f.write(hdr.getvalue())
            chunk = bytes(8 << 20)
            left = BOMB_ROWS * 140 * 4
            while left:
                n = min(left, len(chunk))
                f.write(chunk[:n])
                left -= n
        small = {"node_opcode": np.zeros(BOMB_ROWS, np.uint8),
                 "edge_index": np.zeros((0, 2), np.int64),
                 "config_feat": np.ones((4, 24), np.float32),
                 "config_runtime": np.arange(1, 5, dtype=np.int64) * 1000,
                 "config_runtime_normalizers": np.full(4, 1000, np.int64)}
        for k, v in small.items():
            b = io.BytesIO()
            np.save(b, v)
            z.writestr(k + ".npy", b.getvalue())
    return path


def corrupt_crc(path, key):
    """Flips the CRC-32 of member key.npy in its local header and the central directory."""
    raw = bytearray(open(path, "rb").read())
    name = (key + ".npy").encode()
    for sig, off_crc, off_len, off_name in ((b"PK\x03\x04", 14, 26, 30),
                                            (b"PK\x01\x02", 16, 28, 46)):
        i = 0
        while True:
            i = raw.find(sig, i)
            if i < 0:
                break
            nlen = struct.unpack_from("<H", raw, i + off_len)[0]
            if raw[i + off_name:i + off_name + nlen] == name:
                raw[i + off_crc] ^= 0xFF
            i += 4
    open(path, "wb").write(bytes(raw))
    return path


# ---- checks ------------------------------------------------------------------


def check_fifos():
    d = os.path.join(TMP, "fifo")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for name in ("a.npz", "a.npy"):
        os.mkfifo(os.path.join(d, name))
        fails("info on a FIFO %s" % name, ["info", os.path.join(d, name)], ["FIFO"])
    fails("check on a FIFO .npz", ["check", os.path.join(d, "a.npz")], ["FIFO"])
    # cache entries: the marker, or one array, a FIFO
    cache = os.path.join(TMP, "fifo_cache")
    shutil.rmtree(cache, ignore_errors=True)
    run("cache", DATA, "--out", cache)
    entry = [os.path.join(r, x) for r, ds, _ in os.walk(cache) for x in ds if x.endswith(".pcc")]
    expect(len(entry) >= 2, "cache entries made: %r" % entry)
    if len(entry) >= 2:
        marker = os.path.join(entry[0], "perfcast_cache.json")
        os.remove(marker)
        os.mkfifo(marker)
        arr = os.path.join(entry[1], "node_feat.npy")
        os.remove(arr)
        os.mkfifo(arr)
        for e in entry[:2]:
            fails("info on a .pcc with a FIFO inside", ["info", e], ["FIFO"])
            fails("check on a .pcc with a FIFO inside", ["check", e], ["FIFO"])
    root, fifo = dataset_with("fifo_tree", "tile/xla", "zz_fifo.npz", special=os.mkfifo)
    fails("check on a tree holding a FIFO", ["check", "--quiet", root], [fifo, "FIFO"])
    fails("train on data holding a FIFO", ["train", "--data", root, "--collection", "tile:xla",
                                            "--out", os.path.join(TMP, "m_fifo.st"), *TRAIN],
          [fifo, "FIFO"], timeout=60)


def check_non_regular():
    def make(path):
        os.mkdir(path)
        os.symlink(os.path.join(os.path.dirname(path), "nowhere.npz"),
                   os.path.join(os.path.dirname(path), "zz_dangling.npz"))
    root, d = dataset_with("nonreg_tree", "tile/xla", "zz_dir.npz", special=make)
    text = fails("check on a dir and a dangling link named *.npz", ["check", "--quiet", root],
                 [d, "is a directory", "zz_dangling.npz", "dangling symbolic link"])
    expect("2 with problems" in text, "both entries reported: " + text)
    fails("train on data holding a dir named *.npz", ["train", "--data", root, "--collection",
          "tile:xla", "--out", os.path.join(TMP, "m_nonreg.st"), *TRAIN], ["zz_d"], timeout=60)


def check_bomb():
    bomb = write_bomb(os.path.join(TMP, "bomb.npz"))
    size = os.path.getsize(bomb)
    inflated_mb = BOMB_ROWS * 140 * 4 / 1048576.0
    print("  zip bomb: %d bytes on disk, node_feat inflates to %.0f MiB" % (size, inflated_mb))
    expect(size < 4 << 20, "bomb is small: %d bytes" % size)
    need = [bomb, "node_feat.npy", "64.0 MiB", "--max-memory"]
    fails("check --max-memory 64MiB on a zip bomb", ["check", "--max-memory", "64MiB", bomb],
          need, max_rss=200)
    fails("info --max-memory 64MiB on a zip bomb", ["info", "--max-memory", "64MiB", bomb],
          need, max_rss=200, timeout=30)
    # the default budget fits it: check and info stream it in bounded memory
    bound = inflated_mb * 0.45
    passes("check on a zip bomb (default budget, streamed)", ["check", bomb], 60, bound)
    passes("info on a zip bomb (default budget, streamed)", ["info", bomb], 60, bound)
    root, _ = dataset_with("bomb_tree", "tile/xla", "zz_bomb.npz",
                           special=lambda p: shutil.copy(bomb, p))
    fails("train --max-memory 64MiB with a zip bomb in the data",
          ["train", "--data", root, "--collection", "tile:xla", "--out",
           os.path.join(TMP, "m_bomb.st"), "--max-memory", "64MiB", *TRAIN],
          ["zz_bomb.npz", "node_feat.npy", "64.0 MiB"], timeout=60, max_rss=300)
    inference_budget(bomb, root)
    os.remove(bomb)
    shutil.rmtree(root, ignore_errors=True)


def inference_budget(bomb, root):
    """eval, predict and rank: --max-memory bounds the checkpoint's and the graphs' loads."""
    model = os.path.join(TMP, "m_budget.st")
    passes("train a model for eval/predict/rank", ["train", "--data", DATA, "--collection",
                                                   "tile:xla", "--out", model, *TRAIN])
    csv = os.path.join(TMP, "budget.csv")
    cmds = {"eval": ["eval", "--model", model, "--data", DATA],
            "predict": ["predict", "--model", model, "--data", DATA, "--out", csv],
            "rank": ["rank", "--model", model, first("tile/xla", "valid")]}
    for name, args in cmds.items():
        passes(name + " (default budget)", args)
        fails(name + " --max-memory 16KiB (the checkpoint)", args + ["--max-memory", "16KiB"],
              [model, "--max-memory budget of 16"])
        fails(name + " --max-memory 0.00001 (GiB, the checkpoint)",
              args + ["--max-memory", "0.00001"], [model, "--max-memory budget of 10"])
    # a budget the header fits but the parameters (600 KiB in memory) do not
    big = os.path.join(TMP, "m_budget64.st")
    passes("train a hidden-64 model", ["train", "--data", DATA, "--collection", "tile:xla",
                                       "--out", big, *TRAIN, "--hidden", "64", "--layers", "2"])
    fails("rank --max-memory 200KiB (the model's parameters)",
          ["rank", "--model", big, first("tile/xla", "valid"), "--max-memory", "200KiB"],
          [big, "the model's parameters", "--max-memory budget of 200 KiB"])
    need = ["zz_bomb.npz", "node_feat.npy", "64.0 MiB", "--max-memory"]
    if os.path.exists(csv):
        os.remove(csv)
    fails("eval --max-memory 64MiB with a zip bomb in the split",
          ["eval", "--model", model, "--data", root, "--split", "train", "--max-memory", "64MiB"],
          need, timeout=60, max_rss=300)
    fails("predict --max-memory 64MiB with a zip bomb in the split",
          ["predict", "--model", model, "--data", root, "--split", "train", "--out", csv,
           "--max-memory", "64MiB"], need, timeout=60, max_rss=300)
    expect(not os.path.exists(csv), "predict left %s behind" % csv)
    fails("rank --max-memory 64MiB on a zip bomb", ["rank", "--model", model, bomb,
                                                    "--max-memory", "64MiB"],
          [bomb, "node_feat.npy", "64.0 MiB", "--max-memory"], timeout=60, max_rss=300)
    p = run("eval", "--model", model, "--data", DATA, "--max-memory", "nonsense")
    expect(p.returncode == 2 and "--max-memory expects a size" in p.stderr,
           "eval --max-memory nonsense: %d %s" % (p.returncode, p.stderr))


def bad_variants():
    """(label, collection dir, collection, arrays, what check says) that check must fail."""
    t, lay = load(first("tile/xla")), load(first("layout/xla/random"))
    out = []
    for w in (139, 141):
        a = dict(t)
        a["node_feat"] = np.zeros((t["node_feat"].shape[0], w), np.float32)
        out.append(("node_feat width %d" % w, "tile/xla", "tile:xla", a, "the models need 140"))
    for w in (23, 25):
        a = dict(t)
        a["config_feat"] = np.zeros((t["config_feat"].shape[0], w), np.float32)
        out.append(("config_feat width %d" % w, "tile/xla", "tile:xla", a, "models need 24"))
    a = dict(lay)
    c, nc, _ = lay["node_config_feat"].shape
    a["node_config_feat"] = np.zeros((c, nc, 17), np.float32)
    out.append(("node_config_feat width 17", "layout/xla/random", "layout:xla:random", a,
                "models need 18"))
    a = dict(t)
    e = t["edge_index"].copy()
    e[0, 0] = t["node_feat"].shape[0] + 5
    a["edge_index"] = e
    out.append(("edge out of range", "tile/xla", "tile:xla", a, "endpoint outside"))
    a = dict(t)
    r = t["config_runtime"].copy()
    r[1] = -3
    a["config_runtime"] = r
    out.append(("negative runtime", "tile/xla", "tile:xla", a, "is not positive"))
    return out


def check_agreement():
    """What check fails, train refuses; what check passes, trains."""
    passes("check on the clean data", ["check", "--quiet", DATA])
    passes("train on the clean data", ["train", "--data", DATA, "--collection", "tile:xla",
                                       "--out", os.path.join(TMP, "m_ok.st"), *TRAIN])
    for i, (label, cdir, coll, arrays, says) in enumerate(bad_variants()):
        root, path = dataset_with("bad%d" % i, cdir, "zz_bad.npz", arrays=arrays)
        fails("check: " + label, ["check", path], [path, says])
        fails("train: " + label, ["train", "--data", root, "--collection", coll, "--out",
                                  os.path.join(TMP, "m_bad.st"), *TRAIN], ["zz_bad.npz"],
              timeout=120)
        shutil.rmtree(root, ignore_errors=True)


def check_crc():
    """A CRC mismatch fails check (streamed, zlib), info and train (whole, libdeflate) alike."""
    t = load(first("tile/xla"))
    for compressed in (True, False):
        kind = "deflated" if compressed else "stored"
        root, path = dataset_with("crc_" + kind, "tile/xla", "zz_crc.npz",
                                  special=lambda p: save(p, t, compressed))
        corrupt_crc(path, "config_feat")
        fails("check: CRC mismatch (%s)" % kind, ["check", path], [path, "CRC"])
        fails("info: CRC mismatch (%s)" % kind, ["info", path], [path, "CRC"])
        fails("train: CRC mismatch (%s)" % kind, ["train", "--data", root, "--collection",
              "tile:xla", "--out", os.path.join(TMP, "m_crc.st"), *TRAIN], ["zz_crc.npz", "CRC"],
              timeout=120)
        shutil.rmtree(root, ignore_errors=True)


def check_broken_cache():
    cache = os.path.join(TMP, "cache_broken")
    shutil.rmtree(cache, ignore_errors=True)
    run("cache", DATA, "--out", cache)
    entry = sorted(os.path.join(r, x) for r, ds, _ in os.walk(cache) for x in ds
                   if x.endswith(".pcc"))[0]
    passes("info on a good .pcc", ["info", entry])
    with open(os.path.join(entry, "node_feat.npy"), "r+b") as f:
        f.truncate(100)
    fails("info on a .pcc with a truncated array", ["info", entry], [entry])
    with open(os.path.join(entry, "perfcast_cache.json"), "w") as f:
        f.write("{not json")
    fails("info on a .pcc with a broken marker", ["info", entry], [entry])


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    p = run("synth", "--out", DATA, "--scale", "tiny", "--seed", "3")
    if p.returncode != 0:
        print("FAIL: synth: " + p.stderr)
        return 1
    run_checks([check_fifos, check_non_regular, check_bomb, check_agreement, check_crc,
                check_broken_cache])
    rc = report("readers: FIFOs, non-regular entries, zip bombs, check/train agreement, CRC "
                "and broken caches all handled")
    if rc == 0:
        shutil.rmtree(TMP, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
