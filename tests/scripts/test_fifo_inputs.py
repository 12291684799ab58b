#!/usr/bin/env python3
"""Whole-file readers never block on a FIFO (issue #18 item 2).

Every command that reads a whole text or JSON file (HLO text and protos for
import, roofline and rank; rank --configs; roofline --ops; model --config;
--chips-file; runs for validate and calibrate; a calibration file; the log
plot train draws, text and --json) is given a
FIFO with no writer: each must exit 1 within the timeout, naming the file and
saying it is a FIFO, not a regular file. A hang is a failure (the child is
killed after TIMEOUT seconds). Environment (tests/CMakeLists.txt): PERFCAST,
PC_TEST_TMP, PC_TEST_DATA.
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clitest import CLI, FAILS, expect, report  # noqa: E402

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_fifo_inputs")
DATA = os.environ.get("PC_TEST_DATA",
                      os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data"))
TIMEOUT = 10


def refuses(what, args, fifo):
    try:
        p = subprocess.run([CLI, *args], capture_output=True, text=True, errors="replace",
                           timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        FAILS.append("%s: still running after %d s (blocked on the FIFO)" % (what, TIMEOUT))
        return
    text = p.stdout + p.stderr
    expect(p.returncode == 1, "%s: exit %d, expected 1\n%s" % (what, p.returncode, text[-1500:]))
    expect(fifo in text, "%s: the message does not name %s:\n%s" % (what, fifo, text[-1500:]))
    expect("FIFO" in text, "%s: the message does not say FIFO:\n%s" % (what, text[-1500:]))
    print("  ok %-40s %s" % (what, (p.stderr or p.stdout).strip().splitlines()[-1][:140]))


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    f = {}
    for name in ("prog.hlo", "prog.pb", "prog", "ops.txt", "configs.txt", "cfg.json",
                 "chips.json", "runs.json", "calib.json", "log.jsonl"):
        f[name] = os.path.join(TMP, name)
        os.mkfifo(f[name])
    out = os.path.join(TMP, "out")
    tile_model = os.path.join(DATA, "models", "tile_v1.safetensors")
    layout_model = os.path.join(DATA, "models", "layout_v1.safetensors")
    hlo = os.path.join(DATA, "hlo", "gpu_convnet.hlo")
    runs = os.path.join(DATA, "runs", "good_runs.json")
    cases = [
        ("import FIFO.hlo", ["import", f["prog.hlo"], "--out", out], f["prog.hlo"]),
        ("import FIFO.pb", ["import", f["prog.pb"], "--out", out], f["prog.pb"]),
        ("import FIFO (no suffix)", ["import", f["prog"], "--out", out], f["prog"]),
        ("roofline --hlo FIFO", ["roofline", "--chip", "v5e", "--hlo", f["prog.hlo"]],
         f["prog.hlo"]),
        ("roofline --ops FIFO", ["roofline", "--chip", "v5e", "--ops", f["ops.txt"]],
         f["ops.txt"]),
        ("rank (tile) FIFO.hlo", ["rank", "--model", tile_model, f["prog.hlo"]], f["prog.hlo"]),
        ("rank (layout) FIFO", ["rank", "--model", layout_model, f["prog"]], f["prog"]),
        ("rank --configs FIFO", ["rank", "--model", layout_model, hlo, "--configs",
                                 f["configs.txt"]], f["configs.txt"]),
        ("model --config FIFO", ["model", "--config", f["cfg.json"]], f["cfg.json"]),
        ("chips --chips-file FIFO", ["chips", "--chips-file", f["chips.json"]], f["chips.json"]),
        ("roofline --chips-file FIFO", ["roofline", "--chip", "v5e", "--matmul", "8,8,8",
                                        "--chips-file", f["chips.json"]], f["chips.json"]),
        ("validate FIFO", ["validate", f["runs.json"]], f["runs.json"]),
        ("calibrate FIFO", ["calibrate", f["runs.json"], "--out",
                            os.path.join(TMP, "c.json")], f["runs.json"]),
        ("validate --calibration FIFO", ["validate", runs, "--calibration", f["calib.json"]],
         f["calib.json"]),
        ("plot train FIFO", ["plot", "train", f["log.jsonl"], "--svg",
                             os.path.join(TMP, "log.svg")], f["log.jsonl"]),
        # a FIFO --config with a bad flag value after it: the query's one validation
        # refuses the FIFO once (the command does not re-open it to word the error)
        ("plan train --config FIFO, bad chip", ["plan", "train", "--config", f["cfg.json"],
                                                "--chip", "nochip", "--chips", "64",
                                                "--batch-tokens", "4Mi"], f["cfg.json"]),
        ("plan serve --config FIFO, bad tp", ["plan", "serve", "--config", f["cfg.json"],
                                              "--chip", "v5e", "--chips", "8", "--tp", "3",
                                              "--context", "8192"], f["cfg.json"]),
        ("plan train --chips-file FIFO", ["plan", "train", "--preset", "llama3-8b", "--chip",
                                          "v5p", "--chips", "7", "--batch-tokens", "1000",
                                          "--chips-file", f["chips.json"]], f["chips.json"]),
        ("plan serve --calibration FIFO", ["plan", "serve", "--preset", "llama3-8b", "--chip",
                                           "v5e", "--chips", "8", "--context", "8192",
                                           "--calibration", f["calib.json"]], f["calib.json"]),
        ("model --config FIFO --mfu-step-time", ["model", "--config", f["cfg.json"],
                                                 "--mfu-step-time", "1"], f["cfg.json"]),
        ("plot train FIFO --json", ["plot", "train", f["log.jsonl"], "--svg",
                                    os.path.join(TMP, "log.svg"), "--json"], f["log.jsonl"]),
    ]
    for what, args, fifo in cases:
        refuses(what, args, fifo)
    expect(not os.path.exists(out) or not os.listdir(out), "import left files in %s" % out)
    expect(not os.path.exists(os.path.join(TMP, "log.svg")), "plot train wrote an SVG")
    p = subprocess.run([CLI, "plot", "train", TMP, "--svg", os.path.join(TMP, "d.svg")],
                       capture_output=True, text=True, timeout=TIMEOUT)
    expect(p.returncode == 1 and "%s: is a directory, expected a regular file" % TMP in p.stderr,
           "plot train of a directory: exit %d %r" % (p.returncode, p.stderr))
    rc = report("whole-file readers: %d FIFO inputs refused without blocking" % len(cases))
    if rc == 0:
        shutil.rmtree(TMP, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
