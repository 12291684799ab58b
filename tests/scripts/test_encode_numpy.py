#!/usr/bin/env python3
"""perfcast's feature encodings (src/gnn/encode.c) against bench/encode_np.py.

bench/encode_np.py is an independent numpy implementation written from the
spec in src/gnn/encode.h. For every option bits value 0..7 and the three
kinds (node, tile, layout) both are run on
  (a) the real feature rows of a tiny synthetic dataset (perfcast synth):
      node_feat of all graphs, tile config_feat, layout node_config_feat
      reshaped to (-1, 18);
  (b) adversarial rows built here: node ranks 0..9 (beyond the 6 slots),
      zero-size dims, zero-element tensors without a layout, missing and
      garbage layouts, rows already -1-padded, window rows with inconsistent
      counts, dynamic-slice values (0, -1, large), huge dims (2^20+3, 2^24+1,
      2^30+7) and fractional sizes for the log/mod/floor columns; tile groups
      with 0/-1 holes; layout configs with partial -1 padding, duplicates and
      out-of-range axes.
Outputs must be equal bit for bit, except the log2 columns:
|C - numpy| <= 1e-6 * (1 + |numpy|). A few hand-computed rows check both
against values worked out from the spec, and pad_minus1 is checked to be
idempotent on well-formed rows (the spec's claim). The C tool's error exits
are checked too.

Driven through tests/tools/pc_encode_tool (npz in/out).
Environment (tests/CMakeLists.txt): PERFCAST, PC_ENCODE_TOOL, PC_TEST_TMP.
Exit 0 pass, 1 fail, 77 skip (numpy missing).
"""
import glob
import os
import shutil
import subprocess
import sys
import time

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy not importable by %s (install python3-numpy)" % sys.executable)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import encode_np as E  # noqa: E402

from clitest import CLI, FAILS, report  # noqa: E402

TOOL = os.environ.get("PC_ENCODE_TOOL")
TMP = os.environ.get("PC_TEST_TMP") or "/tmp/pc_test_encode_numpy"
MAXDIFF = {}  # kind -> [max |diff| exact cols, max |diff| log2 cols, max rel log2]


def fail(msg):
    FAILS.append(msg)  # all printed by report() at the end


# ---- running the C side ------------------------------------------------------------


def c_encode(x, bits, kind, tag="x", graph=None):
    inp = os.path.join(TMP, "in_%s.npz" % tag)
    out = os.path.join(TMP, "out_%s.npz" % tag)
    extra = {}
    for k, v in (graph or {}).items():
        extra[k] = np.ascontiguousarray(v, dtype=np.float32 if k == "feat" else np.int32)
    np.savez(inp, x=np.ascontiguousarray(x, dtype=np.float32), **extra)
    p = subprocess.run([TOOL, str(bits), inp, out, kind], capture_output=True, text=True,
                       timeout=120)
    if p.returncode != 0:
        fail("pc_encode_tool %d %s (%s): exit %d: %s" % (bits, kind, tag, p.returncode,
                                                         p.stderr.strip()))
        return None
    with np.load(out) as z:
        y = z["y"]
    os.remove(inp)
    os.remove(out)
    if y.dtype != np.float32:
        fail("pc_encode_tool wrote %s, expected float32" % y.dtype)
    return y


def np_encode(x, bits, kind, graph=None):
    if kind == "node":
        return E.encode_node(x, bits, graph)
    return E.encode_configs(x, kind, bits, graph)


# ---- column names and log2 columns (from the spec) ---------------------------------


def col_names(kind, bits, in_dim):
    names = ["in[%d]" % c for c in range(in_dim)]
    if kind == "node":
        if bits & 2:
            for i in range(6):
                names += ["dim%d.%s" % (i, t) for t in ("log2", "mod128", "div128")]
            for i in range(2):
                names += ["dyn%d.%s" % (i, t) for t in ("log2", "mod128", "div128")]
            names += ["lane.%s" % t for t in ("d", "log2", "mod128", "div128")]
            names += ["sublane.%s" % t for t in ("d", "log2", "mod8", "div8")]
        if bits & 4:
            names += ["lay.%s" % t for t in LAY_NAMES]
        if bits & 8:
            names += ["roof.%s" % t for t in ROOF_NAMES]
    elif kind == "tile":
        if bits & 2:
            for g in ("kernel", "output", "input"):
                for i in range(6):
                    names += ["%s%d.%s" % (g, i, t) for t in ("log2", "mod128", "div128")]
        if bits & 32:
            names += ["steps%d" % i for i in range(6)] + ["steps.grid", "steps.fill.ratio"]
        if bits & 64:
            names += ["rsteps%d" % i for i in range(3)] + ["rsteps.prod"]
    else:
        if bits & 4:
            for t in ("out", "in", "kern"):
                names += ["%s.%s" % (t, n) for n in LAY_NAMES]
        if bits & 16:
            names += ["mismatch.in", "mismatch.out", "mismatch.total"]
    return names


# the roofline ratio is a double division chain too: compared like the log2 columns
ROOF_NAMES = ["flops.log2", "bytes.log2", "intensity.ratio", "compute_bound", "time.log2"]

LAY_NAMES = ["set", "default", "minor_last", "second_minor", "disorder"] + \
            ["minor=%d" % a for a in range(6)]


def log2_mask(names):
    return np.array([n.endswith(".log2") or n.endswith(".ratio") for n in names], dtype=bool)


# ---- comparison ---------------------------------------------------------------------


def describe_input(kind, row):
    if kind == "node":
        return ("dims=%s prod=%g m2m=%s win=%s cnt=%g/%g dyn=%s" % (
            row[21:27].tolist(), row[28], row[134:140].tolist(), row[37:43].tolist(),
            row[91], row[92], row[121:123].tolist()))
    if kind == "tile":
        return "kernel=%s output=%s input=%s" % (row[0:6].tolist(), row[8:14].tolist(),
                                                row[16:22].tolist())
    return "out=%s in=%s kern=%s" % (row[0:6].tolist(), row[6:12].tolist(), row[12:18].tolist())


