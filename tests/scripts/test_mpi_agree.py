#!/usr/bin/env python3
"""MPI agreement and liveness (issue #18 item 5).

- eval and predict: ranks given another checkpoint, or a dataset with one
  file fewer, fail at once with a message naming the difference (rank 0's
  message, broadcast so every rank prints it); no CSV is written.
- A rank stopped with SIGSTOP mid-training ends the job within the
  collective timeout (here PERFCAST_MPI_TIMEOUT=3, the fallback when
  --mpi-timeout is not given) with a message naming the collective and the
  timeout, instead of hanging; the waiting rank sleeps while it waits (its
  CPU share is printed, not asserted).
- Under --json the disagreement is the error's JSON object.
- --mpi-timeout's and PERFCAST_MPI_TIMEOUT's values are checked, and the
  flag wins over the variable.

Train's own agreement (--hidden, one train file fewer) is in test_mpi.py.
Skipped (exit 77) when mpirun is missing or perfcast was built without MPI.
Environment: PERFCAST, PC_TEST_TMP.
"""
import os
import shutil
import signal
import subprocess
import sys
import time

from clitest import CLI, FAILS, expect, expect_rc, run

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_mpi_agree")
MPIRUN = shutil.which("mpirun")


def env():
    e = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1")
    # Open MPI's dlopen'ed components leak at exit (see test_mpi.py); no effect without ASan
    e["ASAN_OPTIONS"] = (e.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":")
    return e


def two_ranks(args0, args1, timeout=120):
    """rank 0 runs perfcast args0, rank 1 perfcast args1."""
    cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "1", CLI, *args0, ":",
           "-np", "1", CLI, *args1]
    t0 = time.monotonic()
    q = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env())
    return q, time.monotonic() - t0


def cpu_s(pid):
    """user + system CPU seconds of a process (/proc/PID/stat)."""
    try:
        f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def stalled_rank(data):
    out = os.path.join(TMP, "stall.st")
    cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "2", CLI, "train",
           "--data", data, "--collection", "layout:xla:random", "--threads", "1",
           "--hidden", "16", "--epochs", "100000", "--patience", "100000", "--out", out]
    # the timeout from the environment (no --mpi-timeout): both ways of setting it reach
    # the same pc_dist_set_timeout, the flag's precedence is checked in main()
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=dict(env(), PERFCAST_MPI_TIMEOUT="3"))
    ranks = []
    for _ in range(300):  # up to 30 s for both ranks to start
        time.sleep(0.1)
        pids = subprocess.run(["pgrep", "-f", "perfcast train .*" + out], capture_output=True,
                              text=True).stdout.split()
        ranks = sorted(int(p) for p in pids if int(p) != job.pid)  # mpirun's line matches too
        if len(ranks) >= 2:
            break
    expect(len(ranks) >= 2, "found the job's two ranks: %r" % ranks)
    if len(ranks) < 2:
        job.kill()
        job.communicate()
        return
    time.sleep(1.5)  # into the training steps
    victim, waiter = ranks[-1], ranks[0]
    os.kill(victim, signal.SIGSTOP)
    t0 = time.monotonic()
    c0 = cpu_s(waiter)
    time.sleep(1.5)
    c1 = cpu_s(waiter)
    if c0 is not None and c1 is not None:
        print("waiting rank's CPU while the other is stopped: %.0f%%"
              % (100 * (c1 - c0) / 1.5))
    try:
        _, err = job.communicate(timeout=120)
        took = time.monotonic() - t0
        print("stopped rank: the job ended %.1f s after the SIGSTOP (timeout 3 s), exit %d"
              % (took, job.returncode))
        expect(job.returncode != 0, "a stalled rank fails the job (exit %d)" % job.returncode)
        expect("collective timeout of 3 s" in err and "MPI_I" in err,
               "the message names the timeout and the operation: %s" % err[-800:])
    except subprocess.TimeoutExpired:
        FAILS.append("job hung after a rank was stopped (PERFCAST_MPI_TIMEOUT=3)")
        job.kill()
        job.communicate()
    for p in ranks:  # nothing left behind, stopped or not
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


