#!/usr/bin/env python3
"""End-to-end tests of `perfcast train` and `perfcast eval` on tiny synthetic data.

Covers: training tile:xla and layout:xla:random (exit 0, checkpoint written,
per-epoch log lines), eval in text and --json, the trained tile model against
a random-score baseline computed here with numpy from the valid .npz files,
training loss going down, same seed -> identical checkpoint bytes, usage
errors (exit 2) and a missing data dir (exit 1 with a message).

Environment (tests/CMakeLists.txt): PERFCAST, PC_TEST_TMP.
"""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys

import numpy as np

from clitest import CLI, FAILS, expect, expect_rc, run
TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_train")


EPOCH_RE = re.compile(r"^epoch (\d+) loss (\S+) valid (\S+) best (\S+) \((\S+)s\)$", re.M)


def train(data, coll, out, *extra):
    p = run("train", "--data", data, "--collection", coll, "--out", out, "--threads", "2",
            *extra)
    expect_rc(p, 0, "train " + coll)
    expect(os.path.isfile(out), "checkpoint written for " + coll)
    epochs = EPOCH_RE.findall(p.stdout)
    expect(len(epochs) >= 1, "epoch lines for %s: %s" % (coll, p.stdout))
    return p, [(int(e), float(l), float(v)) for e, l, v, _, _ in epochs]


def tile_score(pred, runtime, norm):
    y = runtime / norm
    top = np.argsort(pred, kind="stable")[:5]
    return 2.0 - y[top].min() / y.min()


def random_tile_baseline(data, seeds=50):
    files = sorted(glob.glob(os.path.join(data, "npz/tile/xla/valid/*.npz")))
    scores = []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        per = []
        for f in files:
            z = np.load(f)
            rt = z["config_runtime"].astype(np.float64)
            nz = z["config_runtime_normalizers"].astype(np.float64)
            per.append(tile_score(rng.random(len(rt)), rt, nz))
        scores.append(np.mean(per))
    return float(np.mean(scores))