def compare(x, y_c, y_np, kind, bits, src, rowtags=None):
    if y_c is None:
        return
    if y_c.shape != y_np.shape:
        fail("%s bits=%d %s: C shape %r, numpy shape %r" % (kind, bits, src, y_c.shape,
                                                           y_np.shape))
        return
    names = col_names(kind, bits, x.shape[1])
    if len(names) != y_np.shape[1]:
        fail("%s bits=%d: %d column names for width %d (test bug)" % (kind, bits, len(names),
                                                                       y_np.shape[1]))
        return
    lg = log2_mask(names)
    a = y_c.astype(np.float64)
    b = y_np.astype(np.float64)
    nan_c, nan_np = np.isnan(a), np.isnan(b)
    diff = np.abs(a - b)
    diff[nan_c & nan_np] = 0.0
    diff[nan_c ^ nan_np] = np.inf
    tol = np.where(lg[None, :], 1e-6 * (1.0 + np.abs(b)), 0.0)
    bad = diff > tol
    md = MAXDIFF.setdefault(kind, [0.0, 0.0, 0.0])
    if diff.size:
        ex = diff[:, ~lg]
        md[0] = max(md[0], float(ex.max()) if ex.size else 0.0)
        if lg.any():
            md[1] = max(md[1], float(diff[:, lg].max()))
            md[2] = max(md[2], float((diff[:, lg] / (1.0 + np.abs(b[:, lg]))).max()))
    if not bad.any():
        return
    rows, cols = np.nonzero(bad)
    lines = []
    for r, c in list(zip(rows, cols))[:12]:
        tag = rowtags[r] if rowtags is not None else ""
        lines.append("    row %d%s col %d (%s): numpy/spec %r, C %r\n      input: %s" % (
            r, " [%s]" % tag if tag else "", c, names[c], float(y_np[r, c]), float(y_c[r, c]),
            describe_input(kind, x[r])))
    fail("%s bits=%d %s: %d values in %d rows differ (columns %s):\n%s" % (
        kind, bits, src, int(bad.sum()), len(set(rows.tolist())),
        sorted(set(names[c] for c in cols.tolist()))[:20], "\n".join(lines)))


# ---- data: synthetic dataset ---------------------------------------------------------