def main():
    if not MPIRUN:
        print("mpirun not found: skipped")
        sys.exit(77)
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    data = os.path.join(TMP, "data")
    expect_rc(run("synth", "--out", data, "--scale", "tiny", "--seed", "2"), 0, "synth")
    m16, m8 = os.path.join(TMP, "m16.st"), os.path.join(TMP, "m8.st")
    for m, h in ((m16, "16"), (m8, "8")):
        expect_rc(run("train", "--data", data, "--collection", "layout:xla:random", "--threads",
                      "1", "--hidden", h, "--epochs", "1", "--out", m), 0, "train --hidden " + h)
    q, _ = two_ranks(["eval", "--model", m16, "--data", data],
                     ["eval", "--model", m16, "--data", data])
    if "built without MPI" in q.stderr:
        print("perfcast built without MPI: skipped")
        sys.exit(77)
    expect_rc(q, 0, "eval, ranks agreeing")

    # one valid file fewer on rank 1; another checkpoint on rank 1
    vdir = "npz/layout/xla/random/valid"
    first = sorted(os.listdir(os.path.join(data, vdir)))[0]
    fewer = os.path.join(TMP, "fewer")
    shutil.copytree(data, fewer)
    os.unlink(os.path.join(fewer, vdir, first))
    csv = os.path.join(TMP, "p.csv")
    for what, a0, a1, needle in (
            ("eval, data", ["eval", "--model", m16, "--data", data],
             ["eval", "--model", m16, "--data", fewer],
             "rank 0 has layout:xla:random/%s=" % first),
            ("eval, model", ["eval", "--model", m16, "--data", data],
             ["eval", "--model", m8, "--data", data], "rank 1 has model 1="),
            ("eval, --split", ["eval", "--model", m16, "--data", data],
             ["eval", "--model", m16, "--data", data, "--split", "train"],
             "rank 1 has split=train, rank 0 has split=valid"),
            ("predict, data", ["predict", "--model", m16, "--data", data, "--split", "valid",
                               "--out", csv],
             ["predict", "--model", m16, "--data", fewer, "--split", "valid", "--out", csv],
             "rank 0 has layout:xla:random/%s=" % first),
            ("predict, model", ["predict", "--model", m16, "--data", data, "--out", csv],
             ["predict", "--model", m8, "--data", data, "--out", csv], "rank 1 has model 1=")):
        q, took = two_ranks(a0, a1)
        print("%s: exit %d after %.1f s" % (what, q.returncode, took))
        expect(q.returncode != 0 and "the ranks disagree: " + needle in q.stderr,
               "%s: exit %d, %s" % (what, q.returncode, q.stderr[-800:]))
        expect(not os.path.exists(csv), "%s: no CSV written" % what)

    # under --json the message still comes out, as the error's JSON (MPI_Abort runs no atexit)
    q, _ = two_ranks(["eval", "--json", "--model", m16, "--data", data],
                     ["eval", "--json", "--model", m8, "--data", data])
    expect(q.returncode != 0 and '{"error":{"message":"eval: the ranks disagree: rank 1 has '
           'model 1=' in q.stderr, "eval --json, model: exit %d, %s"
           % (q.returncode, q.stderr[-800:]))

    p = run("eval", "--model", m16, "--data", data, "--mpi-timeout", "-1")
    expect(p.returncode == 2 and "--mpi-timeout expects" in p.stderr,
           "--mpi-timeout -1 refused: %s" % p.stderr)
    expect_rc(run("eval", "--model", m16, "--data", data, "--mpi-timeout", "0.5"), 0,
              "--mpi-timeout without mpirun")
    bad_env = dict(os.environ, PERFCAST_MPI_TIMEOUT="soon")
    p = subprocess.run([CLI, "eval", "--model", m16, "--data", data], capture_output=True,
                       text=True, env=bad_env)
    expect(p.returncode != 0 and "PERFCAST_MPI_TIMEOUT='soon': expected seconds" in p.stderr,
           "a bad PERFCAST_MPI_TIMEOUT refused (exit %d): %s" % (p.returncode, p.stderr))
    p = subprocess.run([CLI, "eval", "--model", m16, "--data", data, "--mpi-timeout", "5"],
                       capture_output=True, text=True, env=bad_env)
    expect(p.returncode == 0, "--mpi-timeout wins over PERFCAST_MPI_TIMEOUT (exit %d): %s"
           % (p.returncode, p.stderr))

    stalled_rank(data)

    if FAILS:
        for f in FAILS:
            print("FAIL:", f)
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
