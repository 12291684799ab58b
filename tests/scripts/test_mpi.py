#!/usr/bin/env python3
"""Multi-process training and evaluation under mpirun (issue #7).

- 2 ranks x 1 graph per step train the same parameters as 1 process x 2
  graphs per step (--batch-graphs 2), same seed: compared after 4 optimizer
  steps on the saved training state (relative L2 distance and max |diff|).
- Only rank 0 logs: every epoch line appears once.
- eval and predict under mpirun give what one process gives.
- A rank that cannot read its data stops the whole job with a message
  (non-zero exit within the timeout: no hang).

Skipped (exit 77) when mpirun is missing or perfcast was built without MPI.
Environment: PERFCAST, PC_TEST_TMP, PC_PYTHON (numpy).
"""
import json
import os
import shutil
import signal
import time
import struct
import subprocess
import sys

import numpy as np

from clitest import CLI, FAILS, expect, expect_rc, run

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_mpi")
MPIRUN = shutil.which("mpirun")


def mpi(np_, *args, timeout=300):
    cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", str(np_), CLI, *args]
    env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1")
    # Open MPI's components (dlopen'ed, unloaded at MPI_Finalize, so their
    # frames show as "<unknown module>" and cannot be suppressed by name)
    # leak a little at exit; under ASan that aborts the rank. Leaks in our
    # own code on these paths are caught by the single-process tests.
    # always (a plain ctest in a sanitizer build sets no ASAN_OPTIONS); no effect without ASan
    env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def tensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    h.pop("__metadata__", None)
    dt = {"F32": np.float32, "I32": np.int32, "I64": np.int64}
    out = {}
    for k, v in h.items():
        s, e = v["data_offsets"]
        out[k] = np.frombuffer(b[8 + n + s:8 + n + e], dtype=dt[v["dtype"]]).reshape(v["shape"])
    return out


def params(path):
    t = tensors(path)
    return np.concatenate([t[k].ravel() for k in sorted(t) if k.startswith("param.")]).astype(
        np.float64)


