#!/usr/bin/env python3
"""Outputs that cannot be lost, torn, doubled or aimed at an input (issue #18).

- A command whose standard output cannot be written (> /dev/full) exits non-zero
  with a message.
- One training per --out: while another process holds the output's lock
  (flock on "<dir>/.<base>.lock", taken here with Python's fcntl) train fails at
  once naming it; the same for `perfcast cache` on a cache root.
- Outputs over inputs are refused before any work, the input untouched:
  train --out onto a dataset file, predict --out onto the model,
  roofline --svg onto the HLO.
- Temporaries a killed run left (".<base>.<dead pid>.tmpXXXXXX") are removed
  by the next write of that output; a live process's are kept.
- A cache entry without its marker (an older perfcast killed mid-replace) is
  rebuilt instead of refused forever.

Environment (tests/CMakeLists.txt): PERFCAST, PC_TEST_TMP.
"""
import fcntl
import subprocess
import glob
import os
import shutil
import sys

from clitest import FAILS, expect, expect_rc, report, run, run_checks

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_outputs")
DATA = os.path.join(TMP, "data")
TRAIN = ["--epochs", "1", "--hidden", "8", "--layers", "1", "--threads", "2",
         "--progress", "never"]
HLO = """HloModule m
ENTRY e {
  a = f32[64,64] parameter(0)
  b = f32[64,64] parameter(1)
  ROOT d = f32[64,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def check_stdout_errors():
    for args in (["chips"], ["chips", "--json"]):
        with open("/dev/full", "w") as full:
            p = subprocess.run([os.environ["PERFCAST"], *args], stdout=full,
                               stderr=subprocess.PIPE, text=True, timeout=60)
        expect(p.returncode != 0 and "standard output" in p.stderr,
               "%s > /dev/full: exit %d, %r" % (args, p.returncode, p.stderr))


def held(path):
    """An exclusive flock on path (a file created if missing, or a folder), as another
    perfcast would hold it."""
    fd = os.open(path, os.O_RDONLY if os.path.isdir(path) else os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def check_locks():
    out = os.path.join(TMP, "m.st")
    fd = held(os.path.join(TMP, ".m.st.lock"))
    p = run("train", "--data", DATA, "--collection", "tile:xla", "--out", out, *TRAIN)
    os.close(fd)
    expect(p.returncode == 1 and "in use by another perfcast" in p.stderr,
           "train with its output locked: exit %d, %r" % (p.returncode, p.stderr))
    expect(not os.path.exists(out), "a refused train wrote its output")
    p = run("train", "--data", DATA, "--collection", "tile:xla", "--out", out, *TRAIN,
            timeout=300)
    expect_rc(p, 0, "train once the lock is free")
    expect(not os.path.exists(os.path.join(TMP, ".m.st.lock")), "the lock file is removed")
    cache = os.path.join(TMP, "cache")
    os.makedirs(cache)
    fd = held(cache)
    p = run("cache", DATA, "--out", cache)
    os.close(fd)
    expect(p.returncode == 1 and "in use by another perfcast" in p.stderr,
           "cache with its root locked: exit %d, %r" % (p.returncode, p.stderr))
    expect_rc(run("cache", DATA, "--out", cache), 0, "cache once the lock is free")


def check_aliases():
    f = sorted(glob.glob(os.path.join(DATA, "npz", "tile", "xla", "train", "*.npz")))[0]
    before = open(f, "rb").read()
    p = run("train", "--data", DATA, "--collection", "tile:xla", "--out", f, *TRAIN)
    expect(p.returncode != 0 and "refusing to overwrite an input" in p.stderr,
           "train --out onto a dataset file: exit %d, %r" % (p.returncode, p.stderr))
    expect(open(f, "rb").read() == before, "the dataset file is untouched")
    model = os.path.join(TMP, "m.st")
    mb = open(model, "rb").read()
    p = run("predict", "--model", model, "--data", DATA, "--split", "valid", "--out", model)
    expect(p.returncode == 2 and "refusing to overwrite an input" in p.stderr,
           "predict --out onto the model: exit %d, %r" % (p.returncode, p.stderr))
    expect(open(model, "rb").read() == mb, "the model is untouched")
    hlo = os.path.join(TMP, "m.hlo")
    open(hlo, "w").write(HLO)
    p = run("roofline", "--chip", "tpu-v5e", "--hlo", hlo, "--svg", hlo)
    expect(p.returncode == 2 and "refusing to overwrite" in p.stderr,
           "roofline --svg onto the HLO: exit %d, %r" % (p.returncode, p.stderr))
    expect(open(hlo).read() == HLO, "the HLO is untouched")


def check_stale_temporaries():
    out = os.path.join(TMP, "p.csv")
    dead = os.path.join(TMP, ".p.csv.99999999.tmpAbC123")
    alive = os.path.join(TMP, ".p.csv.%d.tmpXyZ789" % os.getpid())
    for f in (dead, alive):
        open(f, "w").write("left by a killed run")
    p = run("predict", "--model", os.path.join(TMP, "m.st"), "--data", DATA, "--split",
            "valid", "--out", out)
    expect_rc(p, 0, "predict")
    expect(os.path.isfile(out), "predict wrote its CSV")
    expect(not os.path.exists(dead), "a dead process's temporary is removed")
    expect(os.path.exists(alive), "a live process's temporary is kept")
    os.unlink(alive)
    left = [f for f in os.listdir(TMP) if ".tmp" in f]
    expect(not left, "no temporaries left: %r" % left)


def check_cache_repair():
    cache = os.path.join(TMP, "cache")
    markers = sorted(glob.glob(os.path.join(cache, "**", "*.pcc", "*.json"), recursive=True))
    expect(markers, "the cache has entries with markers")
    if not markers:
        return
    os.unlink(markers[0])  # half-replaced by an older perfcast: arrays without a marker
    p = run("cache", DATA, "--out", cache)
    expect_rc(p, 0, "cache repairs an entry without its marker")
    expect(os.path.isfile(markers[0]), "the entry is rebuilt with its marker")
    left = [d for d in glob.glob(os.path.join(cache, "**", "*"), recursive=True)
            if ".tmp" in d or ".old." in d]
    expect(not left, "no temporary or old entries left: %r" % left)


def check_concurrent():
    """Two `perfcast cache` runs at once, five times, and two trainings on one --out: one
    wins, the other either finishes after it or fails at once naming the lock; every entry
    left loads (`info`), no temporary is left, and the model left is whole."""
    cli = os.environ["PERFCAST"]
    cache = os.path.join(TMP, "race_cache")
    for trial in range(5):
        shutil.rmtree(cache, ignore_errors=True)
        ps = [subprocess.Popen([cli, "cache", DATA, "--out", cache, "--threads", "1"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
              for _ in range(2)]
        outs = [p.communicate(timeout=300) for p in ps]
        rcs = [p.returncode for p in ps]
        expect(0 in rcs and all(rc == 0 or (rc == 1 and "in use by another perfcast" in o[1])
                                for rc, o in zip(rcs, outs)),
               "cache race %d: exits %r, %r" % (trial, rcs, [o[1] for o in outs]))
        entries = glob.glob(os.path.join(cache, "**", "*.pcc"), recursive=True)
        expect(entries, "cache race %d: no entries" % trial)
        for e in entries:
            p = run("info", e)
            expect(p.returncode == 0, "cache race %d: %s does not load: %s" % (trial, e, p.stderr))
        left = [d for d in glob.glob(os.path.join(cache, "**", "*"), recursive=True)
                if ".tmp" in d or ".old." in d]
        expect(not left, "cache race %d: left %r" % (trial, left))
    out = os.path.join(TMP, "race.st")
    args = [cli, "train", "--data", DATA, "--collection", "tile:xla", "--out", out, *TRAIN]
    ps = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
          for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in ps]
    rcs = [p.returncode for p in ps]
    expect(0 in rcs and all(rc == 0 or (rc == 1 and "in use by another perfcast" in o[1])
                            for rc, o in zip(rcs, outs)),
           "train race: exits %r, %r" % (rcs, [o[1] for o in outs]))
    p = run("eval", "--model", out, "--data", DATA)
    expect_rc(p, 0, "the model left by the train race loads")


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    expect_rc(run("synth", "--out", DATA, "--scale", "tiny", "--seed", "3", "--threads", "2",
                  "--collections", "tile:xla"), 0, "synth")
    if FAILS:
        return report("")
    run_checks([check_stdout_errors, check_locks, check_aliases, check_stale_temporaries,
                check_cache_repair, check_concurrent])
    code = report("outputs: ok")
    if not FAILS:
        shutil.rmtree(TMP, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
