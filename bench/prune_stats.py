#!/usr/bin/python3
"""Node/edge reduction of --prune-hops K [--collapse-chains] on layout .npz files.

usage: prune_stats.py DIR_WITH_NPZ [DIR ...]

Re-implements src/graph's rule with numpy (not perfcast's code): keep the
configurable nodes and every node within K undirected hops (multi-source BFS
over edge_index both ways); edges with both ends kept. Chain collapse: on that
graph, a non-configurable node with exactly one distinct operand, one distinct
user and no self-loop is removed; its user gets one bridging edge to the first
kept node down the chain; edges unique. Prints totals over all files.
"""
import glob
import os
import sys

import numpy as np


def khop(n, e, cfg, hops):
    keep = np.zeros(n, bool)
    keep[cfg] = True
    front = keep.copy()
    u, v = e[:, 0], e[:, 1]
    for _ in range(hops):
        nxt = np.zeros(n, bool)
        nxt[v[front[u]]] = True
        nxt[u[front[v]]] = True
        front = nxt & ~keep
        keep |= nxt
    return keep


def collapse(keep, e, cfg):
    n = len(keep)
    ek = e[keep[e[:, 0]] & keep[e[:, 1]]]
    ek = np.unique(ek, axis=0)
    ops = [set() for _ in range(n)]
    users = [set() for _ in range(n)]
    for a, b in ek:
        ops[a].add(b)
        users[b].add(a)
    iscfg = np.zeros(n, bool)
    iscfg[cfg] = True
    rem = np.zeros(n, bool)
    for x in np.nonzero(keep)[0]:
        if not iscfg[x] and len(ops[x]) == 1 and len(users[x]) == 1 and x not in ops[x]:
            rem[x] = True
    out = set()
    for a, b in ek:
        if rem[a]:
            continue
        seen = 0
        while rem[b] and seen <= n:  # walk down the chain
            b = next(iter(ops[b]))
            seen += 1
        out.add((a, b))
    return int(rem.sum()), len(out)


def main():
    files = []
    for d in sys.argv[1:]:
        files += sorted(glob.glob(os.path.join(d, "**", "*.npz"), recursive=True))
    tot = {}
    n0 = m0 = 0
    for f in files:
        z = np.load(f)
        e = z["edge_index"].astype(np.int64)
        cfg = z["node_config_ids"].astype(np.int64)
        n = len(z["node_opcode"])
        n0 += n
        m0 += len(e)
        for hops in (1, 2):
            keep = khop(n, e, cfg, hops)
            mk = int((keep[e[:, 0]] & keep[e[:, 1]]).sum())
            t = tot.setdefault(("hops%d" % hops), [0, 0])
            t[0] += int(keep.sum())
            t[1] += mk
            ncol, mcol = collapse(keep, e, cfg)
            t = tot.setdefault(("hops%d+collapse" % hops), [0, 0])
            t[0] += int(keep.sum()) - ncol
            t[1] += mcol
    print("files %d: nodes %d, edges %d" % (len(files), n0, m0))
    for k, (n, m) in tot.items():
        print("%-16s nodes %9d (%5.1f%%)  edges %9d (%5.1f%%)" % (k, n, 100.0 * n / n0, m, 100.0 * m / m0))


if __name__ == "__main__":
    main()
