#!/usr/bin/env python3
"""perfcast's ranking metrics against scipy and numpy references.

Kendall tau-b (pc_kendall_tau_b) against scipy.stats.kendalltau (variant 'b',
what TpuGraphs' layout_evaluate.py uses) on random arrays with ties: float
and float32 predictions, integer nanosecond runtimes like the real data,
small value sets, all-tied arrays (NaN both sides). Pair counts and OPA
against an O(n^2) numpy reference for small n. Top-K indices, top-K slowdown
(K = 1, 5, 10, 100, runtime / normalizer) and the Kaggle tile score against a
numpy reference (stable sort of the predictions, lower score = faster, ties
by index). NaN inputs must fail with a message.

Bootstrap intervals (pc_bootstrap_mean_ci, pc_bootstrap_indices): the draws
equal a pure-Python twin of the splitmix64 stream (bootstrap_ref.py), the
interval equals numpy's percentile of the means over those draws, and agrees
with scipy.stats.bootstrap (percentile method, its own RNG) within Monte Carlo
error; n = 0 and 1, constant values and bad arguments. pc_percentile against
numpy.percentile, pc_spread_compute against numpy mean / std(ddof=1) / min / max.

Driven through tests/tools/pc_metrics_tool (raw float64 files).
Environment (set by tests/CMakeLists.txt): PC_METRICS_TOOL, PC_TEST_TMP.
Exit 0 pass, 1 fail, 77 skip (numpy or scipy missing).
"""
import math
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bootstrap_ref  # noqa: E402

try:
    import numpy as np
    from scipy import stats
except ImportError:
    print("SKIP: numpy/scipy not importable by %s (install python3-scipy)" % sys.executable)
    sys.exit(77)

TOOL = os.environ.get("PC_METRICS_TOOL")
TMP = os.environ.get("PC_TEST_TMP") or os.path.join("/tmp", "pc_test_metrics_scipy")
FAILS = []
CHECKED = {"tau": 0, "counts": 0, "rank": 0, "bootstrap": 0}


def fail(msg):
    FAILS.append(msg)
    print("FAIL:", msg)


def write(name, arr):
    path = os.path.join(TMP, name)
    np.ascontiguousarray(arr, dtype=np.float64).tofile(path)
    return path


def tool(*args):
    return subprocess.run([TOOL] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=300)


def pairs(x, y):
    p = tool("pairs", write("x.f64", x), write("y.f64", y))
    if p.returncode != 0:
        fail("pairs: exit %d: %s" % (p.returncode, p.stderr.strip()))
        return None
    f = p.stdout.split("\t")
    return [int(v) for v in f[:6]] + [float(f[6]), float(f[7])]


def naive_counts(x, y):
    dx = np.sign(x[:, None] - x[None, :])
    dy = np.sign(y[:, None] - y[None, :])
    upper = np.triu(np.ones((len(x), len(x)), dtype=bool), 1)
    prod = (dx * dy)[upper]
    tx, ty = (dx == 0)[upper], (dy == 0)[upper]
    return [int(upper.sum()), int((prod > 0).sum()), int((prod < 0).sum()), int(tx.sum()),
            int(ty.sum()), int((tx & ty).sum())]


def naive_opa(pred, rt):
    faster = rt[:, None] < rt[None, :]
    total = faster.sum()
    if total == 0:
        return math.nan
    return float((faster & (pred[:, None] < pred[None, :])).sum()) / float(total)


def same(a, b, tol=1e-12):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= tol


def check_pairs(label, x, y):
    got = pairs(x, y)
    if got is None:
        return
    want_tau = float(stats.kendalltau(x, y)[0])
    CHECKED["tau"] += 1
    if not same(got[6], want_tau):
        fail("%s: tau %r, scipy %r" % (label, got[6], want_tau))
    if len(x) <= 600:
        CHECKED["counts"] += 1
        want = naive_counts(x, y)
        if got[:6] != want:
            fail("%s: counts %r, numpy %r" % (label, got[:6], want))
        if not same(got[7], naive_opa(x, y)):
            fail("%s: opa %r, numpy %r" % (label, got[7], naive_opa(x, y)))


def random_runtimes(rng, n, levels):
    """Integer nanosecond runtimes; `levels` distinct values (many repeats)."""
    base = rng.integers(10_000, 5_000_000_000, size=levels)
    return base[rng.integers(0, levels, size=n)].astype(np.int64)


