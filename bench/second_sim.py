#!/usr/bin/env python3
"""A second simulated TPU, independent of perfcast's (issue #15's "different
simulator that perfcast has never seen"). Benchmark tool, not product.

It reads a TpuGraphs-format .npz (node_feat's 140 columns as the dataset
documents them, node_opcode, edge_index; config_feat for tile,
node_config_ids/node_config_feat for layout) and returns a runtime in ns for
every config. It was written from first principles without looking at
src/synth's cost code, so it has its own formulas and its own mistakes; the
point is that a search which found faster programs, rather than quirks of
one model, should look good on both.

Machine (a made-up TPU core, round numbers):
  HBM 1.2 TB/s; a DMA moves contiguous runs, each run costs DMA_RUN_BYTES of
  bandwidth on top of its payload, so short minor-dim runs are slow;
  VMEM 16 MiB; MXU 128x128, 197 Tflop/s (bf16; f32 at a quarter);
  VPU 8 sublanes x 128 lanes, 2 elementwise ops per lane per ns;
  a grid step costs STEP_NS, a kernel launch LAUNCH_NS.
Memory is tiled (8, 128): the minor dim is padded to 128 lanes, the second
minor to 8 sublanes (16 for 2-byte, 32 for 1-byte types).

Tile (a fusion kernel, one config = its tiling): the output is cut into
output_bounds tiles (and, for a contraction, the reduction into kernel_bounds'
next entry); every grid step computes one padded tile. Per step:
  compute  MXU: 2 * padded tile * padded K-slice / MXU rate; or VPU: ops *
           padded tile elements / VPU rate (plus the contraction's epilogue);
  memory   operand slices the step needs (a contraction re-reads the lhs once
           per column tile and the rhs once per row tile, a broadcast operand
           reads at most one tile of itself), the output tile once, all at
           DMA efficiency run / (run + DMA_RUN_BYTES) of the minor-dim run;
  step     max(compute, memory) + STEP_NS (double-buffered); a working set
           over VMEM loses double buffering and pays a spill factor.
  runtime  LAUNCH_NS + first step's memory (pipeline fill) + sum of steps.

Layout (a whole program, one config = minor_to_major orders of the outputs
and operands of its configurable nodes; -1 = the compiler's choice): every
node is one op timed by a roofline over its tensors' padded bytes (in their
layouts) and its flops, plus LAUNCH_NS. A configurable node's -1 output keeps
the layout the HLO records (node_feat 134..139), a -1 operand takes what its
producer makes (no copy). Layout enters through:
  padding   bytes of a tensor are those of its (8,128)-tiled layout;
  lanes     dot/convolution MXU efficiency is the lane fill of the output's
            minor dim, times a penalty when an operand's minor dim is not its
            contraction (feature) dim;
  copies    an operand whose required layout differs from the producer's
            costs a transpose (read + write, at the DMA efficiency of the
            shorter minor run); an elementwise consumer (same rank as its
            operand) requires its own layout of the operand;
  reshape   a reshape is free (a bitcast) when input and output are both in
            row-major physical order, otherwise a copy.

API: simulate(path_or_dict) -> np.ndarray of ns per config (float64);
     layout_default_ns(path_or_dict) -> ns of the all -1 layout config;
     tile_padding_waste(dims, tile, minor_to_major, bytes) -> (steps, waste);
     kind(z) -> "tile" | "layout".
CLI: second_sim.py FILE.npz... prints "file config ns" lines (--json: a list).
"""
import json
import math
import os
import sys

import numpy as np

HBM_BPS = 1.2e12
DMA_RUN_BYTES = 128.0
# SECOND_SIM_VMEM_MIB overrides the VMEM size (a sensitivity knob for the check)
VMEM_BYTES = int(float(os.environ.get("SECOND_SIM_VMEM_MIB", "16")) * (1 << 20))
MXU_FLOPS = 1.97e14
VPU_OPS = 8 * 128 * 2 * 1e9
STEP_NS = 350.0
LAUNCH_NS = 1500.0
SPILL = 1.6

