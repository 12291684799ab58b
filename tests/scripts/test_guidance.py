#!/usr/bin/env python3
"""A CLI that guides (issue #17 item 6).

"did you mean" for a mistyped command and for mistyped flags of several
commands; one error prefix, "perfcast CMD: error: ...", for usage errors and
failures; a file that is not a checkpoint is named as such before any parsing
detail; `perfcast info MODEL` describes a checkpoint (text and --json).

Environment (tests/CMakeLists.txt): PERFCAST, PC_TEST_TMP.
"""
import json
import os
import shutil
import sys

from clitest import expect, expect_rc, report, run

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_guidance")
README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "README.md")


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    p = run("trian")
    expect(p.returncode == 2 and "did you mean 'train'?" in p.stderr, "trian: %r" % p.stderr)
    p = run("rooflin")
    expect(p.returncode == 2 and "did you mean 'roofline'?" in p.stderr, "rooflin: %r" % p.stderr)
    p = run("xyzzy")
    expect(p.returncode == 2 and "did you mean" not in p.stderr, "xyzzy: %r" % p.stderr)
    for cmd, bad, good in (("train", "--colection", "--collection"), ("eval", "--modle", "--model"),
                           ("roofline", "--chipp", "--chip"), ("synth", "--scael", "--scale"),
                           ("tune", "--budget-sec", "--budget-s")):
        p = run(cmd, bad, "x")
        expect(p.returncode == 2 and p.stderr.startswith("perfcast %s: error: " % cmd)
               and "did you mean '%s'?" % good in p.stderr, "%s %s: %r" % (cmd, bad, p.stderr))
    p = run("eval", "--model", README, "--data", TMP)
    expect(p.returncode == 1 and p.stderr.startswith("perfcast eval: error: ")
           and "not a perfcast checkpoint" in p.stderr, "eval of README: %r" % p.stderr)
    data, model = os.path.join(TMP, "d"), os.path.join(TMP, "m.st")
    expect_rc(run("synth", "--out", data, "--scale", "tiny", "--collections", "tile:xla"), 0,
              "synth")
    expect_rc(run("train", "--data", data, "--collection", "tile:xla", "--out", model, "--epochs",
                  "1", "--hidden", "8", "--progress", "never"), 0, "train")
    p = run("info", model)
    for needle in ("perfcast checkpoint", "collection     tile:xla", "hidden 8", "epochs run",
                   "train and", "validation     tile_score"):
        expect(needle in p.stdout, "info MODEL lacks %r: %s" % (needle, p.stdout))
    p = run("info", "--json", model)
    expect_rc(p, 0, "info --json MODEL")
    if p.returncode == 0:
        one = json.loads(p.stdout)[0]
        expect(one.get("kind") == "checkpoint" and one["model"]["architecture"]["hidden"] == 8
               and one["model"]["train"]["data"]["train_graphs"] > 0, "info --json: %r" % one)
    code = report("guidance: ok")
    if code == 0:
        shutil.rmtree(TMP, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
