"""The progress line of long commands (src/cli/progress.c): on a terminal,
synth, cache, import, train (its data loading), eval, predict and tune draw one
self-overwriting stderr line with counts ("perfcast eval: 2/2 graphs scored,
...") ended by a newline; with stderr a pipe or a file, or under --json,
nothing of it appears. The terminal is a pty (Python's pty module), stdout a
pipe, so the two can be told apart.
"""
import glob
import os
import pty
import re
import select
import shutil
import subprocess
import sys

from clitest import CLI, FAILS, expect, expect_rc, report, run, run_checks

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_progress")
DATA = os.path.join(TMP, "data")
MODEL = os.path.join(TMP, "tile.safetensors")
HLO = os.path.join(TMP, "two.hlo")
HLO_TEXT = """HloModule first

ENTRY main {
  a = f32[128,64]{1,0} parameter(0)
  b = f32[64,32]{1,0} parameter(1)
  ROOT d = f32[128,32]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

HloModule second

ENTRY main {
  a = f32[64,64]{1,0} parameter(0)
  ROOT n = f32[64,64]{1,0} negate(a)
}
"""
# "perfcast CMD: DONE/TOTAL WHAT[, RATE/s][, ETA T]" or, finished, "... in T"; then
# "; NOTE" when the command says more (tune: the best so far)
LINE = re.compile(r"^perfcast (\w+): (\d+)/(\d+) ([a-z ]+?)(?:, [\d.]+/s)?(?:, ETA \S+)?"
                  r"(?: in (\S+))?(?:; .*)?$")


def run_tty(*args, timeout=300):
    """Runs the CLI with stderr on a pty: (exit code, stdout, stderr as the terminal got it)."""
    master, slave = pty.openpty()
    p = subprocess.Popen([CLI, *args], stdout=subprocess.PIPE, stderr=slave,
                         stdin=subprocess.DEVNULL)
    os.close(slave)
    err = b""
    while True:
        r, _, _ = select.select([master], [], [], timeout)
        if not r:
            p.kill()
            FAILS.append("%s: no output for %d s" % (" ".join(args), timeout))
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        err += chunk
    out = p.stdout.read().decode()
    p.wait()
    os.close(master)
    return p.returncode, out, err.decode(errors="replace").replace("\r\n", "\n")


def lines_of(err, cmd):
    """The progress lines of `cmd` as drawn (every redraw), parsed."""
    got = []
    for part in re.split(r"[\r\n]", err):
        part = part.replace("\x1b[K", "")
        if part.startswith("perfcast %s: " % cmd):
            m = LINE.match(part)
            if m:
                got.append((int(m.group(2)), int(m.group(3)), m.group(4), m.group(5)))
    return got


def expect_progress(err, cmd, what, total=None):
    """A finished line ("... in T") of `what` with done == total, after live ones."""
    got = [g for g in lines_of(err, cmd) if g[2] == what]
    expect(got, "%s: no '%s' progress line on the terminal:\n%r" % (cmd, what, err[-2000:]))
    if not got:
        return
    done, tot, _, final = got[-1]
    expect(final is not None and done == tot, "%s: the last '%s' line is not a finished one "
           "with done == total: %r" % (cmd, what, got[-1]))
    expect(total is None or tot == total, "%s: %s total %d, expected %d" % (cmd, what, tot,
                                                                             total or 0))
    counts = [g[0] for g in got]
    expect(counts == sorted(counts), "%s: %s counts go backwards: %r" % (cmd, what, counts))
    # the finished line ends with a newline: nothing else is glued to it
    expect(re.search(r"perfcast %s: \d+/\d+ %s in \S+\n" % (cmd, what), err),
           "%s: the finished '%s' line does not end with a newline: %r" % (cmd, what, err[-600:]))


def expect_quiet(p, what):
    """Nothing of a progress line on a pipe."""
    expect("\r" not in p.stderr and "\x1b[K" not in p.stderr and
           not re.search(r"\d+/\d+ [a-z ]+(, |\n| in )", p.stderr),
           "%s: progress on a pipe: %r" % (what, p.stderr[-1000:]))


def check_synth_cache():
    rc, out, err = run_tty("synth", "--out", os.path.join(TMP, "tty_synth"), "--scale", "tiny",
                           "--seed", "4", "--collections", "tile:xla")
    expect(rc == 0, "synth on a terminal: exit %d\n%s" % (rc, err))
    expect_progress(err, "synth", "graphs written", total=12)
    expect("graphs written" not in out, "synth: progress on stdout")
    # --json: no progress even on a terminal
    rc, out, err = run_tty("synth", "--out", os.path.join(TMP, "tty_synth_json"), "--scale",
                           "tiny", "--seed", "4", "--collections", "tile:xla", "--json")
    expect(rc == 0 and "graphs written" not in err and "\r" not in err,
           "synth --json on a terminal drew progress: %r" % err)
    p = run("synth", "--out", os.path.join(TMP, "pipe_synth"), "--scale", "tiny", "--seed", "4",
            "--collections", "tile:xla")
    expect_rc(p, 0, "synth on a pipe")
    expect_quiet(p, "synth")

    cache = os.path.join(TMP, "cache")
    rc, out, err = run_tty("cache", DATA, "--out", cache)
    expect(rc == 0, "cache on a terminal: exit %d\n%s" % (rc, err))
    expect_progress(err, "cache", "files cached")
    n = sum(len(fs) for _, _, fs in os.walk(os.path.join(DATA, "npz")))
    expect("%d built, 0 up to date, 0 failed" % n in out, "cache counts: %r" % out)
    p = run("cache", DATA, "--out", cache)
    expect_rc(p, 0, "cache again on a pipe")
    expect_quiet(p, "cache")
    expect("0 built, %d up to date, 0 failed" % n in p.stdout, "cache again: %r" % p.stdout)
    p = run("cache", DATA, "--out", cache, "--json")
    j = __import__("json").loads(p.stdout)
    expect((j["files"], j["built"], j["up_to_date"], j["failed"]) == (n, 0, n, 0),
           "cache --json counts: %r" % j)
    # a broken file: counts on stderr, the error on its own line
    bad = os.path.join(TMP, "bad_data")
    shutil.copytree(DATA, bad)
    with open(os.path.join(bad, "npz", "tile", "xla", "train", "zz_broken.npz"), "wb") as f:
        f.write(b"PK\x03\x04 broken")
    rc, out, err = run_tty("cache", bad, "--out", os.path.join(TMP, "bad_cache"))
    expect(rc == 1, "cache of a broken file: exit %d" % rc)
    expect("%d built, 0 up to date, 1 failed" % n in err, "cache failure counts: %r" % err)
    expect(re.search(r"(^|\n)perfcast cache: error: ", err),
           "cache: the error is not on its own line: %r" % err[-1000:])


