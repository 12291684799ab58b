#!/usr/bin/env python3
"""`perfcast simulate`: the simulated TPU's runtimes of a synth graph's configs.

- with `synth --noise-free` every recorded runtime of every train/valid file
  (tile and layout) equals the simulated one rounded to ns (the same cost
  model, rebuilt from the stem and seed);
- with noise the recorded runtimes lie within a few sigma (1.5%) of it;
- a copy of a file under another directory (as tune writes) still simulates;
- refused: another seed, a renamed stem, a file synth did not write (node_feat
  changed), a config that is not a permutation (edited node_config_feat).

Environment: PERFCAST, PC_TEST_TMP. Exit 77 without numpy.
"""
import glob
import json
import math
import os
import shutil
import sys

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy missing")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clitest import expect, expect_rc, report, run, run_checks  # noqa: E402

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_simulate")


def simulate(path, *extra):
    p = run("simulate", path, "--seed", "7", "--scale", "tiny", "--graphs", "3", "--json", *extra)
    expect_rc(p, 0, "simulate " + path)
    return json.loads(p.stdout) if p.returncode == 0 else None


def files(root, split="train"):
    return sorted(glob.glob(os.path.join(root, "npz", "**", split, "*.npz"), recursive=True))


def synth(out, *extra):
    shutil.rmtree(out, ignore_errors=True)
    p = run("synth", "--out", out, "--scale", "tiny", "--seed", "7", "--graphs", "3", *extra)
    expect_rc(p, 0, "synth " + out)


def check_noise_free():
    out = os.path.join(TMP, "exact")
    synth(out, "--noise-free")
    n = 0
    for f in files(out) + files(out, "valid"):
        r = simulate(f)
        if r is None:
            continue
        rt = np.load(f)["config_runtime"]
        expect(r["configs"] == len(rt), "%s: %d configs simulated of %d" % (f, r["configs"], len(rt)))
        for c in r["runtimes"]:
            want = max(1, int(math.floor(c["ns"] + 0.5)))
            expect(rt[c["config"]] == want, "%s config %d: recorded %d, simulated %.3f"
                   % (f, c["config"], rt[c["config"]], c["ns"]))
            n += 1
        expect(r["default_ns"] > 0, f + ": no default runtime")
    expect(n > 100, "only %d configs compared" % n)


def check_noisy_and_copies():
    out = os.path.join(TMP, "noisy")
    synth(out)
    for f in files(out)[:6]:
        r = simulate(f)
        if r is None:
            continue
        rt = np.load(f)["config_runtime"]
        worst = max(abs(math.log(rt[c["config"]] / c["ns"])) for c in r["runtimes"])
        expect(worst < 0.1, "%s: a recorded runtime is %.3f (log) from the simulated one" % (f, worst))
    # a copy elsewhere, as tune writes OUTDIR/<stem>.npz
    f = files(out)[0]
    cp = os.path.join(TMP, "copy", os.path.basename(f))
    os.makedirs(os.path.dirname(cp), exist_ok=True)
    shutil.copy(f, cp)
    a, b = simulate(f), simulate(cp)
    expect(a and b and a["runtimes"] == b["runtimes"], "a copy simulates differently")


def check_refused():
    out = os.path.join(TMP, "noisy")
    f = [x for x in files(out) if "layout" in x][0]
    p = run("simulate", f, "--seed", "8", "--scale", "tiny", "--graphs", "3")
    expect_rc(p, 1, "another seed")
    expect("not a graph synth wrote" in p.stderr and "--seed" in p.stderr, "message: " + p.stderr)
    bad = os.path.join(TMP, "bad")
    os.makedirs(bad, exist_ok=True)
    p = run("simulate", shutil.copy(f, os.path.join(bad, "renamed.npz")), "--seed", "7")
    expect_rc(p, 1, "a stem synth does not write")
    expect("renamed.npz" in p.stderr and "<model>_s<N>" in p.stderr, "message: " + p.stderr)
    z = dict(np.load(f))
    z["node_feat"] = z["node_feat"].copy()
    z["node_feat"][0, 21] += 1
    edited = os.path.join(bad, os.path.basename(f))
    np.savez(edited, **z)
    p = run("simulate", edited, "--seed", "7", "--scale", "tiny", "--graphs", "3")
    expect_rc(p, 1, "edited node_feat")
    expect("node_feat" in p.stderr, "message: " + p.stderr)
    z = dict(np.load(f))
    cf = z["node_config_feat"].copy()
    cf[0, 0, :6] = [0, 0, -1, -1, -1, -1]
    z["node_config_feat"] = cf
    np.savez(edited, **z)
    p = run("simulate", edited, "--seed", "7", "--scale", "tiny", "--graphs", "3")
    expect_rc(p, 1, "a config that is no permutation")
    expect("config 0" in p.stderr and "permutation" in p.stderr, "message: " + p.stderr)


def main():
    os.makedirs(TMP, exist_ok=True)
    run_checks([check_noise_free, check_noisy_and_copies, check_refused])
    return report("simulate: ok")


if __name__ == "__main__":
    sys.exit(main())
