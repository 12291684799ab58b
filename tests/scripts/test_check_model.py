#!/usr/bin/env python3
"""perfcast check --model MODEL (issue #18): graphs checked against the widths
a given checkpoint reads, taken from its metadata, not hard-coded.

A checkpoint from a short training on tiny synthetic data passes the data it
was trained on; a graph with 139 node features fails naming the file, the
field, what the model expects and what was found (with and without --model,
and under --json); a copy of the checkpoint whose metadata says 141 node
columns (checksum dropped, as another writer's would be) fails the same good
data naming 141, so the widths come from the checkpoint; a layout graph is
refused by a tile model naming both kinds; an opcode of 300 is outside the
model's vocabulary of 256.

Environment (tests/CMakeLists.txt): PERFCAST, PC_TEST_TMP.
"""
import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from ensemble_avg import st_load, st_save  # noqa: E402  (numpy safetensors, no checksum)
from clitest import FAILS, expect, expect_rc, report, run, run_checks  # noqa: E402

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_check_model")
DATA = os.path.join(TMP, "data")
TILE = os.path.join(DATA, "npz", "tile", "xla")
MODEL = os.path.join(TMP, "m.safetensors")


def first(split):
    d = os.path.join(TILE, split)
    return os.path.join(d, sorted(os.listdir(d))[0])


def edited_graph(name, edit):
    """A copy of the first tile train graph with its arrays edited."""
    with np.load(first("train")) as z:
        a = {k: z[k] for k in z.files}
    edit(a)
    out = os.path.join(TMP, "bad", name)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    np.savez(out, **a)
    return out


def edited_model(name, edit):
    t, meta = st_load(MODEL)
    meta.pop("pc_crc32", None)
    pc = json.loads(meta["perfcast"])
    edit(pc)
    meta["perfcast"] = json.dumps(pc)
    out = os.path.join(TMP, name)
    st_save(out, t, meta)
    return out


def setup():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    p = run("synth", "--out", DATA, "--scale", "tiny", "--seed", "4")
    expect_rc(p, 0, "synth")
    p = run("train", "--data", DATA, "--collection", "tile:xla", "--out", MODEL, "--epochs", "1",
            "--time-budget", "5", "--hidden", "16", "--layers", "1", "--threads", "2",
            "--progress", "never")
    expect_rc(p, 0, "train")


def check_good_passes():
    p = run("check", "--model", MODEL, TILE)
    expect_rc(p, 0, "check --model of the data it trained on")
    expect("for model %s" % MODEL in p.stdout, "summary names the model: %r" % p.stdout[-300:])
    p = run("check", "--model", MODEL, "--json", TILE)
    expect_rc(p, 0, "check --model --json of good data")
    d = json.loads(p.stdout)
    expect(d["model"] == MODEL, "json model: %r" % d.get("model"))
    w = d["widths"]
    expect(w == {"kind": "tile", "node_feat": 140, "config_feat": 24, "node_config_feat": None,
                 "opcodes": 256}, "json widths of a tile model: %r" % w)
    p = run("check", "--json", TILE)
    d = json.loads(p.stdout)
    expect(d["model"] is None and d["widths"] == {"kind": None, "node_feat": 140,
                                                  "config_feat": 24, "node_config_feat": 18,
                                                  "opcodes": 256},
           "json without --model: the default widths: %r" % d)


def check_wrong_width():
    bad = edited_graph("w139.npz", lambda a: a.__setitem__("node_feat", a["node_feat"][:, :139]))
    p = run("check", "--model", MODEL, bad)
    expect_rc(p, 1, "check --model of a 139-column file")
    want = "%s: node_feat has 139 columns, model %s (tile:xla) expects 140" % (bad, MODEL)
    expect(want in p.stdout, "message %r not in %r" % (want, p.stdout))
    p = run("check", bad)
    expect_rc(p, 1, "check (default widths) of a 139-column file")
    expect("%s: node_feat has 139 columns, the models need 140" % bad in p.stdout,
           "default message: %r" % p.stdout)
    p = run("check", "--model", MODEL, "--json", first("valid"), bad)
    expect_rc(p, 1, "check --model --json with a bad file")
    d = json.loads(p.stdout)
    expect(d["ok"] == 1 and d["with_problems"] == 1, "json counts: %r" % d)
    probs = [r for r in d["results"] if r["file"] == bad][0]["problems"]
    expect(any("node_feat has 139 columns" in m and "expects 140" in m for m in probs),
           "json problem: %r" % probs)
    cfg = edited_graph("c23.npz", lambda a: a.__setitem__("config_feat", a["config_feat"][:, :23]))
    p = run("check", "--model", MODEL, cfg)
    expect_rc(p, 1, "check --model of a 23-column config_feat")
    expect("config_feat has 23 features per config, model %s (tile:xla) expects 24" % MODEL
           in p.stdout, "config message: %r" % p.stdout)


def check_opcode_and_kind():
    def op300(a):
        a["node_opcode"] = a["node_opcode"].astype(np.int32)
        a["node_opcode"][0] = 300
    bad = edited_graph("op300.npz", op300)
    p = run("check", "--model", MODEL, bad)
    expect_rc(p, 1, "check --model of opcode 300")
    expect("node_opcode[0] = 300 is outside [0, 255] as model %s" % MODEL in p.stdout,
           "opcode message: %r" % p.stdout)
    lay = os.path.join(DATA, "npz", "layout", "xla", "random", "train")
    p = run("check", "--model", MODEL, lay)
    expect_rc(p, 1, "a tile model given layout graphs")
    expect("a layout graph, but model %s (tile:xla) reads tile graphs" % MODEL in p.stdout,
           "kind message: %r" % p.stdout[:500])


def check_widths_from_metadata():
    def node141(pc):
        pc["architecture"]["node_in_dim"] = 141
    m141 = edited_model("m141.st", node141)
    p = run("check", "--model", m141, first("train"))
    expect_rc(p, 1, "a checkpoint reading 141 node columns, given 140")
    expect("node_feat has 140 columns, model %s (tile:xla) expects 141" % m141 in p.stdout,
           "widths come from the metadata: %r %r" % (p.stdout, p.stderr))
    p = run("check", "--model", os.path.join(TMP, "missing.st"), TILE)
    expect_rc(p, 1, "a missing model")
    expect("missing.st" in p.stderr, "missing model named: %r" % p.stderr)
    p = run("check", "--model", first("train"), TILE)
    expect_rc(p, 1, "an .npz given as the model")
    expect("not a perfcast checkpoint" in p.stderr, "not a checkpoint: %r" % p.stderr)


def main():
    setup()
    if FAILS:
        return report("")
    run_checks([check_good_passes, check_wrong_width, check_opcode_and_kind,
                check_widths_from_metadata])
    return report("check --model: widths from the checkpoint, problems named")


if __name__ == "__main__":
    sys.exit(main())
