#!/usr/bin/env python3
"""bench/second_sim.py, issue #15's second simulated TPU (a benchmark tool):
its sanity, not its accuracy.

- on `synth --scale tiny` tile and layout files (train split): one runtime per
  config, positive and finite, the same on a second run (deterministic); the
  layout default (all -1) timed directly equals an all -1 config in the file's
  place;
- a hand-made elementwise kernel (64 x 1024 f32) under tiles (r, t): the
  padding waste of a tile that divides and is (8,128)-aligned is 1; sweeping
  one tile dim with the other fixed ((8, t) and (r, 128)), among tiles with
  the same number of grid steps more padding waste never runs faster, and
  some such groups do differ in waste (the check is not vacuous);
- a hand-made layout program: a configurable dot whose output layout
  disagrees with its elementwise consumer's pays a copy (slower than the
  default), and a minor dim of 3 (padded to 128 lanes) on an operand costs
  more than the compiler's choice.

Environment: PERFCAST, PC_TEST_TMP. Exit 77 without numpy.
"""
import glob
import math
import os
import shutil
import sys

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy missing")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
from clitest import expect, expect_rc, report, run, run_checks  # noqa: E402
import second_sim  # noqa: E402

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_second_sim")
F32 = 2 + 11  # node_feat column of the F32 one-hot


def synth_files():
    d = os.path.join(TMP, "data")
    if not os.path.isdir(d):
        p = run("synth", "--out", d, "--scale", "tiny", "--seed", "5", "--graphs", "3",
                "--collections", "tile:xla,layout:xla:random")
        expect_rc(p, 0, "synth")
    return sorted(glob.glob(os.path.join(d, "npz", "**", "train", "*.npz"), recursive=True))


def check_synth():
    files = synth_files()
    kinds = set()
    for f in files:
        z = dict(np.load(f))
        k = second_sim.kind(z)
        kinds.add(k)
        a, b = second_sim.simulate(f), second_sim.simulate(f)
        c = (z["config_feat"] if k == "tile" else z["node_config_feat"]).shape[0]
        expect(a.shape == (c,), "%s: %s runtimes for %d configs" % (f, a.shape, c))
        expect(np.all(np.isfinite(a)) and np.all(a > 0), "%s: runtimes not positive finite" % f)
        expect(np.array_equal(a, b), "%s: two runs differ" % f)
        if k == "layout":
            d = second_sim.layout_default_ns(f)
            z["node_config_feat"] = np.full_like(z["node_config_feat"][:1], -1.0)
            expect(math.isfinite(d) and d > 0, "%s: default %r" % (f, d))
            expect(abs(second_sim.simulate(z)[0] - d) <= 1e-9 * d,
                   "%s: all -1 config %r != default %r" % (f, second_sim.simulate(z)[0], d))
    expect(kinds == {"tile", "layout"}, "synth files of both kinds: %s" % sorted(kinds))


def feat(dims, layout, opcode_root=False):
    r = np.zeros(140, dtype=np.float32)
    r[0] = 1.0 if opcode_root else 0.0
    r[F32] = 1.0
    r[21:21 + len(dims)] = dims
    r[27], r[28] = sum(dims), float(np.prod(dims))
    r[134:134 + len(layout)] = layout
    return r


def elementwise_kernel(tiles):
    dims = (64, 1024)
    nf = np.stack([feat(dims, (1, 0)), feat(dims, (1, 0)), feat(dims, (1, 0), True)])
    cf = np.zeros((len(tiles), 24), dtype=np.float32)
    for k, (r, t) in enumerate(tiles):
        cf[k, 8:10] = (r, t)
        cf[k, 14], cf[k, 15] = r + t, r * t
    return {"node_feat": nf, "node_opcode": np.array([63, 63, 2], dtype=np.uint8),
            "edge_index": np.array([[2, 0], [2, 1]], dtype=np.int64), "config_feat": cf}


def check_padding_waste():
    dims, mtm = (64, 1024), (1, 0)
    expect(second_sim.tile_padding_waste(dims, (8, 128), mtm, 4) == (64.0, 1.0),
           "an aligned dividing tile wastes nothing: %r"
           % (second_sim.tile_padding_waste(dims, (8, 128), mtm, 4),))
    # one tile dim fixed, the other swept: lanes (8, t) and sublanes (r, 128)
    tiles = [(8, t) for t in range(16, 1025)] + [(r, 128) for r in range(1, 65)]
    ns = second_sim.simulate(elementwise_kernel(tiles))
    groups = {}
    for (r, t), x in zip(tiles, ns):
        steps, waste = second_sim.tile_padding_waste(dims, (r, t), mtm, 4)
        groups.setdefault((r == 8, steps), []).append((waste, x, (r, t)))
    varied = 0
    for (_, steps), g in groups.items():
        g.sort()
        varied += g[0][0] < g[-1][0] - 1e-9
        for (w0, x0, t0), (w1, x1, t1) in zip(g, g[1:]):
            if w1 > w0 + 1e-9:
                expect(x1 >= x0 * (1 - 1e-9), "%d steps: tile %s (waste %.3f) %.1f ns faster "
                       "than %s (waste %.3f) %.1f ns" % (steps, t1, w1, x1, t0, w0, x0))
    expect(varied >= 5, "only %d step groups with different waste" % varied)


def check_layout_copy():
    # p0 (512,3) . p1 (3,256) -> dot (512,256), configurable; add(dot, p2) elementwise
    nf = np.stack([feat((512, 3), (1, 0)), feat((3, 256), (1, 0)), feat((512, 256), (1, 0)),
                   feat((512, 256), (1, 0)), feat((512, 256), (1, 0), True)])
    cfg = np.full((3, 1, 18), -1.0, dtype=np.float32)
    cfg[1, 0, 0:2] = (0, 1)  # dot output column-major: the add needs a copy
    cfg[2, 0, 6:8] = (1, 0)  # lhs as the producer makes it (minor dim 3)...
    cfg[2, 0, 12:14] = (0, 1)  # ...and rhs transposed: a copy into a padded layout
    z = {"node_feat": nf, "node_opcode": np.array([63, 63, 34, 63, 2], dtype=np.uint8),
         "edge_index": np.array([[2, 0], [2, 1], [4, 2], [4, 3]], dtype=np.int64),
         "node_config_ids": np.array([2]), "node_config_feat": cfg,
         "node_splits": np.array([[0, 5]])}
    ns = second_sim.simulate(z)
    d = second_sim.layout_default_ns(z)
    expect(abs(ns[0] - d) <= 1e-9 * d, "config 0 is the default: %r vs %r" % (ns[0], d))
    expect(ns[1] > ns[0], "disagreeing output layout %.1f ns not slower than default %.1f"
           % (ns[1], ns[0]))
    expect(ns[2] > ns[0], "transposed rhs %.1f ns not slower than default %.1f" % (ns[2], ns[0]))


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP, exist_ok=True)
    run_checks([check_synth, check_padding_waste, check_layout_copy])
    return report("second_sim: sane on synth data, padding and layout checks hold")


if __name__ == "__main__":
    sys.exit(main())