def test_tau(rng):
    for n in (0, 1, 2, 3, 5, 17, 100, 257, 600, 3000, 20000):
        for case in range(6):
            rt = random_runtimes(rng, n, [1, 2, 5, 50, max(n, 1), 10 * n + 1][case])
            pred = rt + rng.normal(0, 3e8, size=n)  # correlated
            if case % 2:
                pred = np.round(pred / 1e8)  # heavy ties in predictions
            if case == 3:
                pred = -pred  # anti-correlated
            check_pairs("n=%d case=%d" % (n, case), pred.astype(np.float64),
                        rt.astype(np.float64))
        f32 = rng.normal(size=n).astype(np.float32)
        check_pairs("n=%d float32" % n, f32.astype(np.float64),
                    rng.integers(0, 4, size=n).astype(np.float64))
    # all-tied arrays: scipy gives NaN, so do we
    check_pairs("all tied x", np.full(10, 3.0), np.arange(10.0))
    check_pairs("all tied y", np.arange(10.0), np.full(10, 7.0))


def ref_rank(pred, rt, norm, ks):
    order = np.lexsort((np.arange(len(pred)), pred))  # by score, then index
    y = rt / norm if norm is not None else rt.astype(np.float64)
    best = y.min()
    out = {}
    for k in ks:
        top = order[:k]
        out[k] = (list(top), (y[top].min() - best) / best)
    tile = 2.0 - y[order[:5]].min() / best
    return out, tile


def rank(pred, rt, norm, ks):
    npath = write("norm.f64", norm) if norm is not None else "-"
    p = tool("rank", write("pred.f64", pred), write("rt.f64", rt), npath, *ks)
    if p.returncode != 0:
        fail("rank: exit %d: %s" % (p.returncode, p.stderr.strip()))
        return None, None
    topk, tile = {}, None
    slow = {}
    for line in p.stdout.splitlines():
        f = line.split("\t")
        if f[0] == "topk":
            topk[int(f[1])] = [int(v) for v in f[2].split(",")] if f[2] else []
        elif f[0] == "slowdown":
            slow[int(f[1])] = float(f[2])
        elif f[0] == "tile":
            tile = float(f[1])
    return {k: (topk[k], slow[k]) for k in ks}, tile


def test_rank(rng):
    ks = (1, 5, 10, 100)
    for n in (1, 3, 5, 6, 10, 11, 99, 1000, 5000):
        for case in range(4):
            rt = random_runtimes(rng, n, [1, 3, 40, n][case]).astype(np.float64)
            norm = rng.integers(1_000_000, 1_000_100, size=n).astype(np.float64)
            pred = rt / 1e6 + rng.normal(0, 50, size=n)
            if case % 2:
                pred = np.round(pred / 100)  # ties: broken by index
            for nm in (norm, None):
                label = "rank n=%d case=%d norm=%s" % (n, case, nm is not None)
                got, got_tile = rank(pred, rt, nm, ks)
                if got is None:
                    continue
                CHECKED["rank"] += 1
                want, want_tile = ref_rank(pred, rt, nm, ks)
                for k in ks:
                    if got[k][0] != want[k][0]:
                        fail("%s k=%d: top-k %r, numpy %r" % (label, k, got[k][0][:10],
                                                              want[k][0][:10]))
                    if not same(got[k][1], want[k][1]):
                        fail("%s k=%d: slowdown %r, numpy %r" % (label, k, got[k][1],
                                                                 want[k][1]))
                if not same(got_tile, want_tile):
                    fail("%s: tile %r, numpy %r" % (label, got_tile, want_tile))


def test_nan_rejected():
    x = np.array([1.0, 2.0, np.nan, 4.0])
    y = np.arange(4.0)
    p = tool("pairs", write("x.f64", x), write("y.f64", y))
    if p.returncode != 1 or "x[2] is NaN" not in p.stderr:
        fail("pairs with NaN: exit %d, stderr %r" % (p.returncode, p.stderr))
    p = tool("rank", write("pred.f64", y), write("rt.f64", y + 1), write("norm.f64", x), 1)
    if p.returncode != 1 or "normalizer[2]" not in p.stderr:
        fail("rank with NaN normalizer: exit %d, stderr %r" % (p.returncode, p.stderr))


def floats(line):
    return [float(v) for v in line.split("\t")]


def boot(values, resamples, seed, level):
    p = tool("bootstrap", write("v.f64", values), resamples, seed, level)
    if p.returncode != 0:
        fail("bootstrap: exit %d: %s" % (p.returncode, p.stderr.strip()))
        return None
    return floats(p.stdout)


