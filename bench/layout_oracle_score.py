#!/usr/bin/env python3
"""Issue #15, layout: does a model see the oracle's gains?

For each `perfcast tune --oracle` output given (a synth layout graph's stem,
its proposals best first), scores the compiler default and the first
proposal with the model as tune sees it (bench_score: the members' mean and
spread of the predicted difference from the default; the default is 0 +- 0)
and times them with `perfcast simulate`. A model that tune could follow to
the oracle's proposal must give it a mean below 0 (by more than --risk
spreads for tune to take it). Prints per graph: the proposal's true runtime /
default, its tensors changed from the default, the model's mean and spread.
Usage: layout_oracle_score.py PERFCAST BENCH_SCORE MODEL SEED ORACLE.npz ...
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np


def main():
    perfcast, bscore, model, seed = sys.argv[1:5]
    below = n = 0
    with tempfile.TemporaryDirectory() as tmp:
        for f in sys.argv[5:]:
            z = dict(np.load(f))
            first = z["node_config_feat"][:1]
            z["node_config_feat"] = np.concatenate([-np.ones_like(first), first])
            z["config_runtime"] = np.zeros(2, np.int64)
            out = os.path.join(tmp, os.path.basename(f))
            np.savez(out, **z)
            sc = np.loadtxt(subprocess.run([bscore, model, out, "1"], check=True,
                                           capture_output=True, text=True).stdout.splitlines())
            sim = json.loads(subprocess.run([perfcast, "simulate", out, "--seed", seed,
                                             "--scale", "small", "--json"], check=True,
                                            capture_output=True, text=True).stdout)
            t = {e["config"]: e["ns"] for e in sim["runtimes"]}
            ratio = t[1] / sim["default_ns"]
            if ratio > 0.999:
                continue  # the oracle found nothing here
            nch = int((first[0].reshape(-1, 3, 6) >= 0).any(-1).sum())
            n += 1
            below += sc[1, 0] < sc[0, 0]
            print("%-32s true %.3f changes %3d model %+.4f +- %.4f" % (
                os.path.basename(f), ratio, nch, sc[1, 0] - sc[0, 0], sc[1, 1]))
    print("model puts the oracle's proposal below the default on %d of %d graphs" % (below, n))


if __name__ == "__main__":
    main()
