#!/usr/bin/env python3
"""numpy side of the load benchmark: one mode per process (peak RSS per mode).

usage: numpy_load.py npz FILE.npz REPEATS    np.load + materialise every array
       numpy_load.py mmap DIR.pcc REPEATS    np.load(mmap_mode='r') of every .npy in a cache dir
Prints: mode best_seconds peak_rss_mib byte_sum load+touch_seconds baseline_rss_mib
(touch = read one byte per 4 KiB page; the byte sum is computed untimed)
"""
import glob
import os
import resource
import sys
import time

import numpy as np


def rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def page_touch(arrays):
    """One byte per 4 KiB page: makes mapped arrays resident, like bench_load.c."""
    return sum(int(a.reshape(-1).view(np.uint8)[::4096].sum()) for a in arrays if a.size)


def byte_sum(arrays):
    return int(sum(int(a.view(np.uint8).sum(dtype=np.uint64)) for a in arrays))


def main():
    mode, path, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    base = rss_mib()
    best = best_touch = 1e30
    total = 0
    for _ in range(reps):
        t0 = time.perf_counter()
        if mode == "npz":
            with np.load(path) as d:
                arrays = [d[k] for k in d.files]
        else:
            arrays = [np.load(f, mmap_mode="r") for f in sorted(glob.glob(os.path.join(path, "*.npy")))]
        t1 = time.perf_counter()
        page_touch(arrays)
        t2 = time.perf_counter()
        total = byte_sum(arrays)
        del arrays
        best = min(best, t1 - t0)
        best_touch = min(best_touch, t2 - t0)
    print(f"numpy_{mode} {best:.4f} {rss_mib():.1f} {total} load+touch {best_touch:.4f} base {base:.1f}")


if __name__ == "__main__":
    main()