def synth_rows():
    out = os.path.join(TMP, "synth")
    p = subprocess.run([CLI, "synth", "--out", out, "--scale", "tiny", "--seed", "3",
                        "--threads", "2"], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        fail("perfcast synth: exit %d: %s" % (p.returncode, p.stderr.strip()))
        return None
    node, tile, lay = [], [], []
    files = sorted(glob.glob(os.path.join(out, "**", "*.npz"), recursive=True))
    for f in files:
        with np.load(f) as z:
            node.append(z["node_feat"])
            if "config_feat" in z.files:
                tile.append(z["config_feat"])
            if "node_config_feat" in z.files:
                lay.append(z["node_config_feat"].reshape(-1, 18))
    if not node or not tile or not lay:
        fail("synth: %d files, node %d tile %d layout %d arrays" % (len(files), len(node),
                                                                    len(tile), len(lay)))
        return None
    return {"node": np.concatenate(node).astype(np.float32),
            "tile": np.concatenate(tile).astype(np.float32),
            "layout": np.concatenate(lay).astype(np.float32)}


# ---- data: adversarial rows ---------------------------------------------------------

SIZES = np.array([0, 1, 2, 3, 5, 7, 8, 9, 16, 127, 128, 129, 255, 256, 300, 1000, 1023, 1024,
                  4096, 65535, 2 ** 20 + 3, 2 ** 24 + 1, 2 ** 30 + 7, 3e9, 2.5, 300.75],
                 dtype=np.float64)


def rand_sizes(rng, shape, p_zero=0.08):
    v = rng.choice(SIZES[1:], size=shape)
    small = rng.random(shape) < 0.5
    v = np.where(small, rng.integers(1, 600, size=shape), v)
    return np.where(rng.random(shape) < p_zero, 0.0, v)


def adv_node(rng, n):
    """Adversarial raw node rows; tags say which case each row came from."""
    x = rng.integers(-1, 6, size=(n, 140)).astype(np.float64)  # noise in unused columns
    tags = []
    R = rng.integers(0, 10, size=n)  # true rank, may exceed the 6 slots
    R[rng.random(n) < 0.15] = 0
    dims = np.zeros((n, 6))
    full = rand_sizes(rng, (n, 10))
    for i in range(6):
        dims[:, i] = np.where(i < R, full[:, i], 0.0)
    m = np.arange(10)[None, :] < R[:, None]
    prod = np.where(R > 0, np.prod(np.where(m, full, 1.0), axis=1), 1.0)
    x[:, 21:27] = dims
    x[:, 27] = dims.sum(axis=1)
    x[:, 28] = np.minimum(prod, 1e30)  # stays finite in float32
    # layouts: 0 permutation, 1 row-major default, 2 reversed, 3 missing (zeros),
    # 4 garbage ints, 5 minor-swapped default, 6 zeros with a stray positive
    lay_case = rng.integers(0, 7, size=n)
    lay = np.zeros((n, 6))
    for r in range(n):  # construction only; the encoders are vectorised
        k = min(R[r], 6)
        c = lay_case[r]
        if R[r] == 0:
            c = 3 if c != 4 else 4
        if c == 0:
            perm = rng.permutation(R[r])
        elif c == 1:
            perm = np.arange(R[r])[::-1]
        elif c == 2:
            perm = np.arange(R[r])
        elif c == 5:
            perm = np.arange(R[r])[::-1].copy()
            if R[r] >= 2:
                perm[[0, 1]] = perm[[1, 0]]
        else:
            perm = None
        if perm is not None:
            lay[r, :k] = perm[:k]
        elif c == 4:
            lay[r] = rng.integers(-1, 9, size=6)
        elif c == 6:
            lay[r, rng.integers(0, 6)] = rng.integers(1, 8)
        tags.append("R=%d lay=%d" % (R[r], c))
    x[:, 134:140] = lay
    # zero-element tensors without a layout (product 0, trailing zero dims)
    z = rng.random(n) < 0.05
    x[z, 21:27] = 0.0
    x[z, 28] = 0.0
    x[z, 134:140] = 0.0
    for r in np.nonzero(z)[0]:
        tags[r] += " zero-elem"
    # windows: W dims, sizes may be 0, counts sometimes inconsistent
    W = rng.integers(0, 9, size=n)
    for g in range(6):
        vals = rng.integers(0, 6, size=(n, 6)).astype(np.float64)
        if g == 0:
            vals = np.where(rng.random((n, 6)) < 0.2, 0.0, vals)
        for i in range(6):
            x[:, 37 + 8 * g + i] = np.where(i < W, vals[:, i], 0.0)
        x[:, 37 + 8 * g + 6] = x[:, 37 + 8 * g:37 + 8 * g + 6].sum(axis=1)
        x[:, 37 + 8 * g + 7] = np.where(W > 0, np.prod(np.where(np.arange(6) < W[:, None],
                                                                x[:, 37 + 8 * g:43 + 8 * g], 1.0),
                                                       axis=1), 0.0)
    rev = rng.integers(0, 2, size=(n, 6)).astype(np.float64)
    x[:, 85:91] = np.where(np.arange(6)[None, :] < W[:, None], rev, 0.0)
    t = rng.integers(0, W + 1)
    x[:, 91] = t
    x[:, 92] = W - t
    badcnt = rng.random(n) < 0.1
    x[badcnt, 91] = 0.0
    x[badcnt, 92] = 0.0
    # dynamic slice sizes: 0 kept, -1 absent, large values
    dyn = rand_sizes(rng, (n, 2), p_zero=0.2)
    dyn = np.where(rng.random((n, 2)) < 0.1, -1.0, dyn)
    x[:, 121:123] = dyn
    x[:, 123] = dyn.sum(axis=1)
    x[:, 124] = dyn.prod(axis=1)
    # a share of rows already -1-padded (the 1st-place re-export): as written
    # in the spec, from the true rank R (= r for these well-formed rows)
    pre = (rng.random(n) < 0.25) & (lay_case != 4) & (lay_case != 6) & ~z
    for i in range(6):
        beyond = pre & (i >= np.minimum(R, 6))
        x[beyond, 21 + i] = -1.0
        x[beyond, 134 + i] = -1.0
        wb = pre & (i >= np.minimum(W, 6))
        for g in range(6):
            x[wb, 37 + 8 * g + i] = -1.0
        x[wb, 85 + i] = -1.0
    nolay = pre & (R >= 2) & (lay_case == 3)
    x[nolay, 134:140] = -1.0
    for r in np.nonzero(pre)[0]:
        tags[r] += " pre-padded"
    wellformed = (lay_case != 4) & (lay_case != 6)
    return x.astype(np.float32), tags, wellformed


def adv_tile(rng, n):
    x = rng.integers(-1, 6, size=(n, 24)).astype(np.float64)
    tags = []
    cases = rng.integers(0, 4, size=(n, 3))
    for g in range(3):
        c = rng.integers(0, 7, size=n)  # slots used
        v = rand_sizes(rng, (n, 6), p_zero=0.0)
        s = np.where(np.arange(6)[None, :] < c[:, None], v, 0.0)
        holes = cases[:, g] == 1  # a 0 before the last slot > 0
        s[holes, 0] = 0.0
        neg = cases[:, g] == 2  # a -1 before the last slot > 0
        s[neg, 1] = -1.0
        garbage = cases[:, g] == 3
        s[garbage] = rng.integers(-2, 4, size=(int(garbage.sum()), 6))
        x[:, 8 * g:8 * g + 6] = s
        x[:, 8 * g + 6] = s.sum(axis=1)
        x[:, 8 * g + 7] = np.where(c > 0, np.clip(np.prod(np.where(s != 0, s, 1.0), axis=1),
                                                  -1e30, 1e30), 0.0)
    for r in range(n):
        tags.append("cases=%s" % cases[r].tolist())
    return x.astype(np.float32), tags


def adv_layout(rng, n):
    x = np.full((n, 18), -1.0)
    tags = []
    for r in range(n):
        tt = []
        for t in range(3):
            c = rng.integers(0, 7)
            k = rng.integers(1, 7)
            s = np.full(6, -1.0)
            if c == 0:
                pass  # compiler default
            elif c == 1:
                s[:k] = rng.permutation(k)
            elif c == 2:
                s[:k] = np.arange(k)[::-1]
            elif c == 3:
                s[:k] = np.arange(k)
            elif c == 4:  # partial -1 padding in the middle
                s[:k] = rng.permutation(k)
                s[rng.integers(0, 6)] = -1.0
            elif c == 5:  # non-permutations: duplicates, axes >= rank, 6..8
                s[:k] = rng.integers(0, 9, size=k)
            else:
                s[:] = rng.integers(-2, 7, size=6)
            x[r, 6 * t:6 * t + 6] = s
            tt.append(int(c))
        tags.append("cases=%s" % tt)
    return x.astype(np.float32), tags


# ---- hand-computed rows (values worked out from the spec text) -------------------------


def hand_checks():
    # Node: rank 2, dims [2^20+3, 5], layout [0, 1] (minor-most axis 0).
    x = np.zeros((3, 140), dtype=np.float32)
    x[0, 21:23] = [2 ** 20 + 3, 5]
    x[0, 27], x[0, 28] = 2 ** 20 + 8, (2 ** 20 + 3) * 5
    x[0, 134:136] = [0, 1]
    x[0, 37:39] = [3, 3]
    x[0, 91], x[0, 92] = 0, 2
    x[0, 121] = 0  # dynamic slice size 0 stays 0
    # Scalar: product 1, no dims, no layout -> rank 0.
    x[1, 28] = 1
    # Rank 3 without a layout, a zero-size middle dim: dims [4, 0, 7].
    x[2, 21:24] = [4, 0, 7]
    x[2, 28] = 0
    want = {
        # (row, column of the bits=7 output) -> value from the spec
        (0, 23): -1, (0, 24): -1, (0, 26): -1, (0, 134): 0, (0, 135): 1, (0, 136): -1,
        (0, 39): -1, (0, 45 + 2): -1, (0, 85 + 1): 0, (0, 85 + 2): -1,
        (0, 140 + 0): np.log2(1 + 2 ** 20 + 3), (0, 141): 3, (0, 142): 8192,
        (0, 143): np.log2(6), (0, 144): 5, (0, 145): 0, (0, 146): -1,
        (0, 158): 0, (0, 159): 0, (0, 160): 0, (0, 161): 0,
        (0, 164): 2 ** 20 + 3, (0, 166): 3, (0, 167): 8192,
        (0, 168): 5, (0, 169): np.log2(6), (0, 170): 5, (0, 171): 0,
        (0, 172): 1, (0, 173): 0, (0, 174): 0, (0, 175): 0, (0, 176): 1, (0, 177): 1,
        (0, 178): 0,
        (1, 21): -1, (1, 134): -1, (1, 140): -1, (1, 164): -1, (1, 168): -1, (1, 172): 0,
        (2, 23): 7, (2, 24): -1, (2, 134): -1, (2, 135): -1, (2, 143): 0, (2, 144): 0,
        (2, 145): 0, (2, 146): np.log2(8), (2, 164): -1, (2, 168): -1, (2, 172): 0,
    }
    # Tile: kernel [1, 0, 200] (a 0 hole before the last slot > 0), output [], input [3].
    t = np.zeros((1, 24), dtype=np.float32)
    t[0, 0:3] = [1, 0, 200]
    t[0, 16] = 3
    twant = {(0, 24): 1, (0, 27): 0, (0, 28): 0, (0, 29): 0, (0, 30): np.log2(201),
             (0, 31): 72, (0, 32): 1, (0, 33): -1, (0, 42): -1, (0, 60): 2, (0, 61): 3,
             (0, 62): 0, (0, 63): -1}
    # Layout: output [2, 0, 1] (rank 3), input [-1 ...] (default), kernel [1, -1, 0] (rank 1).
    lz = np.full((1, 18), -1, dtype=np.float32)
    lz[0, 0:3] = [2, 0, 1]
    lz[0, 12], lz[0, 14] = 1, 0
    lwant = {(0, 18): 1, (0, 19): 0, (0, 20): 1, (0, 21): 0, (0, 22): np.float32(1) / 3,
             (0, 23): 0, (0, 25): 1, (0, 29): 0, (0, 39): 0,
             # kernel block at 18 + 22 = 40: rank 1 (leading slots >= 0), s[0] = 1
             (0, 40): 1, (0, 41): 0, (0, 42): 0, (0, 43): 0, (0, 44): 0, (0, 45): 0,
             (0, 46): 1, (0, 47): 0}
    for kind, xx, w in (("node", x, want), ("tile", t, twant), ("layout", lz, lwant)):
        for side, y in (("numpy", np_encode(xx, 7, kind)), ("C", c_encode(xx, 7, kind, "hand"))):
            if y is None:
                continue
            for (r, c), v in sorted(w.items()):
                got = float(y[r, c])
                if abs(got - float(v)) > 1e-6 * (1 + abs(float(v))):
                    fail("hand-computed %s row %d col %d: spec says %r, %s gives %r" % (
                        kind, r, c, float(v), side, got))


# ---- error exits of the tool -------------------------------------------------------------


def tool_errors():
    good = os.path.join(TMP, "err_in.npz")
    np.savez(good, x=np.zeros((2, 140), dtype=np.float32))
    narrow = os.path.join(TMP, "err_narrow.npz")
    np.savez(narrow, x=np.zeros((2, 10), dtype=np.float32))
    f64 = os.path.join(TMP, "err_f64.npz")
    np.savez(f64, x=np.zeros((2, 140)))
    nox = os.path.join(TMP, "err_nox.npz")
    np.savez(nox, z=np.zeros((2, 140), dtype=np.float32))
    out = os.path.join(TMP, "err_out.npz")
    cases = [
        (["128", good, out, "node"], "bits"),
        (["32", good, out, "tile"], "steps needs"),
        (["8", good, out, "node"], "roofline needs"),
        (["16", good, out, "layout"], "mismatch needs"),
        (["x", good, out, "node"], "BITS"),
        (["7", good, out, "graph"], "KIND"),
        (["1", narrow, out, "node"], "columns"),
        (["2", narrow, out, "tile"], "columns"),
        (["4", narrow, out, "layout"], "columns"),
        (["7", f64, out, "node"], "float32"),
        (["7", nox, out, "node"], "'x'"),
        (["7", os.path.join(TMP, "missing.npz"), out, "node"], "missing.npz"),
        (["7", good, out], "usage"),
    ]
    for args, needle in cases:
        if os.path.exists(out):
            os.remove(out)
        p = subprocess.run([TOOL] + args, capture_output=True, text=True, timeout=60)
        if p.returncode != 1 or needle not in p.stderr or os.path.exists(out):
            fail("pc_encode_tool %s: exit %d (want 1), stderr %r (want %r), output %s" % (
                " ".join(args), p.returncode, p.stderr.strip(), needle,
                "written" if os.path.exists(out) else "absent"))
    # bits 0 passes any width through unchanged
    y = c_encode(np.arange(20, dtype=np.float32).reshape(2, 10), 0, "node", "w0")
    if y is not None and not np.array_equal(y, np.arange(20, dtype=np.float32).reshape(2, 10)):
        fail("bits 0 on a 10-column node array is not a copy")


# ---- the graph-wide encodings: roofline (node) and mismatch (layout) ------------------

GRAPH_NODE_BITS = (8, 9, 15, 31)
GRAPH_LAYOUT_BITS = (16, 20, 23, 31)


def synth_graphs():
    """Each synth graph (tiny, seed 3, written by synth_rows) against numpy."""
    files = sorted(glob.glob(os.path.join(TMP, "synth", "**", "*.npz"), recursive=True))
    seen = {"node": 0, "layout": 0}
    for i, f in enumerate(files):
        with np.load(f) as z:
            feat = z["node_feat"].astype(np.float32)
            g = {"op": z["node_opcode"], "edges": z["edge_index"].reshape(-1, 2)}
            for bits in GRAPH_NODE_BITS:
                compare(feat, c_encode(feat, bits, "node", "g", g), np_encode(feat, bits, "node", g),
                        "node", bits, "synth graph %s" % os.path.basename(f))
            seen["node"] += 1
            if "node_config_feat" not in z.files:
                continue
            lay = z["node_config_feat"][:40].reshape(-1, 18).astype(np.float32)
            gl = {"feat": feat, "edges": g["edges"], "cfg_ids": z["node_config_ids"]}
            for bits in GRAPH_LAYOUT_BITS:
                compare(lay, c_encode(lay, bits, "layout", "gl", gl),
                        np_encode(lay, bits, "layout", gl), "layout", bits,
                        "synth graph %s" % os.path.basename(f))
            seen["layout"] += 1
    if not seen["node"] or not seen["layout"]:
        fail("synth graphs: %r (need node and layout graphs)" % seen)
    return seen


ELEM_IDS = sorted(E._ELEMENTWISE)


def adv_graph(rng, n=500):
    """A random graph: every roofline category, ranks 0..6, unit dims, element types
    (none, one, two set), conv dimension numbers in and out of 0..5, negative products,
    consumers with 0..4 operands (duplicates too), and consistent batched dots."""
    x = np.zeros((n, 140), dtype=np.float32)
    ops = rng.choice([34, 26, 70, 72, 27, 98, 63, 41, 0, 100] + ELEM_IDS, size=n)
    for u in range(n):
        r = int(rng.integers(0, 7))
        d = rng.choice([1, 1, 2, 3, 8, 16, 128, 129, 1000], size=r).astype(np.float64)
        x[u, 21:21 + r] = d
        x[u, 28] = float(np.prod(d)) if rng.random() > 0.03 else -5.0
        t = rng.integers(0, 22)
        if t < 19:
            x[u, 2 + t] = 1.0
        if t == 19:
            x[u, 2 + 3] = x[u, 2 + 11] = 1.0
        x[u, 44] = float(rng.choice([0, 1, 9, 49]))
        x[u, 100] = float(rng.integers(0, 8))
        x[u, 106] = float(rng.integers(0, 8))
        lay = rng.permutation(r)
        x[u, 134:134 + r] = lay[:6]
    edges = []
    for u in range(1, n):
        for _ in range(int(rng.integers(0, 5))):
            edges.append((u, int(rng.integers(0, n))))
    # consistent batched dots and convolutions (nodes 0..2 as operands of 3 and 4..6 of 7)
    x[0:4, 21:27] = 0
    x[0, 21:24] = [4, 32, 64]
    x[1, 21:24] = [4, 64, 16]
    x[2, 21:24] = [4, 32, 16]
    x[3, 21:24] = [4, 32, 16]
    for u in range(4):
        x[u, 28] = np.prod(x[u, 21:24])
    ops[3] = 34
    edges += [(3, 0), (3, 1)]
    edges = np.array(edges, dtype=np.int32).reshape(-1, 2)
    return x, ops.astype(np.int32), edges


def adv_mismatch_graph(rng, n=300, nc=40, c=25):
    """Random layouts: producers configurable or not, unit dims, missing node layouts,
    partial -1 configs, ranks that disagree, nodes without operands."""
    x = np.zeros((n, 140), dtype=np.float32)
    for u in range(n):
        r = int(rng.integers(0, 5))
        x[u, 21:21 + r] = rng.choice([1, 1, 2, 8, 128], size=r)
        x[u, 28] = np.prod(x[u, 21:21 + r])
        if rng.random() > 0.15:
            x[u, 134:134 + r] = rng.permutation(r)
    cfg = np.sort(rng.choice(n, size=nc, replace=False)).astype(np.int32)
    edges = []
    for u in range(n):
        for _ in range(int(rng.integers(0, 4))):
            edges.append((u, int(rng.integers(0, n))))
    for j in range(1, nc):  # configurable producers
        edges.append((int(cfg[j]), int(cfg[rng.integers(0, j)])))
    edges = np.array(edges, dtype=np.int32).reshape(-1, 2)
    rows = np.full((c * nc, 18), -1.0, dtype=np.float32)
    for i in range(c * nc):
        for t in range(3):
            if rng.random() < 0.6:
                r = int(rng.integers(1, 5))
                rows[i, 6 * t:6 * t + r] = rng.permutation(r)
    return x, {"feat": x, "edges": edges, "cfg_ids": cfg}, rows


def graph_hand_checks():
    """Roofline and mismatch values worked out by hand from the specs."""
    # dot [64,128] x [128,256] bf16 (one-hot column 13), operands parameters (op 63)
    x = np.zeros((3, 140), dtype=np.float32)
    for u, d in enumerate(([64, 128], [128, 256], [64, 256])):
        x[u, 21:23] = d
        x[u, 28] = d[0] * d[1]
        x[u, 2 + 13] = 1.0
    op = np.array([63, 63, 34], dtype=np.int32)
    g = {"op": op, "edges": np.array([[2, 0], [2, 1]], dtype=np.int32)}
    F, B = 2.0 * 64 * 256 * 128, 2.0 * (64 * 128 + 128 * 256 + 64 * 256)
    want = [np.log2(1 + F), np.log2(1 + B), F / B / (2.75e14 / 1.2e12), 0.0,
            np.log2(1 + 1e9 * max(F / 2.75e14, B / 1.2e12))]
    for side, y in (("C", c_encode(x, 8, "node", "hand", g)), ("numpy", E.encode_node(x, 8, g))):
        if y is None:
            continue
        if not np.allclose(y[2, 140:], want, rtol=1e-6):
            fail("hand dot: %s gives %r, spec %r" % (side, y[2, 140:].tolist(), want))
        if not np.all(y[0, 140:] == -1):
            fail("hand dot: a parameter has an estimate on the %s side: %r" % (side, y[0, 140:]))
    # mismatch: node 2 (a dot, config 0) reads params 0 [4,8] and 1; node 3 (config 1) reads 2
    x = np.zeros((4, 140), dtype=np.float32)
    for u, d in enumerate(([4, 8], [8, 16], [4, 16], [64])):
        x[u, 21:21 + len(d)] = d
        x[u, 28] = np.prod(d)
        x[u, 134:134 + len(d)] = list(range(len(d) - 1, -1, -1))
    gl = {"feat": x, "edges": np.array([[2, 0], [2, 1], [3, 2]], dtype=np.int32),
          "cfg_ids": np.array([2, 3], dtype=np.int32)}
    m1 = -np.ones((6, 18), dtype=np.float32)
    m1[0, 0:2] = [0, 1]  # config 0: node 2 outputs [0,1] and wants input [0,1]
    m1[0, 6:8] = [0, 1]
    m1[1, 6:8] = [1, 0]  # node 3 wants [1,0] of node 2's [0,1]
    m1[4, 6:8] = [1, 0]  # config 2: as the node layouts: nothing
    m1[5, 6:8] = [1, 0]
    want = np.array([[1, 1, 2], [1, 0, 2], [0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0]],
                    dtype=np.float32)
    for side, y in (("C", c_encode(m1, 16, "layout", "handm", gl)),
                    ("numpy", E.encode_layout(m1, 16, gl))):
        if y is not None and not np.array_equal(y[:, 18:], want):
            fail("hand mismatch: %s gives %r, spec %r" % (side, y[:, 18:].tolist(),
                                                          want.tolist()))
    # a size-1 axis moves no byte: node 0 of shape [1, 8] read as [0,1] is no copy
    x[0, 21:23] = [1, 8]
    y = c_encode(m1[:2], 16, "layout", "handm1", gl)
    if y is not None and y[0, 18] != 0:
        fail("hand mismatch: a unit axis counted as a copy: %r" % y[:, 18:].tolist())


def graph_checks(rng):
    synth_graphs()
    x, op, edges = adv_graph(rng)
    g = {"op": op, "edges": edges}
    for bits in GRAPH_NODE_BITS:
        compare(x, c_encode(x, bits, "node", "ag", g), np_encode(x, bits, "node", g), "node",
                bits, "adversarial graph")
    feat, gl, rows = adv_mismatch_graph(rng)
    for bits in GRAPH_LAYOUT_BITS:
        compare(rows, c_encode(rows, bits, "layout", "am", gl),
                np_encode(rows, bits, "layout", gl), "layout", bits, "adversarial graph")
    graph_hand_checks()
    # without the graph, or a bad one: clear errors
    out = os.path.join(TMP, "gerr_out.npz")
    bad = os.path.join(TMP, "gerr.npz")
    np.savez(bad, x=x, op=op, edges=np.array([[0, len(x)]], dtype=np.int32))
    nocfg = os.path.join(TMP, "gerr2.npz")
    np.savez(nocfg, x=rows[:7], feat=feat, edges=gl["edges"], cfg_ids=gl["cfg_ids"])
    for args, needle in ((["8", bad, out, "node"], "edge_index row 0"),
                         (["16", nocfg, out, "layout"], "not whole configs")):
        p = subprocess.run([TOOL] + args, capture_output=True, text=True, timeout=60)
        if p.returncode != 1 or needle not in p.stderr:
            fail("pc_encode_tool %s: exit %d, stderr %r (want %r)" % (
                " ".join(args), p.returncode, p.stderr.strip(), needle))


# ---- the tile steps block (encode.h): root extents x output tiles ---------------------

STEPS_BITS = (32, 34, 35, 39, 64, 96, 98, 103)


def kernel_feat(rng, n, root_shape, mark=True, tail=0):
    """n random nodes whose kernel root (column 0 = 1, or the last node when mark is
    False) has root_shape; `tail` unmarked nodes follow the root."""
    x = np.zeros((n + tail, 140), dtype=np.float32)
    for u in range(n + tail):
        r = int(rng.integers(0, 4))
        x[u, 21:21 + r] = rng.choice([1, 3, 8, 128, 1000], size=r)
        x[u, 28] = np.prod(x[u, 21:21 + r])
        x[u, 0] = float(rng.random() < 0.2)  # roots of inner computations
    x[n:, 0] = 0.0
    root = x[n - 1]
    root[0] = 1.0 if mark else 0.0
    if not mark:
        x[:, 0] = 0.0
    root[21:27] = 0
    root[21:21 + len(root_shape[:6])] = root_shape[:6]
    root[28] = np.prod(root_shape) if len(root_shape) else 1.0
    return x


def steps_golden(ext, ob):
    """The spec's 8 columns for one config, in plain Python (math, no numpy)."""
    import math
    steps, grid, fill, any_ = [], 1.0, 2.0, False
    for i in range(6):
        t = ob[i] if i < len(ob) else 0.0
        e = ext[i] if i < len(ext) else -1.0
        if not (t > 0 and e >= 0):
            steps.append(-1.0)
            continue
        s = float(math.ceil(e / t))
        f = (e - (s - 1) * t) / t if s >= 1 else 1.0
        steps.append(s)
        grid *= s
        fill = min(fill, f)
        any_ = True
    return steps + ([grid, fill] if any_ else [-1.0, -1.0])


def steps_hand_checks(rng):
    """Hand-made kernels: extent not divisible, tile beyond the extent, 0 and -1 tiles,
    tile rank below and above the root's, zero extents, a tuple root, an unmarked root,
    nodes after the root; golden values by steps_golden."""
    kernels = [
        ([100, 384, 7], True, 2, [[32, 128, 7], [256, 512, 8], [50], [-1, -1, -1],
                                  [10, 128, 7, 2], [0, 0, 0], [3, 0, 7]]),
        ([4, 7, 7, 96], True, 0, [[1, 1, 7, 64], [4, 8, 8, 128], [2, 3], [1, 1, 1, 1, 1, 1]]),
        ([0, 64], False, 0, [[8, 48], [1, 64], [16]]),
        ([], True, 1, [[8, 8], [1]]),  # a tuple (rank 0) root: nothing counts
        ([2, 3, 5, 7, 11, 13], True, 3, [[1, 2, 4, 8, 16, 32], [2, 3, 5, 7, 11, 13]]),
    ]
    for ki, (shape, mark, tail, obs) in enumerate(kernels):
        feat = kernel_feat(rng, 6, shape, mark, tail)
        x = np.zeros((len(obs), 24), dtype=np.float32)
        for c, ob in enumerate(obs):
            x[c, 8:8 + len(ob)] = ob
            x[c, 14] = sum(ob)
            x[c, 15] = np.prod(ob) if ob else 0
        ext = [float(v) for v in shape[:6]] + [-1.0] * (6 - len(shape[:6]))
        want = np.array([steps_golden(ext, ob) for ob in obs], dtype=np.float32)
        g = {"feat": feat}
        for side, y in (("C", c_encode(x, 32, "tile", "steph%d" % ki, g)),
                        ("numpy", E.encode_tile(x, 32, g))):
            if y is None:
                continue
            if not np.allclose(y[:, 24:], want, rtol=1e-6, atol=0):
                fail("hand steps, kernel %d %r: %s gives %r, golden %r" % (
                    ki, shape, side, y[:, 24:].tolist(), want.tolist()))


def rsteps_hand_checks():
    """Hand-made dot and convolution kernels with golden reduction steps worked out by
    hand (encode.h, rsteps block): columns 24.. of bits 64."""
    def node(shape, **cols):
        r = np.zeros(140, dtype=np.float32)
        r[21:21 + len(shape)] = shape
        r[28] = np.prod(shape) if shape else 1.0
        for c, v in cols.items():
            r[int(c[1:])] = v
        return r
    # dot [M=64, K=96] x [K=96, N=32] -> [64, 32], then an add (the kernel root):
    # kernel_bounds M, N, K; K tile 8 -> 12 steps, 96 -> 1, 40 -> 3 (ceil 2.4); 0 absent
    feat = np.stack([node([64, 96]), node([96, 32]), node([64, 32]), node([64, 32], c0=1)])
    op = np.array([63, 63, 34, 2], dtype=np.int32)
    edges = np.array([[2, 0], [2, 1], [3, 2], [3, 2]], dtype=np.int32)
    kbs = [[64, 32, 8], [64, 32, 96], [8, 8, 40], [64, 32, 0]]
    want = [[12, -1, -1, 12], [1, -1, -1, 1], [3, -1, -1, 3], [-1, -1, -1, -1]]
    # batched dot [B=4, 16, 100] x [4, 100, 8] -> [4, 16, 8]: K = sqrt(6400*3200/(512*4))
    bfeat = np.stack([node([4, 16, 100]), node([4, 100, 8]), node([4, 16, 8], c0=1)])
    bop = np.array([63, 63, 34], dtype=np.int32)
    bedges = np.array([[2, 0], [2, 1]], dtype=np.int32)
    # conv NHWC [1, 14, 14, 48] x HWIO [3, 3, 48, 64] -> [1, 14, 14, 64], window 3x3,
    # input feature dim 3: Ci 48 at slot 4, window 3 at slot 5
    cfeat = np.stack([node([1, 14, 14, 48]), node([3, 3, 48, 64]),
                      node([1, 14, 14, 64], c0=1, c94=3, c37=3, c38=3)])
    cop = np.array([63, 63, 26], dtype=np.int32)
    cases = [
        (feat, op, edges, kbs, want),
        (bfeat, bop, bedges, [[1, 16, 8, 32], [4, 16, 8, 100]], [[4, -1, -1, 4], [1, -1, -1, 1]]),
        (cfeat, cop, bedges, [[1, 7, 7, 64, 16, 1], [1, 14, 14, 64, 48, 0], [1, 1, 1, 1, 0, 0]],
         [[3, 3, -1, 9], [1, -1, -1, 1], [-1, -1, -1, -1]]),
        (feat, np.array([63, 63, 2, 2], dtype=np.int32), edges, kbs, [[-1] * 4] * 4),  # no dot
    ]
    for ki, (f, o, e, kb, w) in enumerate(cases):
        x = np.zeros((len(kb), 24), dtype=np.float32)
        for c, k in enumerate(kb):
            x[c, :len(k)] = k
        g = {"feat": f, "op": o, "edges": e}
        want_a = np.array(w, dtype=np.float32)
        for side, y in (("C", c_encode(x, 64, "tile", "rsh%d" % ki, g)),
                        ("numpy", E.encode_tile(x, 64, g))):
            if y is not None and not np.array_equal(y[:, 24:], want_a):
                fail("hand rsteps, case %d: %s gives %r, golden %r" % (
                    ki, side, y[:, 24:].tolist(), want_a.tolist()))


def adv_steps(rng, n=200):
    """Random kernels: root ranks 0..7, zero and -1 extents, marked or not; configs with
    tiles dividing, not dividing, beyond the extent, 0 and -1 holes, any tile rank."""
    for i in range(n):
        r = int(rng.integers(0, 8))
        shape = [float(v) for v in rng.choice([0, 1, 3, 7, 8, 100, 128, 1000, 4096], size=r)]
        if r and rng.random() < 0.1:
            shape[int(rng.integers(0, r))] = -1.0
        feat = kernel_feat(rng, int(rng.integers(1, 8)), shape, rng.random() > 0.2,
                           int(rng.integers(0, 3)))
        c = int(rng.integers(1, 30))
        x = np.zeros((c, 24), dtype=np.float32)
        x[:, :24] = rng.choice([0, 1, 2, 8, 128], size=(c, 24))
        for k in range(c):
            tr = int(rng.integers(0, 7))
            x[k, 8:14] = 0
            x[k, 8:8 + tr] = rng.choice([-1, 0, 1, 2, 3, 8, 50, 128, 256, 5000], size=tr)
        nn = len(feat)
        op = rng.choice([34, 26, 2, 41], size=nn).astype(np.int32)
        m = int(rng.integers(0, 3 * nn + 1))
        edges = rng.integers(-1, nn + 1, size=(m, 2)).astype(np.int32)
        feat[:, 94] = rng.choice([-1, 0, 1, 2, 3, 1.5, 7], size=nn)
        feat[:, 37:39] = rng.choice([0, 1, 3, 5], size=(nn, 2))
        x[:, :6] = rng.choice([-1, 0, 1, 2, 3, 8, 50, 128], size=(c, 6))
        yield x, {"feat": feat, "op": op, "edges": edges}


def steps_checks(rng):
    """The steps block against numpy on every synth tile graph and random kernels."""
    files = sorted(glob.glob(os.path.join(TMP, "synth", "npz", "tile", "**", "*.npz"),
                             recursive=True))
    if not files:
        fail("steps: no synth tile graphs")
    for f in files:
        with np.load(f) as z:
            x = z["config_feat"].astype(np.float32)
            g = {"feat": z["node_feat"].astype(np.float32), "op": z["node_opcode"],
                 "edges": z["edge_index"]}
        for bits in STEPS_BITS:
            compare(x, c_encode(x, bits, "tile", "st", g), np_encode(x, bits, "tile", g),
                    "tile", bits, "synth tile graph %s" % os.path.basename(f))
    for i, (x, g) in enumerate(adv_steps(rng)):
        bits = STEPS_BITS[i % len(STEPS_BITS)]
        compare(x, c_encode(x, bits, "tile", "sa", g), np_encode(x, bits, "tile", g), "tile",
                bits, "adversarial kernel %d" % i)
    steps_hand_checks(rng)
    rsteps_hand_checks()
    return len(files)


# ---- main -------------------------------------------------------------------------------


def main():
    if not TOOL or not CLI:
        print("FAIL: PC_ENCODE_TOOL and PERFCAST must be set (run through ctest)")
        return 1
    t0 = time.time()
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    rng = np.random.default_rng(20240607)

    real = synth_rows()
    xn, ntags, nwell = adv_node(rng, 6000)
    xt, ttags = adv_tile(rng, 5000)
    xl, ltags = adv_layout(rng, 3000)
    adv = {"node": (xn, ntags), "tile": (xt, ttags), "layout": (xl, ltags)}
    counts = {}
    for kind in ("node", "tile", "layout"):
        sets = [("adversarial", adv[kind][0], adv[kind][1])]
        if real is not None:
            sets.insert(0, ("synth", real[kind], None))
        counts[kind] = sum(s[1].shape[0] for s in sets)
        for src, x, tags in sets:
            for bits in range(8):
                y_np = np_encode(x, bits, kind)
                y_c = c_encode(x, bits, kind)
                compare(x, y_c, y_np, kind, bits, src, tags)

    # pad_minus1 idempotence (spec: "already -1-padded rows give the same rank
    # and pad_minus1 is idempotent"), on the C side, for well-formed rows: the
    # synth rows and the adversarial ones whose layout is a (possibly cut)
    # permutation or missing. For garbage layouts with a positive axis past
    # the rank the claim cannot hold (padding removes what raised the rank).
    parts = [xn[nwell]] + ([real["node"]] if real is not None else [])
    xw = np.concatenate(parts)
    p1 = c_encode(xw, 1, "node", "idem")
    if p1 is not None:
        p2 = c_encode(p1, 1, "node", "idem2")
        if p2 is not None and not np.array_equal(p1, p2):
            r, c = np.argwhere(p1 != p2)[0]
            fail("pad_minus1 not idempotent: %d values differ, first row %d col %d: %r -> %r"
                 % (int((p1 != p2).sum()), r, c, float(p1[r, c]), float(p2[r, c])))
        for bits in (2, 4, 6, 7):
            a = c_encode(xw, bits, "node", "idem3")
            b = c_encode(p1, bits, "node", "idem4")
            if a is not None and b is not None and not np.array_equal(a[:, 140:], b[:, 140:]):
                r, c = np.argwhere(a[:, 140:] != b[:, 140:])[0]
                fail("bits %d: appended columns change when the input is pre-padded: row %d "
                     "col %d: %r vs %r" % (bits, r, 140 + c, float(a[r, c + 140]),
                                           float(b[r, c + 140])))

    hand_checks()
    tool_errors()
    if real is not None:
        graph_checks(rng)
        print("steps: %d synth tile graphs, 200 random and 5 hand-made kernels" % steps_checks(rng))

    for kind in ("node", "tile", "layout"):
        md = MAXDIFF.get(kind, [float("nan")] * 3)
        print("%-6s %6d rows x 8 bits: max |C - numpy| exact cols %.3g, log2 cols %.3g "
              "(relative %.3g)" % (kind, counts.get(kind, 0), md[0], md[1], md[2]))
    print("%.1f s" % (time.time() - t0))
    return report("OK: C encodings match the numpy implementation of the spec")


if __name__ == "__main__":
    sys.exit(main())
