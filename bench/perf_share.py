#!/usr/bin/env python3
"""Summarises a `perf record` profile: share of CPU samples in OpenBLAS vs the rest.

usage: perf_share.py PERF.data [TOP]

Runs `perf report --stdio --sort dso,sym` on PERF.data and prints:
  - the CPU time the samples stand for (cpu-clock event count, ns -> s);
  - shares by group: OpenBLAS (any symbol of libopenblas*, split into
    sgemm kernels, copy/pack routines and the rest), libgomp (OpenMP
    runtime: barriers, spin-waits, fork/join), the kernel, libc
    (memset/memcpy, malloc), perfcast's own functions, other;
  - the TOP (default 12) symbols overall.
"""
import re
import subprocess
import sys


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    out = subprocess.run(["perf", "report", "-i", path, "--stdio", "--sort", "dso,sym",
                          "--percent-limit", "0", "-g", "none"],
                         check=True, capture_output=True, text=True).stdout
    m = re.search(r"Event count \(approx\.\): (\d+)", out)
    samples = re.search(r"# Samples: (\S+)", out)
    cpu_s = int(m.group(1)) * 1e-9 if m else float("nan")
    rows = []
    for line in out.splitlines():
        r = re.match(r"\s+([\d.]+)%\s+(\S+)\s+\[(.)\]\s+(.*\S)", line)
        if r:
            rows.append((float(r.group(1)), r.group(2), r.group(4)))
    groups = {}

    def add(k, v):
        groups[k] = groups.get(k, 0.0) + v

    for pct, dso, sym in rows:
        if "openblas" in dso:
            if sym.startswith("sgemm_kernel"):
                add("openblas: sgemm_kernel*", pct)
            elif "copy" in sym:
                add("openblas: sgemm_*copy* (packing)", pct)
            else:
                add("openblas: other (drivers, small-matrix paths, alloc)", pct)
            add("OPENBLAS TOTAL", pct)
        elif "libgomp" in dso:
            add("libgomp (OpenMP runtime, incl. spin-waits)", pct)
        elif "kernel" in dso:
            add("kernel (page faults, scheduling)", pct)
        elif dso.startswith("libc") or dso.startswith("libm"):
            add("libc/libm (memset, memcpy, malloc, expf...)", pct)
        elif dso in ("perfcast", "bench_train", "bench_rank"):
            add("perfcast code (all functions)", pct)
        else:
            add("other (" + dso + ")", pct)
    print(f"# profile {path}: {samples.group(1) if samples else '?'} samples, "
          f"{cpu_s:.2f} CPU-s (cpu-clock)")
    for k, v in sorted(groups.items(), key=lambda kv: -kv[1]):
        print(f"group {v:6.2f}%  {k}")
    for pct, dso, sym in rows[:top]:
        print(f"sym   {pct:6.2f}%  {dso}  {sym}")


if __name__ == "__main__":
    main()
