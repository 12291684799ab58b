"""More progress lines (src/cli/progress.c), drawn as test_progress.py checks them
(stderr on a pty): rank over several graphs ("graphs scored"), rank on one .npz
("configs scored", after each chunk the model scores), tune's best so far
("candidates scored; best so far: predicted gain G" for a layout graph, "...: score
S" for a tile graph; at the end the summary's gain or first score). Never on a pipe,
never under --json.
"""
import glob
import json
import os
import re
import shutil
import sys

from clitest import FAILS, expect, expect_rc, report, run, run_checks
from test_progress import expect_progress, expect_quiet, lines_of, run_tty

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_progress_more")
DATA = os.path.join(TMP, "data")
TILE = os.path.join(TMP, "tile.safetensors")
LAYOUT = os.path.join(TMP, "layout.safetensors")
HLO = os.path.join(TMP, "two_fusions.hlo")
HLO_TEXT = """HloModule two_fusions

fused_a {
  p0 = f32[128,64]{1,0} parameter(0)
  p1 = f32[64,32]{1,0} parameter(1)
  ROOT d = f32[128,32]{1,0} dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

fused_b {
  q0 = f32[128,32]{1,0} parameter(0)
  ROOT n = f32[128,32]{1,0} negate(q0)
}

ENTRY main {
  a = f32[128,64]{1,0} parameter(0)
  b = f32[64,32]{1,0} parameter(1)
  f = f32[128,32]{1,0} fusion(a, b), kind=kOutput, calls=fused_a
  ROOT g = f32[128,32]{1,0} fusion(f), kind=kLoop, calls=fused_b
}
"""
BEST = re.compile(r"perfcast tune: \d+/\d+ candidates scored[^\r\n]*; best so far: "
                  r"(predicted gain|score) (-?[\d.e+-]+|inf|nan)")


def check_rank():
    with open(HLO, "w") as f:
        f.write(HLO_TEXT)
    args = ["rank", "--model", TILE, HLO, "--candidates", "4", "--top", "2"]
    rc, out, err = run_tty(*args)
    expect(rc == 0, "rank on a terminal: exit %d\n%s" % (rc, err))
    expect_progress(err, "rank", "graphs scored", total=2)
    expect(out.count("kernel '") == 2 and "graphs scored" not in out,
           "rank: the rankings on stdout: %r" % out)
    rc, out, err = run_tty(*args, "--json")
    expect(rc == 0 and "graphs scored" not in err and "\r" not in err,
           "rank --json on a terminal drew progress: %r" % err)
    p = run(*args)
    expect_rc(p, 0, "rank on a pipe")
    expect_quiet(p, "rank")


def check_rank_npz():
    """One .npz: "configs scored" after each chunk of the model's scoring."""
    for model, coll in ((TILE, "tile:xla"), (LAYOUT, "layout:xla:random")):
        files = sorted(glob.glob(os.path.join(DATA, "npz", *coll.split(":"), "valid", "*.npz")))
        expect(files, "no %s graphs" % coll)
        if not files:
            continue
        p = run("rank", "--model", model, files[0], "--json", "--top", "1")
        configs = json.loads(p.stdout)["graphs"][0]["configs"] if p.returncode == 0 else None
        args = ["rank", "--model", model, files[0], "--top", "2"]
        rc, out, err = run_tty(*args)
        expect(rc == 0, "rank %s on a terminal: exit %d\n%s" % (coll, rc, err))
        expect_progress(err, "rank", "configs scored", total=configs)
        expect("config" in out and "configs scored" not in out,
               "rank %s: the ranking on stdout: %r" % (coll, out))
        rc, out, err = run_tty(*args, "--json")
        expect(rc == 0 and "configs scored" not in err and "\r" not in err,
               "rank --json on a terminal drew progress: %r" % err)
        p = run(*args)
        expect_rc(p, 0, "rank %s on a pipe" % coll)
        expect_quiet(p, "rank")


def check_tune(model, coll, what):
    files = sorted(glob.glob(os.path.join(DATA, "npz", *coll.split(":"), "valid", "*.npz")))
    expect(files, "no %s graphs" % coll)
    if not files:
        return
    args = ["tune", "--model", model, files[0], "--max-scored", "64", "--batch", "16"]
    rc, out, err = run_tty(*args)
    expect(rc == 0, "tune %s on a terminal: exit %d\n%s" % (coll, rc, err))
    got = [g for g in lines_of(err, "tune") if g[2] == "candidates scored"]
    expect(got and got[-1][3] is not None and got[-1][1] == 64,
           "tune %s: no finished 'candidates scored' line: %r" % (coll, err[-1000:]))
    best = BEST.findall(err)
    expect(best and all(b[0] == what for b in best),
           "tune %s: no '; best so far: %s' on the line: %r" % (coll, what, err[-1000:]))
    if what == "predicted gain" and best:
        gains = [float(b[1]) for b in best]
        expect(all(g >= 0 for g in gains) and gains == sorted(gains),
               "tune %s: the best gain so far goes down or below 0: %r" % (coll, gains))
    # the line shows the best proposal the search holds: at the end, the summary's
    # predicted gain (layout) or its first proposal's score (tile), as printed
    final = re.search(r"predicted gain (\S+) score units" if what == "predicted gain"
                      else r"(?m)^\s+1\s+score (\S+)", out)
    expect(final and best and best[-1][1] == final.group(1),
           "tune %s: the last best so far %r is not the summary's %r" %
           (coll, best[-1][1] if best else None, final.group(1) if final else out))
    rc, out, err = run_tty(*args, "--json")
    expect(rc == 0 and "best so far" not in err and "\r" not in err,
           "tune --json on a terminal drew progress: %r" % err)
    p = run(*args)
    expect_rc(p, 0, "tune on a pipe")
    expect_quiet(p, "tune")
    expect("best so far" not in p.stderr, "tune on a pipe: %r" % p.stderr)


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    p = run("synth", "--out", DATA, "--scale", "tiny", "--seed", "3")
    for coll, out in (("tile:xla", TILE), ("layout:xla:random", LAYOUT)):
        if p.returncode == 0:
            p = run("train", "--data", DATA, "--collection", coll, "--out", out, "--epochs", "1",
                    "--threads", "1")
    if p.returncode != 0:
        print("setup failed:", p.stderr)
        return 1
    run_checks([check_rank, check_rank_npz, lambda: check_tune(TILE, "tile:xla", "score"),
                lambda: check_tune(LAYOUT, "layout:xla:random", "predicted gain")])
    return report("progress: rank's graphs, tune's best so far")


if __name__ == "__main__":
    sys.exit(main())
