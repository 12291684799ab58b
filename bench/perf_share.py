#!/usr/bin/env python3
"""Summarises a `perf record` profile: share of CPU samples in OpenBLAS vs the rest.

usage: perf_share.py PERF.data [TOP]

Runs `perf report --stdio --sort dso,sym` on PERF.data and prints:
  - the CPU time the samples stand for (cpu-clock event count, ns -> s);
  - shares by group: OpenBLAS (any symbol of libopenblas*, split into
    sgemm kernels, copy/pack routines and the rest), libgomp (OpenMP
    runtime: barriers, spin-waits, fork/join), the kernel, libc
    (memset/memcpy, malloc), perfcast's own functions, other;
  - the TOP (default 12) symbols overall;
  - the same groups for the process's main thread alone (the lowest thread
    id of bench_train/bench_rank/perfcast): it runs the serial parts and its
    share of every parallel loop, so its samples approximate wall time,
    while the other thread's idle spin-waits inflate the libgomp share of
    the all-thread numbers ("busy" = share of samples outside libgomp).
"""
import re
import subprocess
import sys


PROGS = ("perfcast", "bench_train", "bench_rank")


def report(path, sort, extra=()):
    return subprocess.run(["perf", "report", "-i", path, "--stdio", "--sort", sort,
                           "--percent-limit", "0", "-g", "none", *extra],
                          check=True, capture_output=True, text=True).stdout


def main_tid(path):
    tids = []
    for line in report(path, "pid").splitlines():
        r = re.match(r"\s+[\d.]+%\s+(\d+):(\S+)", line)
        if r and r.group(2) in PROGS:
            tids.append(int(r.group(1)))
    return min(tids) if tids else None


def parse(out):
    rows = []
    for line in out.splitlines():
        r = re.match(r"\s+([\d.]+)%\s+(\S+)\s+\[(.)\]\s+(.*\S)", line)
        if r:
            rows.append((float(r.group(1)), r.group(2), r.group(4)))
    return rows


def group(rows):
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
        elif dso in PROGS:
            add("perfcast code (all functions)", pct)
        else:
            add("other (" + dso + ")", pct)
    return groups


def show(tag, groups):
    gomp = groups.get("libgomp (OpenMP runtime, incl. spin-waits)", 0.0)
    for k, v in sorted(groups.items(), key=lambda kv: -kv[1]):
        busy = "" if "libgomp" in k or gomp >= 99.99 else f"  busy {100 * v / (100 - gomp):5.1f}%"
        print(f"{tag} {v:6.2f}%{busy}  {k}")


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    out = report(path, "dso,sym")
    m = re.search(r"Event count \(approx\.\): (\d+)", out)
    samples = re.search(r"# Samples: (\S+)", out)
    cpu_s = int(m.group(1)) * 1e-9 if m else float("nan")
    rows = parse(out)
    print(f"# profile {path}: {samples.group(1) if samples else '?'} samples, "
          f"{cpu_s:.2f} CPU-s (cpu-clock), all threads")
    show("group", group(rows))
    for pct, dso, sym in rows[:top]:
        print(f"sym   {pct:6.2f}%  {dso}  {sym}")
    tid = main_tid(path)
    if tid is not None:
        mo = report(path, "dso,sym", ("--tid", str(tid)))
        ms = re.search(r"# Samples: (\S+)", mo)
        print(f"# main thread {tid}: {ms.group(1) if ms else '?'} samples")
        mrows = parse(mo)
        tot = sum(r[0] for r in mrows) or 1.0  # --tid percentages are of all samples
        show("main ", group([(100.0 * p / tot, d, y) for p, d, y in mrows]))


if __name__ == "__main__":
    main()