def resume_tests(data):
    """Interrupted + resumed runs give the uninterrupted run's bytes; options are checked."""
    common = ["--epochs", "4", "--patience", "4", "--hidden", "16", "--layers", "2"]
    for coll, stops, extra in (("tile:xla", (5, 11), []),
                               ("layout:xla:random", (2,), ["--sampling", "fast",
                                                            "--configs", "6"])):
        tag = coll.replace(":", "_")
        full = os.path.join(TMP, tag + "_full.st")
        train(data, coll, full, *common, *extra)
        expect(not os.path.exists(full + ".state"), "completed run leaves no state file")
        for stop in stops:
            part = os.path.join(TMP, "%s_part%d.st" % (tag, stop))
            p = run("train", "--data", data, "--collection", coll, "--out", part, "--threads",
                    "2", "--stop-after-steps", str(stop), *common, *extra)
            expect_rc(p, 0, "stopped run of %s" % coll)
            expect("continue with --resume" in p.stdout, "stop message: " + p.stdout)
            expect(os.path.isfile(part + ".state"), "state kept after a stop")
            p = run("train", "--data", data, "--collection", coll, "--out", part, "--threads",
                    "2", "--resume", *common, *extra)
            expect_rc(p, 0, "resumed run of %s" % coll)
            expect("resuming at epoch" in p.stdout, "resume message: " + p.stdout)
            if os.path.isfile(full) and os.path.isfile(part):
                expect(open(full, "rb").read() == open(part, "rb").read(),
                       "%s stopped after %d steps and resumed == uninterrupted" % (coll, stop))
    # Ctrl-C: stops after the current step, saves the state, exits 130; resume finishes
    sig = os.path.join(TMP, "sigint.st")
    proc = subprocess.Popen([CLI, "train", "--data", data, "--collection", "tile:xla", "--out",
                             sig, "--threads", "2", "--epochs", "100000", "--patience", "100000",
                             "--hidden", "16"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    for line in proc.stdout:
        if line.startswith("epoch 2 "):
            proc.send_signal(signal.SIGINT)
            break
    out, err = proc.communicate(timeout=60)
    expect(proc.returncode == 130, "SIGINT exit code %d (stderr %s)" % (proc.returncode, err))
    expect("continue with --resume" in out, "SIGINT message: " + out)
    expect(os.path.isfile(sig) and os.path.isfile(sig + ".state"),
           "SIGINT keeps the best model and the state")
    p = run("train", "--data", data, "--collection", "tile:xla", "--out", sig, "--threads", "2",
            "--epochs", "100000", "--patience", "100000", "--hidden", "16", "--resume",
            "--stop-after-steps", "20")
    expect_rc(p, 0, "resume after SIGINT")

    # resume with other options, or with nothing to resume
    part = os.path.join(TMP, "tile_xla_opt.st")
    run("train", "--data", data, "--collection", "tile:xla", "--out", part, "--threads", "2",
        "--stop-after-steps", "3", *common)
    p = run("train", "--data", data, "--collection", "tile:xla", "--out", part, "--threads", "2",
            "--resume", "--lr", "0.01", *common)
    expect_rc(p, 1, "resume with another --lr")
    expect("--resume" in p.stderr and "options" in p.stderr, "resume mismatch says why: "
           + p.stderr)
    p = run("train", "--data", data, "--collection", "tile:xla", "--out", part, "--threads", "2",
            "--resume", "--hidden", "8", "--layers", "2", "--epochs", "4")
    expect_rc(p, 1, "resume with another architecture")
    p = run("train", "--data", data, "--collection", "tile:xla", "--threads", "2", "--resume",
            "--out", os.path.join(TMP, "never_trained.st"))
    expect_rc(p, 1, "resume without a state")
    expect("no state to resume from" in p.stderr, "missing state message: " + p.stderr)
    # a state file that is not one
    with open(part + ".state", "wb") as f:
        f.write(b"\x10\x00\x00\x00\x00\x00\x00\x00{}")
    p = run("train", "--data", data, "--collection", "tile:xla", "--out", part, "--threads", "2",
            "--resume", *common)
    expect_rc(p, 1, "resume from a corrupt state")


MEM_RE = re.compile(r"^memory: about ([\d.]+) (MiB|GiB) at the peak \(data ([\d.]+) (MiB|GiB), "
                    r"model inputs ([\d.]+) (MiB|GiB), activations ([\d.]+) (MiB|GiB)\)$", re.M)


def mem_estimate(data, *extra):
    """The logged estimate (total, data, inputs, activations in MiB) of a run refused by a
    small --max-memory (4 MiB: every load fits it), after loading and before training."""
    out = os.path.join(TMP, "toobig.st")
    p = run("train", "--data", data, "--collection", "layout:xla:random", "--out", out,
            "--max-memory", "0.004", *extra)  # GiB: each load fits, the run does not
    expect_rc(p, 1, "training over --max-memory %r" % (extra,))
    expect("needs about" in p.stderr and "activations" in p.stderr and "more than the" in p.stderr,
           "memory refusal: " + p.stderr)
    expect(("--seg-size" if "--gst" in extra else "--gst") in p.stderr,
           "memory refusal says what to do: " + p.stderr)
    expect(not os.path.exists(out), "refused run wrote nothing")
    m = MEM_RE.search(p.stdout)
    expect(m is not None, "memory estimate logged: %r" % p.stdout)
    if not m:
        return None
    v = [float(m.group(i)) * (1024 if m.group(i + 1) == "GiB" else 1) for i in (1, 3, 5, 7)]
    expect(v[0] >= v[1] + v[2] + v[3], "estimate adds up: %r" % v)
    return v


def memory_tests(data):
    """The up-front estimate counts the loaded data and the activations, and refuses."""
    base = mem_estimate(data, "--configs", "4")
    more_k = mem_estimate(data, "--configs", "32")
    whole = mem_estimate(data, "--configs", "4", "--prune-hops", "0")
    gst = mem_estimate(data, "--configs", "4", "--gst", "--seg-size", "40")
    # the same dataset with every train graph twice
    big = os.path.join(TMP, "data_twice")
    shutil.copytree(data, big)
    tdir = os.path.join(big, "npz/layout/xla/random/train")
    for f in os.listdir(tdir):
        shutil.copy(os.path.join(tdir, f), os.path.join(tdir, "copy_" + f))
    twice = mem_estimate(big, "--configs", "4")
    if base and more_k and whole and gst and twice:
        expect(more_k[3] > base[3] and more_k[0] > base[0],
               "activations grow with --configs: %r -> %r" % (base, more_k))
        expect(whole[3] > base[3], "the whole graph costs more than the pruned one: %r vs %r"
               % (whole, base))
        expect(twice[1] > base[1] and twice[0] > base[0],
               "estimate grows with the data: %r -> %r" % (base, twice))
        expect(gst[2] > base[2], "GST counts its segments and tables: %r vs %r" % (gst, base))
    shutil.rmtree(big, ignore_errors=True)


def options_tests(data):
    """Architecture, loss and sampling flags train, are recorded, and change the model."""
    base = os.path.join(TMP, "opt_base.st")
    common = ["--epochs", "2", "--hidden", "16", "--layers", "2", "--seed", "5"]
    train(data, "tile:xla", base, *common)
    variants = [["--pool", "max"], ["--join", "late"], ["--act", "gelu"], ["--emb-dim", "4"],
                ["--no-layernorm"], ["--dropout", "0.2"], ["--loss", "hinge:1,mse:0.1"],
                ["--sampling", "fast"], ["--weight-decay", "0.01", "--clip", "0.5"]]
    for i, v in enumerate(variants):
        out = os.path.join(TMP, "opt_%d.st" % i)
        p, _ = train(data, "tile:xla", out, *common, *v)
        if os.path.isfile(out) and os.path.isfile(base):
            expect(open(out, "rb").read() != open(base, "rb").read(),
                   "option %r changes the model" % v)
        q = run("eval", "--model", out, "--data", data, "--json")
        expect_rc(q, 0, "eval of the model trained with %r" % v)
    meta = open(os.path.join(TMP, "opt_0.st"), "rb").read()
    # the metadata JSON sits escaped inside the safetensors header
    expect(re.search(rb'pool\\*":\\*"max', meta) is not None, "pool recorded in the checkpoint")
    meta = open(os.path.join(TMP, "opt_6.st"), "rb").read()
    expect(b"hinge(margin=0.1,T=1):1" in meta and b"mse:0.1" in meta,
           "loss recorded in the checkpoint")
    # issue #4 techniques on layout: each trains, writes a model eval can read
    lcommon = ["--epochs", "2", "--hidden", "16", "--layers", "2", "--configs", "6"]
    for i, v in enumerate([["--collapse-chains"], ["--prune-hops", "2", "--collapse-chains"],
                           ["--encode", "none"], ["--encode", "pad,dims"], ["--gst", "--seg-size", "40"],
                           ["--gst", "--segments", "metis", "--seg-size", "30",
                            "--gst-train-segs", "2", "--gst-keep", "0.8", "--gst-finetune", "1"],
                           ["--gst", "--segments", "splits", "--seg-size", "50",
                            "--prune-hops", "1"],
                           ["--cfg-attention", "2", "--join", "late"], ["--dedup"],
                           ["--encode", "all,roofline,mismatch"]]):
        out = os.path.join(TMP, "lopt_%d.st" % i)
        train(data, "layout:xla:random", out, *lcommon, *v)
        q = run("eval", "--model", out, "--data", data, "--json")
        expect_rc(q, 0, "eval of the layout model trained with %r" % v)
    # layout encodes all by default (bits 7 in the architecture), --encode none and tile: absent
    enc = lambda name: re.search(rb'encode\\*":(\d+)', open(os.path.join(TMP, name), "rb").read())
    m = enc("lopt_0.st")
    expect(m is not None and m.group(1) == b"7", "layout default records encode 7: %r" % m)
    expect(enc("lopt_2.st") is None, "--encode none records no encoding")
    m = enc("lopt_3.st")
    expect(m is not None and m.group(1) == b"3", "--encode pad,dims records 3: %r" % m)
    m = enc("lopt_9.st")
    expect(m is not None and m.group(1) == b"31", "--encode all,roofline,mismatch: %r" % m)
    m = enc("opt_6.st")
    expect(m is not None and m.group(1) == b"96", "tile encodes steps,rsteps by default: %r" % m)
    memory_tests(data)
    p = run("train", "--data", data, "--collection", "tile:xla", "--out",
            os.path.join(TMP, "tilegst.st"), "--gst")
    expect_rc(p, 1, "--gst on tile")
    late = os.path.join(TMP, "layout_late.st")
    train(data, "layout:xla:random", late, "--join", "late", *common)
    q = run("eval", "--model", late, "--data", data, "--json")
    expect_rc(q, 0, "eval of a layout late-join model")
    p = run("train", "--data", data, "--collection", "tile:xla", "--out",
            os.path.join(TMP, "bad_loss.st"), "--loss", "listmle:x")
    expect_rc(p, 1, "--loss with a bad weight")
    expect("--loss" in p.stderr, "bad loss message: " + p.stderr)
    # the live progress line (forced on, as stderr is not a terminal here)
    p = run("train", "--data", data, "--collection", "tile:xla", "--out",
            os.path.join(TMP, "prog.st"), "--progress", "always", *common)
    expect_rc(p, 0, "train with --progress always")
    expect(re.search(r"epoch \d+/2 +\d+% \| [\d.]+ samples/s \| loss [\d.]+ \| valid \S+ \| "
                     r"\S+, ETA \S+", p.stderr) is not None, "progress line: %r" % p.stderr[-300:])


def meta_train(path):
    """The "train" object of a checkpoint's perfcast metadata."""
    raw = open(path, "rb").read()
    n = int.from_bytes(raw[:8], "little")
    head = json.loads(raw[8:8 + n])
    return json.loads(head["__metadata__"]["perfcast"])["train"]


def budget_tests(data):
    """A time budget without --epochs sets the length; too small a budget says what it wrote;
    the margin loss trains; conflicting options are refused."""
    out = os.path.join(TMP, "budget_len.st")
    p, ep = train(data, "tile:xla", out, "--time-budget", "2", "--hidden", "16", "--layers", "1")
    m = re.search(r"time budget: about (\d+) epochs fit \(\S+s each\); the learning rate "
                  r"anneals over them; patience (\d+) epochs", p.stdout)
    expect(m is not None, "budget estimate logged: " + p.stdout[-500:])
    if m:
        expect(int(m.group(2)) >= 5 and int(m.group(2)) >= int(m.group(1)) // 2,
               "patience half the estimated epochs, >= 5: " + m.group(0))
    if os.path.isfile(out):
        t = meta_train(out)
        expect(t["epochs"] == -1 and t["patience"] == -1 and t["epochs_run"] == len(ep),
               "the budget's length recorded as auto: %r" % t)
    # with --epochs the budget only stops the run, as before
    out = os.path.join(TMP, "budget_ep.st")
    p, ep = train(data, "tile:xla", out, "--time-budget", "100", "--epochs", "2")
    expect(len(ep) == 2 and "epochs fit" not in p.stdout, "--epochs with a budget: 2 epochs")
    if os.path.isfile(out):
        expect(meta_train(out)["epochs"] == 2, "--epochs recorded")
    # no budget: the old defaults, recorded as numbers
    out = os.path.join(TMP, "budget_none.st")
    train(data, "tile:xla", out, "--patience", "1", "--hidden", "8", "--layers", "1")
    if os.path.isfile(out):
        t = meta_train(out)
        expect(t["epochs"] == 20 and t["patience"] == 1, "default epochs 20 recorded: %r" % t)
    # a budget too small for a step: says so and writes the initial weights
    out = os.path.join(TMP, "budget_tiny.st")
    p, ep = train(data, "tile:xla", out, "--time-budget", "0.000001")
    expect("--time-budget (1e-06s) ran out before the first training step" in p.stdout and
           "writing the untrained model" in p.stdout, "too small a budget: " + p.stdout)
    # the margin loss alone and with ListMLE; recorded only when weighted
    for spec in ("margin:1", "listmle:1,margin:0.5"):
        out = os.path.join(TMP, "margin_%d.st" % len(spec))
        train(data, "layout:xla:random", out, "--epochs", "2", "--configs", "8", "--loss", spec)
        if os.path.isfile(out):
            loss = meta_train(out)["loss"]
            expect(",margin(margin=0.1,T=1,window=2):" in loss, "margin loss recorded: " + loss)
    # conflicting options: clear refusals naming the flags, before any training
    bad = os.path.join(TMP, "conflict.st")
    for args, needle in (
            (["--collection", "layout:xla:random", "--cfg-attention", "3"],
             "--cfg-attention (3) must divide the width of what the attention mixes, 128 here"),
            (["--collection", "tile:xla", "--cfg-attention", "4", "--join", "late",
              "--encode", "none"],
             "join early makes it 64); heads up to 16 that fit: 1, "),
            (["--collection", "tile:xla", "--collapse-chains"],
             "--collapse-chains needs pruning (--prune-hops >= 1"),
            (["--collection", "layout:xla:random", "--gst-finetune", "1"],
             "--gst-finetune needs --gst")):
        p = run("train", "--data", data, "--out", bad, *args)
        expect_rc(p, 1, "conflicting options %r" % args)
        expect(needle in p.stderr, "message for %r: %s" % (args, p.stderr))
        expect("epoch" not in p.stdout, "refused before training: %r" % args)


def steps_tests(data):
    """--encode steps (tile grid steps, src/gnn/encode.h): recorded in the checkpoint, read
    back by eval, rank and tune; --resume refuses another encoding."""
    common = ["--epochs", "2", "--patience", "2", "--hidden", "16", "--layers", "2"]
    ms = os.path.join(TMP, "steps.st")
    train(data, "tile:xla", ms, "--encode", "steps", *common)
    if os.path.isfile(ms):
        m = re.search(rb'encode\\*":(\d+)', open(ms, "rb").read())
        expect(m is not None and m.group(1) == b"32", "--encode steps records 32: %r" % m)
    q = run("eval", "--model", ms, "--data", data, "--json")
    expect_rc(q, 0, "eval of a steps model")
    f = sorted(glob.glob(os.path.join(data, "npz", "tile", "xla", "valid", "*.npz")))[0]
    q = run("rank", "--model", ms, f, "--top", "3", "--json")
    expect_rc(q, 0, "rank with a steps model")
    out = os.path.join(TMP, "steps_tuned.npz")
    q = run("tune", "--model", ms, f, "--out", out, "--budget-s", "1", "--threads", "2")
    expect_rc(q, 0, "tune with a steps model")
    expect(os.path.isfile(out), "tune with a steps model writes its proposals")
    # a run stopped with one encoding is not resumed with another
    part = os.path.join(TMP, "steps_part.st")
    p = run("train", "--data", data, "--collection", "tile:xla", "--out", part, "--threads",
            "2", "--stop-after-steps", "3", "--encode", "steps", *common)
    expect_rc(p, 0, "stopped steps run")
    p = run("train", "--data", data, "--collection", "tile:xla", "--out", part, "--threads",
            "2", "--resume", "--encode", "none", *common)
    expect_rc(p, 1, "resume with another --encode")
    expect("encode" in p.stderr, "resume names the encoding: " + p.stderr)
    p = run("train", "--data", data, "--collection", "tile:xla", "--out", part, "--threads",
            "2", "--resume", "--encode", "steps", *common)
    expect_rc(p, 0, "resume with the same --encode steps")


def rsteps_tests(data):
    """--encode steps,rsteps (tile reduction steps, src/gnn/encode.h): recorded as 96, used
    by rank; --resume refuses a run stopped with steps alone."""
    common = ["--epochs", "2", "--patience", "2", "--hidden", "16", "--layers", "2"]
    ms = os.path.join(TMP, "rsteps.st")
    train(data, "tile:xla", ms, "--encode", "steps,rsteps", *common)
    if os.path.isfile(ms):
        m = re.search(rb'encode\\*":(\d+)', open(ms, "rb").read())
        expect(m is not None and m.group(1) == b"96", "--encode steps,rsteps records 96: %r" % m)
    f = sorted(glob.glob(os.path.join(data, "npz", "tile", "xla", "valid", "*.npz")))[0]
    q = run("rank", "--model", ms, f, "--top", "3", "--json")
    expect_rc(q, 0, "rank with an rsteps model")
    part = os.path.join(TMP, "rsteps_part.st")
    p = run("train", "--data", data, "--collection", "tile:xla", "--out", part, "--threads",
            "2", "--stop-after-steps", "3", "--encode", "steps", *common)
    expect_rc(p, 0, "stopped steps run")
    p = run("train", "--data", data, "--collection", "tile:xla", "--out", part, "--threads",
            "2", "--resume", "--encode", "steps,rsteps", *common)
    expect_rc(p, 1, "resume with rsteps added")
    expect("encode" in p.stderr, "resume names the encoding: " + p.stderr)


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    data = os.path.join(TMP, "data")
    p = run("synth", "--out", data, "--scale", "tiny", "--seed", "1", "--threads", "2")
    expect_rc(p, 0, "synth")

    # tile: train, eval, baseline
    m1 = os.path.join(TMP, "tile1.safetensors")
    p, ep = train(data, "tile:xla", m1, "--epochs", "30", "--patience", "30", "--seed", "3",
                  "--hidden", "32", "--layers", "2")
    if ep:
        expect(ep[-1][1] < 0.9 * ep[0][1], "tile train loss drops by 10%%: %r" % ep)
    q = run("eval", "--model", m1, "--data", data)
    expect_rc(q, 0, "eval tile")
    expect("tile_score" in q.stdout and "opa" in q.stdout and "top5_slowdown" in q.stdout,
           "eval tile prints metrics: " + q.stdout)
    q = run("eval", "--model", m1, "--data", data, "--json")
    expect_rc(q, 0, "eval tile --json")
    try:
        r = json.loads(q.stdout)
        base = random_tile_baseline(data)
        print("tile valid: trained %.4f, random baseline %.4f" % (r["metric"], base))
        expect(r["graphs"] == 2 and r["metric_name"] == "tile_score", "eval json fields %r" % r)
        expect(r["metric"] > base, "trained tile score %.4f beats random %.4f"
               % (r["metric"], base))
        best = max(v for _, _, v in ep)
        expect(abs(r["metric"] - best) < 1e-5, "eval matches the best logged valid metric")
    except ValueError as e:
        FAILS.append("eval --json output: %s (%s)" % (q.stdout, e))

    # determinism: same seed, same bytes
    m2 = os.path.join(TMP, "tile2.safetensors")
    train(data, "tile:xla", m2, "--epochs", "30", "--patience", "30", "--seed", "3",
          "--hidden", "32", "--layers", "2")
    if os.path.isfile(m1) and os.path.isfile(m2):
        expect(open(m1, "rb").read() == open(m2, "rb").read(), "same seed, same checkpoint")
    m3 = os.path.join(TMP, "tile3.safetensors")
    train(data, "tile:xla", m3, "--epochs", "3", "--seed", "4", "--hidden", "32",
          "--layers", "2")
    if os.path.isfile(m1) and os.path.isfile(m3):
        expect(open(m1, "rb").read() != open(m3, "rb").read(), "other seed, other checkpoint")

    # layout
    ml = os.path.join(TMP, "layout.safetensors")
    p, ep = train(data, "layout:xla:random", ml, "--epochs", "8", "--hidden", "32",
                  "--layers", "2", "--configs", "8")
    q = run("eval", "--model", ml, "--data", data, "--json")
    expect_rc(q, 0, "eval layout")
    try:
        r = json.loads(q.stdout)
        expect(r["metric_name"] == "kendall_tau" and -1 <= r["metric"] <= 1,
               "layout eval metric %r" % r)
        print("layout valid: kendall tau %.4f, opa %.4f" % (r["metric"], r["opa"]))
        # layout prunes to 1 hop by default; the model records it and eval prunes alike
        best = max(v for _, _, v in ep)
        expect(abs(r["metric"] - best) < 1e-5, "layout eval %.6f matches the best logged "
               "valid tau %.6f" % (r["metric"], best))
    except ValueError as e:
        FAILS.append("eval layout --json output: %s (%s)" % (q.stdout, e))
    if os.path.isfile(ml):
        expect(re.search(rb'prune_hops\\*":1\b', open(ml, "rb").read()) is not None,
               "default layout model records prune_hops 1")
    mw = os.path.join(TMP, "layout_whole.safetensors")
    p, epw = train(data, "layout:xla:random", mw, "--epochs", "2", "--hidden", "32",
                   "--layers", "2", "--configs", "8", "--prune-hops", "0")
    q = run("eval", "--model", mw, "--data", data, "--json")
    expect_rc(q, 0, "eval layout --prune-hops 0")
    if os.path.isfile(mw):
        expect(b"prune_hops" not in open(mw, "rb").read(), "--prune-hops 0 model is unpruned")
    try:
        r = json.loads(q.stdout)
        best = max(v for _, _, v in epw)
        expect(abs(r["metric"] - best) < 1e-5, "unpruned layout eval %.6f matches the best "
               "logged valid tau %.6f" % (r["metric"], best))
    except ValueError as e:
        FAILS.append("eval layout --prune-hops 0 output: %s (%s)" % (q.stdout, e))
    mt = os.path.join(TMP, "tile_p0.safetensors")
    train(data, "tile:xla", mt, "--epochs", "1", "--hidden", "16", "--layers", "1",
          "--prune-hops", "0")
    p = run("train", "--data", data, "--collection", "tile:xla", "--out",
            os.path.join(TMP, "tile_p1.st"), "--prune-hops", "1")
    expect_rc(p, 1, "--prune-hops 1 on tile")
    expect("--prune-hops" in p.stderr, "tile pruning refusal: " + p.stderr)

    # time budget: returns and writes a model
    mb = os.path.join(TMP, "budget.safetensors")
    train(data, "tile:xla", mb, "--epochs", "100000", "--patience", "100000",
          "--time-budget", "1")

    resume_tests(data)
    options_tests(data)
    budget_tests(data)
    steps_tests(data)
    rsteps_tests(data)

    # usage errors and failures
    bad = os.path.join(TMP, "bad.safetensors")
    cases = [
        (["train"], "--data"),
        (["train", "--data", data, "--out", bad], "--collection"),
        (["train", "--data", data, "--collection", "tile:gpu", "--out", bad], "--collection"),
        (["train", "--data", data, "--collection", "tile:xla"], "--out"),
        (["train", "--data", data, "--collection", "tile:xla", "--out", bad, "--epochs", "0"],
         "--epochs"),
        (["train", "--data", data, "--collection", "tile:xla", "--out", bad, "--lr", "abc"],
         "--lr"),
        (["train", "--data", data, "--collection", "tile:xla", "--out", bad, "--bogus"],
         "unknown option"),
        (["train", "--data", data, "--collection", "tile:xla", "--out", bad, "--sampling", "x"],
         "--sampling"),
        (["train", "--data", data, "--collection", "tile:xla", "--out", bad, "--pool", "avg"],
         "--pool"),
        (["train", "--data", data, "--collection", "tile:xla", "--out", bad, "--dropout", "1"],
         "--dropout"),
        (["train", "--data", data, "--collection", "tile:xla", "--out", bad, "--progress", "x"],
         "--progress"),
        (["eval", "--data", data], "--model"),
        (["eval", "--model", m1, "--data", data, "--split", "dev"], "--split"),
    ]
    for args, needle in cases:
        p = run(*args)
        expect_rc(p, 2, "usage error for %r" % args)
        expect(needle in p.stderr, "message for %r mentions %r: %s" % (args, needle, p.stderr))
    expect(not os.path.exists(bad), "refused train wrote nothing")
    missing = os.path.join(TMP, "no_such_dir")
    p = run("train", "--data", missing, "--collection", "tile:xla", "--out", bad)
    expect_rc(p, 1, "train on a missing data dir")
    expect("error" in p.stderr and p.stderr.strip(), "missing dir message: " + p.stderr)
    expect(not os.path.exists(bad), "failed train wrote nothing")
    p = run("eval", "--model", os.path.join(TMP, "none.safetensors"), "--data", data)
    expect_rc(p, 1, "eval of a missing model")
    p = run("eval", "--model", os.path.join(data, "npz/tile/xla/valid",
                                            os.listdir(os.path.join(data, "npz/tile/xla/valid"))[0]),
            "--data", data)
    expect_rc(p, 1, "eval of a non-model file")
    for model in (m1, ml):  # test splits carry no runtimes: refused, not NaN
        p = run("eval", "--model", model, "--data", data, "--split", "test")
        expect_rc(p, 1, "eval on the runtime-less test split")
        expect("positive runtimes" in p.stderr, "test-split refusal says why: " + p.stderr)

    if FAILS:
        for f in FAILS:
            print("FAIL:", f)
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
