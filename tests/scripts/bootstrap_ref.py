"""A pure-Python twin of perfcast's bootstrap stream (perfcast/metrics.h), for the tests.

splitmix64 from state = seed; every index of resample 0, then of resample 1, ...;
an index is r mod n of the first word r >= (2^64 - n) mod n (no modulo bias).
The interval is numpy's percentile ('linear') of the resample means.
"""
import numpy as np

M64 = (1 << 64) - 1


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def indices(n, resamples, seed):
    """(resamples, n) array of the draws."""
    skip = (1 << 64) % n
    state, out = seed & M64, np.empty(n * resamples, dtype=np.int64)
    for k in range(n * resamples):
        while True:
            state, r = splitmix64(state)
            if r >= skip:
                break
        out[k] = r % n
    return out.reshape(resamples, n)


def mean_ci(values, resamples, seed, level):
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return float("nan"), float("nan")
    means = v[indices(v.size, resamples, seed)].mean(axis=1)
    lo, hi = np.percentile(means, [50 * (1 - level), 50 * (1 + level)])
    return float(lo), float(hi)


def mean2_ci(table, resamples, seed, level):
    """Two-way bootstrap of a (rows, cols) table's mean: per resample the row draws,
    then the column draws (none when cols == 1), from one stream."""
    t = np.asarray(table, dtype=np.float64)
    rows, cols = t.shape
    if rows == 0 or cols == 0:
        return float("nan"), float("nan")
    state, means = seed & M64, np.empty(resamples)

    def draw(n):
        nonlocal state
        skip = (1 << 64) % n
        while True:
            state, r = splitmix64(state)
            if r >= skip:
                return r % n

    for b in range(resamples):
        ri = [draw(rows) for _ in range(rows)]
        cj = [draw(cols) for _ in range(cols)] if cols > 1 else [0]
        means[b] = t[np.ix_(ri, cj)].mean()
    lo, hi = np.percentile(means, [50 * (1 - level), 50 * (1 + level)])
    return float(lo), float(hi)