def test_bootstrap(rng):
    # the draws: the pure-Python stream, and in range
    for n, r, seed in ((1, 3, 0), (7, 20, 1), (50, 40, 20231101), (3, 5, 2**64 - 1)):
        p = tool("indices", n, r, seed)
        got = np.array([[int(v) for v in l.split(",")] for l in p.stdout.split()])
        want = bootstrap_ref.indices(n, r, seed)
        if p.returncode != 0 or got.shape != want.shape or not (got == want).all():
            fail("indices n=%d r=%d seed=%d differ from the Python stream" % (n, r, seed))
        CHECKED["bootstrap"] += 1
    # the interval: numpy's percentile of the means over those draws
    for n, r, seed, level in ((10, 200, 1, 0.95), (37, 2000, 20231101, 0.95), (5, 999, 7, 0.5),
                              (200, 500, 3, 0.99)):
        v = rng.normal(size=n) * rng.uniform(0.1, 10)
        got, want = boot(v, r, seed, level), bootstrap_ref.mean_ci(v, r, seed, level)
        if got is None or not all(same(a, b, 1e-12) for a, b in zip(got, want)):
            fail("bootstrap n=%d r=%d: %r, numpy %r" % (n, r, got, want))
        CHECKED["bootstrap"] += 1
    # against scipy's own bootstrap (other RNG): within Monte Carlo error of the width
    v = rng.exponential(size=300)
    got = boot(v, 20000, 5, 0.95)
    ref = stats.bootstrap((v,), np.mean, n_resamples=20000, confidence_level=0.95,
                          method="percentile", random_state=np.random.default_rng(1))
    lo, hi = ref.confidence_interval.low, ref.confidence_interval.high
    if got is None or abs(got[0] - lo) > 0.05 * (hi - lo) or abs(got[1] - hi) > 0.05 * (hi - lo):
        fail("bootstrap vs scipy.stats.bootstrap: %r vs [%g, %g]" % (got, lo, hi))
    CHECKED["bootstrap"] += 1
    # degenerate inputs
    got = boot(np.array([]), 100, 1, 0.95)
    if got is None or not all(math.isnan(x) for x in got):
        fail("bootstrap of no values: %r, expected NaN NaN" % (got,))
    for v in (np.array([0.25]), np.full(9, -3.5)):
        got = boot(v, 100, 1, 0.95)
        if got != [v[0], v[0]]:
            fail("bootstrap of %r: %r, expected the value twice" % (v, got))
    for args, msg in (((np.array([1.0, np.nan]), 10, 1, 0.95), "values[1]"),
                      ((np.array([1.0, np.inf]), 10, 1, 0.95), "values[1]"),
                      ((np.array([1.0, 2.0]), 0, 1, 0.95), "resamples"),
                      ((np.array([1.0, 2.0]), 10, 1, 1.0), "level"),
                      ((np.array([1.0, 2.0]), 10, 1, 0.0), "level")):
        p = tool("bootstrap", write("v.f64", args[0]), *args[1:])
        if p.returncode != 1 or msg not in p.stderr:
            fail("bootstrap %r: exit %d, stderr %r" % (args[1:], p.returncode, p.stderr))
    p = tool("indices", 0, 5, 1)
    if p.returncode != 1:
        fail("indices with n = 0: exit %d" % p.returncode)
    # percentile and spread
    for n in (1, 2, 5, 100):
        x = rng.normal(size=n)
        for q in (0.0, 0.025, 0.3, 0.5, 0.975, 1.0):
            p = tool("percentile", write("x.f64", x), q)
            want = float(np.percentile(x, 100 * q))
            if p.returncode != 0 or not same(float(p.stdout), want, 1e-13):
                fail("percentile n=%d q=%g: %r, numpy %r" % (n, q, p.stdout, want))
    for x in (rng.normal(size=7), np.array([2.0]), np.array([1.0, np.nan, 3.0, 8.0]), np.array([])):
        p = tool("spread", write("x.f64", x))
        f = floats(p.stdout) if p.returncode == 0 else None
        y = x[~np.isnan(x)]
        want = ([float(np.mean(y)), float(np.std(y, ddof=1)) if y.size > 1 else math.nan,
                 float(np.min(y)), float(np.max(y))] if y.size else [math.nan] * 4)
        want += [y.size, x.size - y.size]
        if f is None or not all(same(a, b, 1e-12) for a, b in zip(f, want)):
            fail("spread %r: %r, numpy %r" % (x, f, want))
    p = tool("spread", write("x.f64", np.array([1.0, -np.inf])))
    if p.returncode != 1 or "values[1]" not in p.stderr:
        fail("spread with -inf: exit %d, %r" % (p.returncode, p.stderr))


def main():
    if not TOOL or not os.path.exists(TOOL):
        print("FAIL: PC_METRICS_TOOL not set or missing (%r)" % TOOL)
        return 1
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP, exist_ok=True)
    rng = np.random.default_rng(20231111)
    test_tau(rng)
    test_rank(rng)
    test_nan_rejected()
    test_bootstrap(rng)
    print("checked: %d tau vs scipy, %d exact counts/OPA vs numpy, %d rank cases, "
          "%d bootstrap cases" % (CHECKED["tau"], CHECKED["counts"], CHECKED["rank"],
                                  CHECKED["bootstrap"]))
    if FAILS:
        print("%d failure(s)" % len(FAILS))
        return 1
    shutil.rmtree(TMP, ignore_errors=True)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