# node_feat columns (TpuGraphs featurizer, /work/shared/reference/tpugraphs.md 6.3)
F_ROOT, F_TYPE, F_DIMS, F_DIMPROD, F_LAYOUT = 0, 2, 21, 28, 134
F_IN_FEAT, F_K_IN, F_K_OUT, F_OUT_FEAT = 94, 99, 100, 106
# element type one-hot order 2..20: INVALID PRED S8 S16 S32 S64 U8 U16 U32 U64
# F16 F32 F64 BF16 C64 C128 TUPLE OPAQUE TOKEN
TYPE_BYTES = [0, 1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8, 2, 8, 16, 0, 0, 0]
OP_CONV, OP_DOT, OP_RESHAPE, OP_PARAM, OP_CONST = 26, 34, 75, 63, 24
# ops that move no data of their own
FREE_OPS = {OP_PARAM, OP_CONST, 45, 100, 14}  # + get-tuple-element, tuple, bitcast
LAYOUT_FREE_OPS = FREE_OPS | {13, 102, 70, 71}  # broadcast, while, reduce(-window) accept any


def _ceil(a, b):
    return -(-a // b)


def dma_eff(run_bytes):
    run_bytes = max(float(run_bytes), 1.0)
    return run_bytes / (run_bytes + DMA_RUN_BYTES)


def sublanes(nbytes):
    return 8 * max(1, 4 // max(1, int(nbytes)))


class Graph:
    """Per-node shapes, element sizes, native layouts and operands."""

    def __init__(self, z):
        nf = np.asarray(z["node_feat"], dtype=np.float64)
        self.n = nf.shape[0]
        self.opcode = np.asarray(z["node_opcode"]).astype(np.int64)
        self.nf = nf
        onehot = nf[:, F_TYPE:F_TYPE + 19]
        self.bytes = np.array([TYPE_BYTES[int(np.argmax(r))] if r.max() > 0 else 4
                               for r in onehot])
        self.dims = [tuple(int(d) for d in row[F_DIMS:F_DIMS + 6] if d > 0) for row in nf]
        self.layout = [self._native(i) for i in range(self.n)]
        ops = [[] for _ in range(self.n)]
        users = [[] for _ in range(self.n)]
        for u, v in np.asarray(z["edge_index"]).reshape(-1, 2):
            u, v = int(u), int(v)
            if 0 <= u < self.n and 0 <= v < self.n:
                ops[u].append(v)
                users[v].append(u)
        self.operands = [sorted(set(o)) for o in ops]
        self.users = users

    def _native(self, i):
        r = len(self.dims[i])
        m = tuple(int(x) for x in self.nf[i, F_LAYOUT:F_LAYOUT + r])
        return m if sorted(m) == list(range(r)) else tuple(range(r - 1, -1, -1))

    def elems(self, i):
        return float(np.prod(self.dims[i])) if self.dims[i] else 1.0

    def rank(self, i):
        return len(self.dims[i])


def padded_elems(dims, mtm, nbytes):
    """Elements of a tensor in the (8,128)-tiled layout mtm (minor first)."""
    if not dims:
        return 1.0
    p = [float(d) for d in dims]
    p[mtm[0]] = _ceil(dims[mtm[0]], 128) * 128.0
    if len(dims) > 1:
        s = sublanes(nbytes)
        p[mtm[1]] = _ceil(dims[mtm[1]], s) * float(s)
    return float(np.prod(p))


def kind(z):
    return "layout" if "node_config_feat" in z else "tile"


# ---------------------------------------------------------------- tile ----

def _kernel_root(g):
    roots = [i for i in range(g.n) if g.nf[i, F_ROOT] > 0 and g.rank(i) > 0]
    if roots:
        return roots[-1]
    return int(np.argmax([g.elems(i) * (g.opcode[i] not in FREE_OPS) for i in range(g.n)]))


def _contraction(g):
    """(node, K) of the kernel's dot/convolution with the most flops, or None."""
    best = None
    for i in range(g.n):
        if g.opcode[i] not in (OP_DOT, OP_CONV) or len(g.operands[i]) < 2:
            continue
        a, b = g.operands[i][0], g.operands[i][1]
        out = g.elems(i)
        if g.opcode[i] == OP_CONV:
            cout = g.dims[i][int(g.nf[i, F_OUT_FEAT])] if g.rank(i) else 1
            k = min(g.elems(a), g.elems(b)) / max(cout, 1)
        else:
            r, lay = g.rank(i), g.layout[i]
            mn = g.dims[i][lay[0]] * (g.dims[i][lay[1]] if r > 1 else 1) if r else 1
            batch = out / max(mn, 1)
            k = math.sqrt(max(g.elems(a) * g.elems(b) / max(out * batch, 1.0), 1.0))
        k = max(1.0, round(k))
        if best is None or out * k > best[2]:
            best = (i, k, out * k)
    return best


def tile_padding_waste(dims, tile, mtm, nbytes):
    """(grid steps, padded elements computed / useful elements) of a tiling."""
    t = [min(max(int(x), 1), d) if x > 0 else d for x, d in zip(tile, dims)]
    steps = float(np.prod([_ceil(d, x) for d, x in zip(dims, t)]))
    return steps, steps * padded_elems(t, mtm, nbytes) / float(np.prod(dims))


def _tile_runtime(g, cfg, root, contr, params, vpu_ops):
    dims, mtm, ob = g.dims[root], g.layout[root], g.bytes[root]
    r = len(dims)
    out_tile = [int(x) for x in cfg[8:8 + r]]
    t = [min(max(x, 1), d) if x > 0 else d for x, d in zip(out_tile, dims)]
    out_steps = float(np.prod([_ceil(d, x) for d, x in zip(dims, t)]))
    tile_pad = padded_elems(t, mtm, ob)
    minor_run = t[mtm[0]]
    if contr is not None:
        node, K, _ = contr
        kb = int(cfg[r]) if r < 6 and cfg[r] > 0 else K
        kt = min(max(kb, 1), K)
        ksteps = _ceil(int(K), int(kt))
        kt_pad = _ceil(int(kt), 128) * 128.0
        ib = g.bytes[g.operands[node][0]]
        flops_rate = MXU_FLOPS if ib <= 2 else MXU_FLOPS / 4
        rows = tile_pad / (_ceil(minor_run, 128) * 128.0)
        cols = _ceil(minor_run, 128) * 128.0
        comp = 2.0 * tile_pad * kt_pad / flops_rate * 1e9
        lhs = rows * kt_pad * ib / dma_eff(kt * ib)
        rhs = kt_pad * cols * ib / dma_eff(minor_run * ib)
        step_mem = (lhs + rhs) / HBM_BPS * 1e9
        epi_ops = vpu_ops
        acc = 4.0 * tile_pad
    else:
        comp, step_mem, ksteps, epi_ops, acc = 0.0, 0.0, 1, vpu_ops, 0.0
        out_e = g.elems(root)
        big = [p for p in params if g.elems(p) > out_e]
        kb = float(np.prod([x for x in cfg[r:6] if x > 0])) if r < 6 and cfg[r:6].max() > 0 else 0
        if big and kb > 0:
            # a reduction tiled by kernel_bounds' entries past the output's rank:
            # the reduced operands stream in K slices, one grid step each
            K = max(g.elems(p) for p in big) / out_e
            kt = min(max(kb, 1.0), K)
            ksteps = _ceil(int(round(K)), int(round(kt)))
            params = [p for p in params if p not in big]
            sl = sum(tile_pad * kt * g.bytes[p] / dma_eff(minor_run * g.bytes[p]) for p in big)
            step_mem = sl / HBM_BPS * 1e9
            comp = vpu_ops * tile_pad * kt / VPU_OPS * 1e9
            acc = 4.0 * tile_pad
    # per output tile: other operands, the epilogue and the output write
    other = 0.0
    out_e = g.elems(root)
    for p in params:
        pe = g.elems(p)
        sl = tile_pad * pe / out_e if pe >= out_e else min(pe, tile_pad)
        run = minor_run if pe >= out_e else min(pe, minor_run)
        other += sl * g.bytes[p] / dma_eff(run * g.bytes[p])
    other += tile_pad * ob / dma_eff(minor_run * ob)
    tile_mem = other / HBM_BPS * 1e9
    tile_comp = max(epi_ops, 1) * tile_pad / VPU_OPS * 1e9
    ws = 2.0 * (step_mem * HBM_BPS / 1e9) + 2.0 * other + acc
    step = max(comp, step_mem)
    last = max(comp + tile_comp, step_mem + tile_mem)
    per_tile = (ksteps - 1) * step + last + ksteps * STEP_NS
    if ws > VMEM_BYTES:
        per_tile = SPILL * ((ksteps - 1) * (comp + step_mem) + comp + tile_comp + step_mem
                            + tile_mem) + ksteps * STEP_NS
    fill = step_mem + (tile_mem if ksteps == 1 else 0.0)
    return LAUNCH_NS + fill + out_steps * per_tile


def simulate_tile(z):
    g = Graph(z)
    cf = np.asarray(z["config_feat"], dtype=np.float64).reshape(-1, 24)
    root = _kernel_root(g)
    contr = _contraction(g)
    skip = set(FREE_OPS)
    params = [i for i in range(g.n) if g.opcode[i] == OP_PARAM and g.rank(i) > 0]
    if contr is not None:
        params = [p for p in params if p not in g.operands[contr[0]][:2]]
    vpu_ops = sum(1 for i in range(g.n) if g.opcode[i] not in skip
                  and g.opcode[i] not in (OP_DOT, OP_CONV) and g.rank(i) > 0)
    return np.array([_tile_runtime(g, c, root, contr, params, vpu_ops) for c in cf])


# -------------------------------------------------------------- layout ----

def _perm(slots, r):
    m = tuple(int(x) for x in slots[:r])
    if r == 0 or any(x < 0 for x in m) or sorted(m) != list(range(r)):
        return None
    return m


def _copy_ns(dims, src, dst, nb):
    if not dims:
        return 0.0
    run = min(dims[src[0]], dims[dst[0]]) * nb
    b = (padded_elems(dims, src, nb) + padded_elems(dims, dst, nb)) * nb
    return LAUNCH_NS + b / dma_eff(run) / HBM_BPS * 1e9


def _contract_dim(g, op, out):
    """The operand's dim whose size the output lacks (its contraction), or None."""
    left = list(g.dims[out])
    for k, d in enumerate(g.dims[op]):
        if d in left:
            left.remove(d)
        else:
            return k
    return None


def _op_ns(g, i, out_l, in_l):
    """One op's roofline: out_l its output layout, in_l {operand: layout}."""
    op = g.opcode[i]
    if op in FREE_OPS or g.rank(i) == 0 and op != OP_DOT:
        return 0.0
    nb = g.bytes[i]
    b = padded_elems(g.dims[i], out_l, nb) * nb
    for v, lay in in_l.items():
        b += padded_elems(g.dims[v], lay, g.bytes[v]) * g.bytes[v] if g.rank(v) else 0.0
    run = g.dims[i][out_l[0]] * nb if g.rank(i) else nb
    mem = b / dma_eff(run) / HBM_BPS * 1e9
    out_e = g.elems(i)
    if op in (OP_DOT, OP_CONV) and in_l:
        ops = list(in_l)
        if op == OP_CONV:
            cout = g.dims[i][int(g.nf[i, F_OUT_FEAT])] if g.rank(i) else 1
            k = min(g.elems(v) for v in ops) / max(cout, 1)
        else:
            k = max(g.elems(v) for v in ops) * min(g.elems(v) for v in ops) / max(out_e, 1)
            k = math.sqrt(max(k / max(out_e / max(g.dims[i][out_l[0]], 1), 1), 1))
        d = g.dims[i][out_l[0]] if g.rank(i) else 1
        eff = d / (_ceil(d, 128) * 128.0)
        for n, v in enumerate(ops[:2]):
            lay = in_l[v]
            if not lay:
                continue
            if op == OP_CONV:
                want = int(g.nf[i, F_IN_FEAT if n == 0 else F_K_IN])
            else:
                want = _contract_dim(g, v, i)
            if want is not None and lay[0] != want:
                eff *= 0.7
        rate = MXU_FLOPS if g.bytes[ops[0]] <= 2 else MXU_FLOPS / 4
        comp = 2.0 * out_e * max(k, 1.0) / (rate * eff) * 1e9
    else:
        comp = padded_elems(g.dims[i], out_l, nb) / VPU_OPS * 1e9
    return LAUNCH_NS + max(mem, comp)


class LayoutSim:
    def __init__(self, z):
        self.g = g = Graph(z)
        self.ids = [int(x) for x in np.asarray(z["node_config_ids"]).reshape(-1)]
        self.cfg = np.asarray(z["node_config_feat"], dtype=np.float64)
        self.cset = set(self.ids)
        self.touched = set(self.ids)
        for i in self.ids:
            self.touched.update(g.users[i])
        self.base = sum(self._node_ns(i, g.layout, {}) for i in range(g.n)
                        if i not in self.touched)

    def _required(self, u, v, lay_of):
        """Layout u needs of operand v when u is not configurable, or None."""
        g = self.g
        if g.opcode[u] in LAYOUT_FREE_OPS or g.rank(v) != g.rank(u) or not g.rank(u):
            return None
        return lay_of[u] if g.dims[u] == g.dims[v] else None

    def _node_ns(self, u, lay_of, req):
        """Op cost of u plus the copies its operands need; req {operand: layout}."""
        g = self.g
        in_l, copies = {}, 0.0
        for v in g.operands[u]:
            have = lay_of[v] if g.rank(v) else ()
            want = req.get(v)
            if want is None and u not in self.cset:
                want = self._required(u, v, lay_of)
            if want is not None and have and want != have:
                copies += _copy_ns(g.dims[v], have, want, g.bytes[v])
                have = want
            in_l[v] = have
        if u in self.cset and g.opcode[u] == OP_RESHAPE:
            v = g.operands[u][0] if g.operands[u] else None
            rm = tuple(range(g.rank(u) - 1, -1, -1))
            if g.rank(u) == 0:
                return copies
            ok = lay_of[u] == rm and (v is None or not g.rank(v)
                                      or in_l[v] == tuple(range(g.rank(v) - 1, -1, -1)))
            return copies + (0.0 if ok else _copy_ns(g.dims[u], rm, lay_of[u], g.bytes[u]))
        return copies + _op_ns(g, u, lay_of[u] if g.rank(u) else (), in_l)

    def _assign(self, u, c_row):
        """(output layout, {operand: required layout}) of configurable u."""
        g = self.g
        out = _perm(c_row[0:6], g.rank(u)) or g.layout[u]
        req, used = {}, set()
        for slot in (1, 2):
            s = c_row[6 * slot:6 * slot + 6]
            r = int((s >= 0).sum())
            if r == 0:
                continue
            for v in g.operands[u]:
                if v not in used and g.rank(v) == r:
                    used.add(v)
                    p = _perm(s, r)
                    if p is not None:
                        req[v] = p
                    break
        return out, req

    def runtime(self, c):
        g = self.g
        lay_of = list(g.layout)
        reqs = {}
        for k, u in enumerate(self.ids):
            lay_of[u], reqs[u] = self._assign(u, self.cfg[c, k])
        return self.base + sum(self._node_ns(u, lay_of, reqs.get(u, {}))
                               for u in sorted(self.touched))

    def all(self):
        return np.array([self.runtime(c) for c in range(self.cfg.shape[0])])


def simulate_layout(z):
    return LayoutSim(z).all()


def simulate(src):
    z = np.load(src) if isinstance(src, str) else src
    return simulate_tile(z) if kind(z) == "tile" else simulate_layout(z)


def layout_default_ns(src):
    """Runtime of the layout compiler default (every tensor -1) of a layout file."""
    z = np.load(src) if isinstance(src, str) else src
    sim = LayoutSim(z)
    sim.cfg = np.full((1,) + sim.cfg.shape[1:], -1.0)
    return sim.runtime(0)


def main(argv):
    as_json = "--json" in argv
    files = [a for a in argv if a != "--json"]
    if not files:
        print("usage: second_sim.py FILE.npz... [--json]", file=sys.stderr)
        return 2
    out = []
    for f in files:
        ns = simulate(f)
        if as_json:
            out.append({"file": f, "ns": [float(x) for x in ns]})
        else:
            for c, x in enumerate(ns):
                print("%s %d %.1f" % (f, c, x))
    if as_json:
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