def main():
    if not MPIRUN:
        print("mpirun not found: skipped")
        sys.exit(77)
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    data = os.path.join(TMP, "data")
    expect_rc(run("synth", "--out", data, "--scale", "tiny", "--seed", "2"), 0, "synth")
    common = ["--data", data, "--collection", "layout:xla:random", "--threads", "1",
              "--hidden", "16", "--epochs", "3", "--seed", "4"]
    one = os.path.join(TMP, "one.st")
    two = os.path.join(TMP, "two.st")
    p = run("train", *common, "--out", one, "--batch-graphs", "2", "--stop-after-steps", "4")
    expect_rc(p, 0, "1 process x 2 graphs")
    q = mpi(2, "train", *common, "--out", two, "--stop-after-steps", "4")
    if "built without MPI" in q.stderr:
        print("perfcast built without MPI: skipped")
        sys.exit(77)
    expect_rc(q, 0, "2 ranks x 1 graph")
    if os.path.isfile(one + ".state") and os.path.isfile(two + ".state"):
        a, b = params(one + ".state"), params(two + ".state")
        rel = np.linalg.norm(a - b) / np.linalg.norm(a)
        print("2 ranks vs 1 process after 4 steps: rel L2 %.3g, max |diff| %.3g"
              % (rel, np.abs(a - b).max()))
        expect(a.shape == b.shape, "same parameter count")
        expect(rel < 1e-5 and np.abs(a - b).max() < 1e-3,
               "2-rank parameters equal 1-process ones (rel L2 %.3g)" % rel)
    else:
        FAILS.append("training states missing: %s" % os.listdir(TMP))
    epochs = [l for l in q.stdout.splitlines() if l.startswith("epoch ")]
    expect(len(epochs) == len(set(epochs)) and len(epochs) >= 1,
           "rank 0 alone logs epochs: %r" % q.stdout)

    # a finished 2-rank run: its model evaluates the same under mpirun and alone
    full = os.path.join(TMP, "full.st")
    q = mpi(2, "train", *common, "--out", full)
    expect_rc(q, 0, "2-rank training to the end")
    expect(not os.path.exists(full + ".state"), "completed run leaves no state")
    e1 = run("eval", "--model", full, "--data", data, "--json")
    e2 = mpi(2, "eval", "--model", full, "--data", data, "--json")
    expect_rc(e1, 0, "eval")
    expect_rc(e2, 0, "eval under mpirun")
    try:
        r1, r2 = json.loads(e1.stdout), json.loads(e2.stdout)
        expect(r1["graphs"] == r2["graphs"] and abs(r1["metric"] - r2["metric"]) < 1e-9,
               "eval: %r vs %r" % (r1, r2))
        expect(all(abs(a - b) < 1e-9 for a, b in zip(r1["metric_ci95"], r2["metric_ci95"])),
               "eval: the interval over graphs does not depend on the ranks: %r vs %r"
               % (r1["metric_ci95"], r2["metric_ci95"]))
    except ValueError:
        FAILS.append("eval output: %r / %r" % (e1.stdout, e2.stdout))
    c1, c2 = os.path.join(TMP, "one.csv"), os.path.join(TMP, "two.csv")
    expect_rc(run("predict", "--model", full, "--data", data, "--out", c1), 0, "predict")
    expect_rc(mpi(2, "predict", "--model", full, "--data", data, "--out", c2), 0,
              "predict under mpirun")
    if os.path.isfile(c1) and os.path.isfile(c2):
        expect(open(c1).read() == open(c2).read(), "predict: same CSV from 2 ranks")

    # the interrupted 2-rank run resumes under mpirun and ends where the
    # uninterrupted one ended
    if os.path.isfile(two + ".state"):
        q = mpi(2, "train", *common, "--out", two, "--resume")
        expect_rc(q, 0, "2-rank --resume")
        expect(not os.path.exists(two + ".state"), "resumed run completed and removed its state")
        if os.path.isfile(two) and os.path.isfile(full):
            a, b = params(two), params(full)
            expect(a.shape == b.shape and np.abs(a - b).max() < 1e-6,
                   "resumed 2-rank model equals the uninterrupted one (max |diff| %.3g)"
                   % np.abs(a - b).max())

    # a rank killed mid-run ends the whole job (no hang)
    dead = os.path.join(TMP, "dead.st")
    cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "2", CLI, "train",
           *common[:-4], "--epochs", "100000", "--patience", "100000", "--out", dead]
    env = dict(os.environ)
    # always (a plain ctest in a sanitizer build sets no ASAN_OPTIONS); no effect without ASan
    env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":")
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=env)
    victim = None
    for _ in range(200):  # up to 20 s for both ranks to start
        time.sleep(0.1)
        pids = subprocess.run(["pgrep", "-f", "perfcast train .*" + dead], capture_output=True,
                              text=True).stdout.split()
        pids = [p for p in pids if int(p) != job.pid]  # mpirun's own command line matches too
        if len(pids) >= 2:
            victim = int(pids[-1])
            break
    expect(victim is not None, "found the ranks of the job to kill")
    if victim is not None:
        time.sleep(1.0)
        os.kill(victim, signal.SIGKILL)
    try:
        job.communicate(timeout=120)
        expect(job.returncode != 0, "a killed rank fails the job (exit %d)" % job.returncode)
    except subprocess.TimeoutExpired:
        job.kill()
        job.communicate()
        FAILS.append("job hung after a rank was killed")

    # a rank stopped mid-run (SIGSTOP): test_mpi_agree.py

    # a rank that cannot read its data stops the job (no hang)
    bad = os.path.join(TMP, "bad")
    shutil.copytree(data, bad)
    tdir = os.path.join(bad, "npz/layout/xla/random/train")
    files = sorted(os.listdir(tdir))
    with open(os.path.join(tdir, files[1]), "wb") as f:  # index 1: rank 1's lane
        f.write(b"PK\x03\x04 this is not a zip")
    q = mpi(2, "train", "--data", bad, "--collection", "layout:xla:random", "--threads", "1",
            "--out", os.path.join(TMP, "bad.st"), timeout=120)
    expect(q.returncode != 0, "a rank's unreadable file fails the job (exit %d)" % q.returncode)
    expect(files[1] in q.stderr, "the message names the file: %s" % q.stderr[-800:])
    expect(not os.path.exists(os.path.join(TMP, "bad.st")), "failed job wrote no model")

    # ranks that disagree stop before the first collective, naming the difference:
    # another --hidden on rank 1; a dataset with one train graph fewer on rank 1
    # (eval, predict and the stalled rank: test_mpi_agree.py)
    fewer = os.path.join(TMP, "fewer")
    shutil.copytree(data, fewer)
    os.unlink(os.path.join(fewer, "npz/layout/xla/random/train", files[0]))
    base = ["train", "--collection", "layout:xla:random", "--threads", "1", "--epochs", "1",
            "--out", os.path.join(TMP, "agree.st")]
    for what, r0, r1, needle in (
            ("--hidden", ["--data", data, "--hidden", "16"], ["--data", data, "--hidden", "32"],
             "rank 1 has hidden=32, rank 0 has hidden=16"),
            ("data", ["--data", data], ["--data", fewer],
             "rank 0 has train/%s=" % files[0])):
        cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "1", CLI, *base, *r0,
               ":", "-np", "1", CLI, *base, *r1]
        env = dict(os.environ, ASAN_OPTIONS=(os.environ.get("ASAN_OPTIONS", "") +
                                             ":detect_leaks=0").lstrip(":"))
        q = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
        expect(q.returncode != 0 and needle in q.stdout + q.stderr,
               "ranks with another %s: exit %d, %s" % (what, q.returncode, q.stderr[-600:]))
        expect(not os.path.exists(os.path.join(TMP, "agree.st")), "disagreeing ranks wrote a model")

    if FAILS:
        for f in FAILS:
            print("FAIL:", f)
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