def check_import():
    with open(HLO, "w") as f:
        f.write(HLO_TEXT)
    rc, out, err = run_tty("import", HLO, "--out", os.path.join(TMP, "imp_tty"))
    expect(rc == 0, "import on a terminal: exit %d\n%s" % (rc, err))
    expect_progress(err, "import", "modules read", total=2)
    expect_progress(err, "import", "files written", total=2)
    p = run("import", HLO, "--out", os.path.join(TMP, "imp_pipe"))
    expect_rc(p, 0, "import on a pipe")
    expect_quiet(p, "import")


def check_train_eval_predict():
    rc, out, err = run_tty("train", "--data", DATA, "--collection", "tile:xla", "--out", MODEL,
                           "--epochs", "1", "--threads", "1")
    expect(rc == 0, "train on a terminal: exit %d\n%s" % (rc, err))
    expect_progress(err, "train", "train graphs loaded", total=8)
    expect_progress(err, "train", "valid graphs loaded", total=2)
    p = run("train", "--data", DATA, "--collection", "tile:xla", "--out",
            os.path.join(TMP, "pipe.safetensors"), "--epochs", "1", "--threads", "1")
    expect_rc(p, 0, "train on a pipe")
    expect_quiet(p, "train")
    if rc != 0:
        return
    rc, out, err = run_tty("eval", "--model", MODEL, "--data", DATA)
    expect(rc == 0, "eval on a terminal: exit %d\n%s" % (rc, err))
    expect_progress(err, "eval", "graphs loaded", total=2)
    expect_progress(err, "eval", "graphs scored", total=2)
    expect("tile_score" in out, "eval: no result on stdout: %r" % out)
    rc, out, err = run_tty("eval", "--model", MODEL, "--data", DATA, "--json")
    expect(rc == 0 and "graphs" not in err, "eval --json on a terminal drew progress: %r" % err)
    p = run("eval", "--model", MODEL, "--data", DATA)
    expect_rc(p, 0, "eval on a pipe")
    expect_quiet(p, "eval")

    rc, out, err = run_tty("predict", "--model", MODEL, "--data", DATA, "--split", "test",
                           "--out", os.path.join(TMP, "tty.csv"))
    expect(rc == 0, "predict on a terminal: exit %d\n%s" % (rc, err))
    expect_progress(err, "predict", "graphs scored", total=2)
    p = run("predict", "--model", MODEL, "--data", DATA, "--split", "test", "--out",
            os.path.join(TMP, "pipe.csv"))
    expect_rc(p, 0, "predict on a pipe")
    expect_quiet(p, "predict")
    # tune: candidates scored (--max-scored gives the total), never on a pipe or under --json
    tfile = sorted(glob.glob(os.path.join(DATA, "npz", "tile", "xla", "valid", "*.npz")))[0]
    rc, out, err = run_tty("tune", "--model", MODEL, tfile, "--max-scored", "64", "--batch", "16")
    expect(rc == 0, "tune on a terminal: exit %d\n%s" % (rc, err))
    got = [g for g in lines_of(err, "tune") if g[2] == "candidates scored"]
    expect(got and got[-1][3] is not None and got[-1][1] == 64,
           "tune: no finished 'candidates scored' line of 64: %r" % err[-1000:])
    rc, out, err = run_tty("tune", "--model", MODEL, tfile, "--max-scored", "64", "--json")
    expect(rc == 0 and "candidates" not in err and "\r" not in err,
           "tune --json on a terminal drew progress: %r" % err)
    p = run("tune", "--model", MODEL, tfile, "--max-scored", "64")
    expect_rc(p, 0, "tune on a pipe")
    expect_quiet(p, "tune")
    # stderr a file: nothing either
    with open(os.path.join(TMP, "err.txt"), "w+") as f:
        q = subprocess.run([CLI, "eval", "--model", MODEL, "--data", DATA],
                           stdout=subprocess.DEVNULL, stderr=f)
        f.seek(0)
        text = f.read()
    expect(q.returncode == 0 and text == "", "eval with stderr a file wrote %r" % text)


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    p = run("synth", "--out", DATA, "--scale", "tiny", "--seed", "3")
    if p.returncode != 0:
        print("synth failed:", p.stderr)
        return 1
    run_checks([check_synth_cache, check_import, check_train_eval_predict])
    return report("progress lines: on a terminal only, with counts")


if __name__ == "__main__":
    sys.exit(main())
