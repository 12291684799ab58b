#!/usr/bin/env python3
"""Issue #15, layout (diagnostic only): training data that holds the gains.

synth's layout files hold no config much faster than the compiler default
(random: far slower; default: the simulated autotuner's log, whose best is
the default within 0.1% on most graphs), so a model trained on them has never
seen a gain. This writes, for each synth layout graph given, a copy whose
configs walk from the default to `perfcast tune --oracle`'s proposals: the
default, and each oracle proposal with a random share (0-100%) of its changed
tensors applied, plus random single changes of those, timed by `perfcast
simulate` (noise-free) as config_runtime. --mutate: each walk point also
gets, half the time, a copy with 1-4 random single-tensor changes (the moves
the search makes, bench/layout_tune_diag.py), so the data also says where
the gains are not. Only for asking whether a model
*could* learn the gains from such data; the product never runs it.
Usage: layout_oracle_data.py [--mutate] PERFCAST SEED OUTDIR ORACLE_DIR FILE.npz ...
(ORACLE_DIR/<stem>.npz: tune --oracle output for FILE; OUTDIR/<stem>.npz
written).
"""
import json
import os
import subprocess
import sys

import numpy as np

from layout_tune_diag import singles


def main():
    mutate = sys.argv[1] == "--mutate"
    if mutate:
        sys.argv.pop(1)
    perfcast, seed, outdir, odir = sys.argv[1:5]
    rng = np.random.default_rng(int(seed))
    os.makedirs(outdir, exist_ok=True)
    for f in sys.argv[5:]:
        stem = os.path.basename(f)
        z = dict(np.load(f))
        orc = np.load(os.path.join(odir, stem))["node_config_feat"]
        nc = orc.shape[1]
        moves = singles(z["node_config_feat"]) if mutate else []
        base = -np.ones((nc, 18), np.float32)
        rows = [base]
        for o in orc:
            ch = [(n, t) for n in range(nc) for t in range(3) if (o[n, 6 * t:6 * t + 6] >= 0).any()]
            if not ch:
                continue
            for _ in range(60):
                r = base.copy()
                frac = rng.uniform()
                for i in np.flatnonzero(rng.uniform(size=len(ch)) < frac):
                    n, t = ch[i]
                    r[n, 6 * t:6 * t + 6] = o[n, 6 * t:6 * t + 6]
                rows.append(r)
                if moves and rng.uniform() < 0.5:  # the search's own moves around it
                    r = r.copy()
                    for i in rng.choice(len(moves), size=int(rng.integers(1, 5))):
                        n, t, order = moves[i]
                        r[n, 6 * t:6 * t + 6] = -1
                        r[n, 6 * t:6 * t + len(order)] = order
                    rows.append(r)
        z["node_config_feat"] = np.stack(rows)
        z["config_runtime"] = np.zeros(len(rows), np.int64)
        out = os.path.join(outdir, stem)
        np.savez(out, **z)
        sim = json.loads(subprocess.run([perfcast, "simulate", out, "--seed", seed, "--scale",
                                         "small", "--json"], check=True, capture_output=True,
                                        text=True).stdout)
        rt = np.zeros(len(rows), np.int64)
        for e in sim["runtimes"]:
            rt[e["config"]] = int(round(e["ns"]))
        z["config_runtime"] = rt
        np.savez(out, **z)
        print("%s: %d configs, best %.3f of the default" % (stem, len(rows),
                                                           rt.min() / sim["default_ns"]))


if __name__ == "__main__":
    main()
