#!/usr/bin/env python3
"""Defaults a user expects (issue #17 item 3): where the commands write.

- synth --out refuses a non-empty folder without --force (and writes into it with);
- every --out / --svg / --log is checked before any work: a missing folder fails
  at once (train: before loading data, no epoch run), naming the folder; a
  folder-output that is a file fails; an output equal to an input is a usage error;
- a fresh train mentions an existing MODEL.state, a --resume does not.
"""
import glob
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clitest import expect, expect_rc, report, run, run_checks  # noqa: E402

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_out_paths")
SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(TMP, "data")
MISSING = os.path.join(TMP, "missing", "deeper")


def check_synth():
    p = run("synth", "--out", DATA, "--scale", "tiny", "--seed", "1")
    expect_rc(p, 0, "synth into a new folder")
    before = sorted(glob.glob(os.path.join(DATA, "**", "*.npz"), recursive=True))
    p = run("synth", "--out", DATA, "--scale", "tiny", "--seed", "2")
    expect_rc(p, 1, "synth into a non-empty folder")
    expect("not empty" in p.stderr and "--force" in p.stderr,
           "synth: says the folder is not empty and names --force: " + p.stderr)
    after = sorted(glob.glob(os.path.join(DATA, "**", "*.npz"), recursive=True))
    expect(before == after, "synth: nothing written when refused")
    p = run("synth", "--out", DATA, "--scale", "tiny", "--seed", "1", "--force")
    expect_rc(p, 0, "synth --force into a non-empty folder")
    empty = os.path.join(TMP, "empty")
    os.makedirs(empty)
    p = run("synth", "--out", empty, "--scale", "tiny", "--seed", "1",
            "--collections", "tile:xla")
    expect_rc(p, 0, "synth into an existing empty folder")
    afile = os.path.join(TMP, "afile")
    open(afile, "w").close()
    p = run("synth", "--out", afile, "--scale", "tiny")
    expect_rc(p, 1, "synth --out a file")
    expect("not a folder" in p.stderr, "synth --out a file: says so: " + p.stderr)
    p = run("synth", "--out", os.path.join(afile, "sub"), "--scale", "tiny")
    expect_rc(p, 1, "synth --out under a file")


def check_train():
    model = os.path.join(MISSING, "m.st")
    p = run("train", "--data", DATA, "--collection", "tile:xla", "--out", model,
            "--epochs", "1", "--threads", "1", "--progress", "never")
    expect_rc(p, 1, "train --out into a missing folder")
    expect("does not exist" in p.stderr and os.path.dirname(model) in p.stderr,
           "train: names the missing folder: " + p.stderr)
    expect("epoch" not in p.stdout and "train, " not in p.stdout,
           "train: fails before loading data or any epoch: " + p.stdout)
    good = os.path.join(TMP, "m.st")
    p = run("train", "--data", DATA, "--collection", "tile:xla", "--out", good,
            "--epochs", "1", "--log", os.path.join(MISSING, "t.jsonl"), "--progress", "never")
    expect_rc(p, 1, "train --log into a missing folder")
    p = run("train", "--data", DATA, "--collection", "tile:xla", "--out", good,
            "--epochs", "1", "--log", good, "--progress", "never")
    expect_rc(p, 2, "train --log equal to --out")
    # MODEL.state of an interrupted run: a fresh run mentions it, --resume does not
    p = run("train", "--data", DATA, "--collection", "tile:xla", "--out", good, "--epochs", "2",
            "--stop-after-steps", "2", "--threads", "1", "--progress", "never")
    expect_rc(p, 0, "train stopped early")
    expect(os.path.exists(good + ".state"), "train: MODEL.state kept after a stop")
    p = run("train", "--data", DATA, "--collection", "tile:xla", "--out", good, "--epochs", "2",
            "--resume", "--threads", "1", "--progress", "never")
    expect_rc(p, 0, "train --resume")
    expect("found" not in p.stderr, "train --resume: no note about the state: " + p.stderr)
    p = run("train", "--data", DATA, "--collection", "tile:xla", "--out", good, "--epochs", "2",
            "--stop-after-steps", "2", "--threads", "1", "--progress", "never")
    p = run("train", "--data", DATA, "--collection", "tile:xla", "--out", good, "--epochs", "1",
            "--threads", "1", "--progress", "never")
    expect_rc(p, 0, "fresh train beside a state")
    expect("found %s.state from an earlier run" % good in p.stderr and "--resume" in p.stderr,
           "fresh train: mentions MODEL.state and --resume: " + p.stderr)


def check_other_outputs():
    model = os.path.join(TMP, "m.st")
    p = run("predict", "--model", model, "--data", DATA, "--out", os.path.join(MISSING, "s.csv"))
    expect_rc(p, 1, "predict --out into a missing folder")
    expect("does not exist" in p.stderr, "predict: names the folder: " + p.stderr)
    p = run("predict", "--model", model, "--data", DATA, "--out", model)
    expect_rc(p, 2, "predict --out equal to --model")
    runs = os.path.join(SRC, "data", "calibration", "training_runs.json")
    if os.path.exists(runs):
        p = run("calibrate", runs, "--out", os.path.join(MISSING, "c.json"))
        expect_rc(p, 1, "calibrate --out into a missing folder")
        p = run("calibrate", runs, "--out", runs)
        expect_rc(p, 2, "calibrate --out equal to its runs file")
    afile = os.path.join(TMP, "afile2")
    open(afile, "w").close()
    p = run("cache", DATA, "--out", afile)
    expect_rc(p, 1, "cache --out a file")
    p = run("import", os.path.join(SRC, "examples", "mlp_block.hlo"), "--out", afile)
    expect_rc(p, 1, "import --out a file")
    p = run("import", os.path.join(SRC, "examples", "mlp_block.hlo"), "--out",
            os.path.join(TMP, "new", "imported"))
    expect_rc(p, 0, "import --out a new nested folder (created)")
    p = run("plan", "serve", "--preset", "llama3-8b", "--chip", "v5e", "--chips", "4",
            "--context", "2k", "--svg", os.path.join(MISSING, "s.svg"))
    expect_rc(p, 1, "plan serve --svg into a missing folder")
    expect("context" not in p.stdout, "plan serve: fails before the tables: " + p.stdout)
    p = run("plan", "train", "--preset", "llama3-8b", "--chip", "v5e", "--chips", "16",
            "--batch-tokens", "1M", "--svg", os.path.join(MISSING, "t.svg"))
    expect_rc(p, 1, "plan train --svg into a missing folder")
    p = run("plot", "train", afile, "--svg", os.path.join(MISSING, "p.svg"))
    expect_rc(p, 1, "plot --svg into a missing folder")


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    run_checks([check_synth, check_train, check_other_outputs])
    return report("out paths: ok")


if __name__ == "__main__":
    sys.exit(main())
