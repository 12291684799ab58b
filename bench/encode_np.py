#!/usr/bin/env python3
"""Independent numpy implementation of perfcast's feature encodings.

Written from the SPEC in src/gnn/encode.h (pad_minus1, dim_encodings,
layout_categories, mismatch) and src/tpugraphs/roofline.h (roofline), not
from the C code; tests/scripts/
test_encode_numpy.py compares the two. Test/bench-only: the product never
imports this file. Needs only numpy.

    from encode_np import bits_from_names, encode_node, encode_configs
    y = encode_node(node_feat, bits_from_names("all"))      # (rows, 140) -> (rows, 183)
    y = encode_configs(config_feat, "tile", 7)              # (rows, 24)  -> (rows, 78)
    y = encode_configs(lay.reshape(-1, 18), "layout", 7)    # (rows, 18)  -> (rows, 51)
    # the graph-wide encodings take the graph (a dict with the npz arrays):
    y = encode_node(node_feat, 8, graph={"op": node_opcode, "edges": edge_index})
    y = encode_configs(lay.reshape(-1, 18), "layout", 16,
                       graph={"feat": node_feat, "edges": edge_index, "cfg_ids": node_config_ids})
    y = encode_configs(config_feat, "tile", 32, graph={"feat": node_feat})  # + 8 steps cols

Everything is vectorised over rows (loops only over the 6 slots), so ~1e6
rows take a few seconds. Inputs are float32 (anything else is converted);
outputs are float32 computed like the C code: log2(1+d), d mod B and
floor(d/B) are evaluated in float64 on the float32 value and rounded once to
float32 (encode.c computes them in double and casts; for d < 2^24 the mod
and floor are exact either way, log2 then matches to the last bit); the
layout "disorder" column is a float32 division, as in C.

Places where the spec leaves room and encode.c was read to settle it
(marked "AMBIGUITY" below):
  * Rank from the layout: "1 + the largest minor_to_major value" is read as
    over the values > 0 only: the layout is 0-padded, so a 0 says nothing, and
    "scalars and tuples give 0" would not hold otherwise. (The C code also
    ignores values >= 1e6, which the spec does not mention; an axis index that
    large is not a real layout, and the numpy side follows the spec there.)
  * A dimension size < 0 inside the rank (e.g. an already -1-padded slot, or
    a hand-made row) is "absent": all its appended columns are -1.
  * Lane/sublane axis m2m[j] must satisfy 0 <= a < min(r, 6); otherwise the
    minor dim is absent (-1).
  * Tile groups: slots before the group's last slot > 0 are encoded from
    their value even if it is 0 (log2(1)=0, 0, 0); a negative one is absent.
"""
import numpy as np

BITS = {"pad": 1, "dims": 2, "layout": 4, "roofline": 8, "mismatch": 16, "steps": 32,
        "rsteps": 64}
KNOWN = 127
ROOF_COLS = 5
MISMATCH_COLS = 3
STEPS_COLS = 8
RSTEPS_COLS = 4
OP_CONVOLUTION = 26
OP_DOT = 34
NF_CONV_IN_FEAT = 94

NODE_DIM = 140
TILE_DIM = 24
LAYOUT_DIM = 18
LAYOUT_COLS = 11
NODE_DIM_COLS = 32
TILE_DIM_COLS = 54
NSLOT = 6

# Node feature columns (encode.h / tpugraphs.md 6.3).
NF_SHAPE_DIMS = 21
NF_SHAPE_PROD = 28
NF_WINDOW = 37
NF_WIN_REV = 85
NF_WIN_REV_TRUE = 91
NF_WIN_REV_FALSE = 92
NF_DYN_SLICE = 121
NF_LAYOUT = 134

_NAMES = {"pad": "pad", "pad_minus1": "pad", "dims": "dims", "dim_encodings": "dims",
          "layout": "layout", "layout_categories": "layout", "roofline": "roofline",
          "mismatch": "mismatch", "steps": "steps", "rsteps": "rsteps"}


def bits_from_names(spec):
    """'all' -> 7, 'none' or '' -> 0, 'pad,dims' -> 3, 'all,roofline' -> 15 (also the
    long names; 'all' adds pad, dims and layout, 'none' clears)."""
    if isinstance(spec, (int, np.integer)):
        if spec & ~KNOWN:
            raise ValueError("unknown encoding bits 0x%x" % spec)
        return int(spec)
    bits = 0
    for name in spec.strip().lower().split(","):
        name = name.strip()
        if name == "all":
            bits |= 7
        elif name in ("none", ""):
            bits = 0 if name == "none" else bits
        elif name in _NAMES:
            bits |= BITS[_NAMES[name]]
        else:
            raise ValueError("unknown encoding %r (pad, dims, layout, roofline, mismatch, steps, "
                             "rsteps, all, none)" % name)
    return bits


def _bits(bits):
    b = bits_from_names(bits)
    return bool(b & 1), bool(b & 2), bool(b & 4)


def _as2d(x, name):
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError("%s: need a 2-D array, got shape %r" % (name, x.shape))
    return np.ascontiguousarray(x, dtype=np.float32)


def _start(x, name, width, need):
    """x as float32 (rows, D) and the output (rows, width) with x in its first D columns;
    width < 0 means x is too narrow (need columns), as the C _width functions say."""
    x = _as2d(x, name)
    n, D = x.shape
    if width(D) < 0:
        raise ValueError("%s have %d columns, need %d" % (name, D, need))
    y = np.empty((n, width(D)), dtype=np.float32)
    y[:, :D] = x
    return x, y


def _last_positive(cols):
    """cols: list of (rows,) arrays -> 1 + index of the last one > 0, or 0 (int64)."""
    out = np.zeros(cols[0].shape[0], dtype=np.int64)
    for i, c in enumerate(cols):
        out[c > 0] = i + 1
    return out


def _dim3(d, base, out):
    """out (rows, 3) float32 <- [log2(1+d), d mod base, floor(d/base)], -1 where d < 0."""
    d64 = d.astype(np.float64)
    absent = d64 < 0
    dp = np.where(absent, 0.0, d64)
    with np.errstate(invalid="ignore", divide="ignore"):
        out[:, 0] = np.log2(1.0 + dp)
        out[:, 1] = np.fmod(dp, base)
        out[:, 2] = np.floor(dp / base)
    out[absent] = -1.0


def _dim4(d, base, out):
    """out (rows, 4) <- [d, dim3(d)], all -1 where d < 0."""
    out[:, 0] = np.where(d < 0, np.float32(-1.0), d)
    _dim3(d, base, out[:, 1:4])


def layout_cols(s, r):
    """The 11 indicator columns of minor-to-major vectors s (rows, 6) of rank r (rows,).

    r may be float (spec ranks can exceed 6); k = min(r, 6) slots are used."""
    s = np.asarray(s, dtype=np.float32).astype(np.float64)
    r = np.asarray(r, dtype=np.float64)
    n = s.shape[0]
    k = np.minimum(r, NSLOT)
    out = np.zeros((n, LAYOUT_COLS), dtype=np.float32)
    has = k >= 1
    out[:, 0] = has
    dflt = has.copy()
    inv = np.zeros(n, dtype=np.int64)
    for i in range(NSLOT):
        use_i = i < k
        dflt &= ~use_i | (s[:, i] == r - 1 - i)
        for j in range(i + 1, NSLOT):
            inv += (use_i & (j < k) & (s[:, i] < s[:, j])).astype(np.int64)
    out[:, 1] = dflt
    out[:, 2] = has & (s[:, 0] == r - 1)
    out[:, 3] = has & (r >= 2) & (s[:, 1] == r - 2)
    ki = np.floor(k).astype(np.int64)
    pairs = ki * (ki - 1) // 2
    with np.errstate(invalid="ignore", divide="ignore"):
        dis = inv.astype(np.float32) / pairs.astype(np.float32)
    out[:, 4] = np.where(ki >= 2, dis, np.float32(0.0))
    for a in range(NSLOT):
        out[:, 5 + a] = has & (s[:, 0] == a)
    return out


def node_rank(x):
    """Rank r of each node row (float64, may exceed 6; 0 for scalars/tuples)."""
    x = _as2d(x, "node features")
    r = _last_positive([x[:, NF_SHAPE_DIMS + i] for i in range(NSLOT)]).astype(np.float64)
    r = np.where(x[:, NF_SHAPE_PROD] == 0, np.maximum(r, 1.0), r)
    for i in range(NSLOT):
        v = x[:, NF_LAYOUT + i].astype(np.float64)
        # AMBIGUITY: only values > 0 raise the rank (see the module docstring).
        r = np.where(v > 0, np.maximum(r, v + 1.0), r)
    return r


def window_rank(x):
    cnt = x[:, NF_WIN_REV_TRUE].astype(np.float64) + x[:, NF_WIN_REV_FALSE]
    lp = _last_positive([x[:, NF_WINDOW + i] for i in range(NSLOT)])
    return np.minimum(NSLOT, np.maximum(cnt, lp))


def node_width(bits, in_dim=NODE_DIM):
    pad, dims, lay = _bits(bits)
    roof = bool(bits_from_names(bits) & 8)
    if in_dim <= 0 or ((pad or dims or lay or roof) and in_dim < NODE_DIM):
        return -1
    return in_dim + NODE_DIM_COLS * dims + LAYOUT_COLS * lay + ROOF_COLS * roof


def tile_width(bits, in_dim=TILE_DIM):
    _, dims, _ = _bits(bits)
    steps = bool(bits_from_names(bits) & 32)
    rsteps = bool(bits_from_names(bits) & 64)
    if in_dim <= 0 or ((dims or steps or rsteps) and in_dim < TILE_DIM):
        return -1
    return in_dim + TILE_DIM_COLS * dims + STEPS_COLS * steps + RSTEPS_COLS * rsteps


def layout_width(bits, in_dim=LAYOUT_DIM):
    _, _, lay = _bits(bits)
    mm = bool(bits_from_names(bits) & 16)
    if in_dim <= 0 or ((lay or mm) and in_dim < LAYOUT_DIM):
        return -1
    return in_dim + 3 * LAYOUT_COLS * lay + MISMATCH_COLS * mm


def encode_node(x, bits, graph=None):
    """Node features (rows, >=140) float32 -> (rows, node_width) float32, as pc_encode_node
    (pc_encode_node_graph with the roofline bit: graph = {"op": (n,), "edges": (m, 2)})."""
    x, y = _start(x, "node features", lambda d: node_width(bits, d), NODE_DIM)
    n, D = x.shape
    pad, dims, lay = _bits(bits)
    if bits_from_names(bits) & 8:
        if graph is None:
            raise ValueError("the roofline encoding needs the graph (op, edges)")
        y[:, -ROOF_COLS:] = roofline(x, graph["op"], graph["edges"])
    if not (pad or dims or lay):
        return y
    r = node_rank(x)
    k = np.minimum(r, NSLOT)
    m2m = x[:, NF_LAYOUT:NF_LAYOUT + NSLOT]
    missing = (r >= 2) & np.all(m2m <= 0, axis=1)
    if pad:
        for i in range(NSLOT):
            beyond = i >= k
            y[beyond, NF_SHAPE_DIMS + i] = -1.0
            y[beyond, NF_LAYOUT + i] = -1.0
        y[missing, NF_LAYOUT:NF_LAYOUT + NSLOT] = -1.0
        w = window_rank(x)
        for i in range(NSLOT):
            beyond = i >= w
            for g in range(NSLOT):
                y[beyond, NF_WINDOW + 8 * g + i] = -1.0
            y[beyond, NF_WIN_REV + i] = -1.0
    b = D
    if dims:
        for i in range(NSLOT):
            d = np.where(i < k, x[:, NF_SHAPE_DIMS + i], np.float32(-1.0))
            _dim3(d, 128.0, y[:, b + 3 * i:b + 3 * i + 3])
        for i in range(2):
            _dim3(x[:, NF_DYN_SLICE + i], 128.0, y[:, b + 18 + 3 * i:b + 21 + 3 * i])
        shape = x[:, NF_SHAPE_DIMS:NF_SHAPE_DIMS + NSLOT]
        for j, base, col in ((0, 128.0, 24), (1, 8.0, 28)):
            a = m2m[:, j].astype(np.float64)
            ok = (~missing) & (r >= j + 1) & (j < k) & (a >= 0) & (a < k)
            # AMBIGUITY: a non-integer axis is truncated (an axis index is an integer).
            ai = np.where(ok, np.floor(np.where(ok, a, 0.0)), 0).astype(np.int64)
            d = np.where(ok, shape[np.arange(n), ai], np.float32(-1.0))
            _dim4(d, base, y[:, b + col:b + col + 4])
        b += NODE_DIM_COLS
    if lay:
        y[:, b:b + LAYOUT_COLS] = layout_cols(m2m, np.where(missing, 0.0, r))
    return y


def tile_root(feat):
    """The kernel root's output extents (6,), -1 where absent (encode.h, steps block):
    slots 21.. of the last row whose column 0 is 1 (else the last row), up to its rank."""
    feat = _as2d(feat, "node_feat")
    marked = np.nonzero(feat[:, 0] == 1.0)[0]
    row = feat[marked[-1] if len(marked) else len(feat) - 1][None]
    k = int(min(node_rank(row)[0], NSLOT))
    ext = np.full(NSLOT, -1.0)
    d = row[0, NF_SHAPE_DIMS:NF_SHAPE_DIMS + k].astype(np.float64)
    ext[:k] = np.where(d >= 0, d, -1.0)
    return ext


def tile_steps(x, ext):
    """The 8 steps columns of tile rows x (rows, >=24) for root extents ext (6,)."""
    t = x[:, 8:8 + NSLOT].astype(np.float64)
    e = np.broadcast_to(np.asarray(ext, dtype=np.float64), t.shape)
    ok = (t > 0) & (e >= 0)
    ts = np.where(ok, t, 1.0)
    s = np.where(ok, np.ceil(e / ts), -1.0)
    fill = np.where(ok & (s >= 1), (e - (s - 1) * ts) / ts, 1.0)
    fill = np.where(ok, fill, np.inf).min(axis=1)
    prod = np.where(ok, s, 1.0).prod(axis=1)
    anyd = ok.any(axis=1)
    out = np.empty((len(x), STEPS_COLS), dtype=np.float64)
    out[:, :NSLOT] = s
    out[:, NSLOT] = np.where(anyd, prod, -1.0)
    out[:, NSLOT + 1] = np.where(anyd, fill, -1.0)
    return out.astype(np.float32)


def tile_reduction(feat, op, edges):
    """(R (3,) reduction extents, -1 where absent; s, the kernel_bounds slot of R[0], -1
    when there is no dot/convolution) as the rsteps block (encode.h) defines them."""
    feat = _as2d(feat, "node_feat").astype(np.float64)
    R = np.full(3, -1.0)
    if op is None or len(feat) == 0:
        return R, -1
    op = np.asarray(op).reshape(-1)
    hits = np.nonzero((op == OP_DOT) | (op == OP_CONVOLUTION))[0]
    if not len(hits):
        return R, -1
    v = int(hits[-1])
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2) if edges is not None else np.zeros((0, 2))
    prods = [int(p) for c, p in e if c == v and 0 <= p < len(feat)][:2]
    if not prods:
        return R, -1
    if len(prods) == 1:
        prods.append(prods[0])
    rank = node_rank(feat).astype(int)
    rv, rl, rr = rank[v], rank[prods[0]], rank[prods[1]]
    if op[v] == OP_DOT:
        nb = rl + rr - rv - 2
        if max(rv, rl, rr) <= NSLOT and 0 <= nb <= rv:
            def prod(u, r):
                d = feat[u, NF_SHAPE_DIMS:NF_SHAPE_DIMS + r]
                return -1.0 if (d < 0).any() else float(np.prod(d))
            pv, pl, pr, b = prod(v, rv), prod(prods[0], rl), prod(prods[1], rr), prod(v, nb)
            if min(pv, pl, pr, b) > 0:
                k = np.floor(np.sqrt(pl * pr / (pv * b)) + 0.5)
                if k >= 1:
                    R[0] = k
    else:
        f = feat[v, NF_CONV_IN_FEAT]
        if f == np.floor(f) and 0 <= f < min(rl, NSLOT):
            d = feat[prods[0], NF_SHAPE_DIMS + int(f)]
            if d > 0:
                R[0] = d
        for i in range(2):
            w = feat[v, NF_WINDOW + i]
            if not w > 0:
                break
            R[1 + i] = w
    return R, int(rv)


def tile_rsteps(x, R, s):
    """The 4 rsteps columns of tile rows x for reduction extents R and first slot s."""
    out = np.full((len(x), RSTEPS_COLS), -1.0)
    prod = np.ones(len(x))
    anyd = np.zeros(len(x), dtype=bool)
    for i in range(3):
        j = s + i
        if s < 0 or j >= NSLOT or not R[i] > 0:
            continue
        t = x[:, j].astype(np.float64)
        ok = t > 0
        st = np.ceil(R[i] / np.where(ok, t, 1.0))
        out[:, i] = np.where(ok, st, -1.0)
        prod = np.where(ok, prod * st, prod)
        anyd |= ok
    out[:, 3] = np.where(anyd, prod, -1.0)
    return out.astype(np.float32)


def encode_tile(x, bits, graph=None):
    """Tile config features (rows, >=24) -> (rows, tile_width), as pc_encode_tile
    (pc_encode_configs_mm with the steps bit: graph = {"feat": the kernel's node_feat})."""
    x, y = _start(x, "tile configs", lambda d: tile_width(bits, d), TILE_DIM)
    n, D = x.shape
    _, dims, _ = _bits(bits)
    if dims:
        for g in range(3):
            k = _last_positive([x[:, 8 * g + i] for i in range(NSLOT)])
            for i in range(NSLOT):
                d = np.where(i < k, x[:, 8 * g + i], np.float32(-1.0))
                c = D + 18 * g + 3 * i
                _dim3(d, 128.0, y[:, c:c + 3])
    if bits_from_names(bits) & 32:
        if graph is None:
            raise ValueError("the steps encoding needs the graph (feat)")
        end = y.shape[1] - (RSTEPS_COLS if bits_from_names(bits) & 64 else 0)
        y[:, end - STEPS_COLS:end] = tile_steps(x, tile_root(graph["feat"]))
    if bits_from_names(bits) & 64:
        if graph is None:
            raise ValueError("the rsteps encoding needs the graph (feat, op, edges)")
        R, s = tile_reduction(graph["feat"], graph.get("op"), graph.get("edges"))
        y[:, -RSTEPS_COLS:] = tile_rsteps(x, R, s)
    return y


def layout_config_rank(s):
    """Number of leading slots >= 0 of (rows, 6) vectors."""
    lead = np.cumprod(np.asarray(s) >= 0, axis=1)
    return lead.sum(axis=1)


def encode_layout(x, bits, graph=None):
    """Layout config features (rows, >=18) -> (rows, layout_width), as pc_encode_layout
    (pc_encode_configs_mm with the mismatch bit: graph = {"feat", "edges", "cfg_ids"} and x
    whole configs)."""
    x, y = _start(x, "layout configs", lambda d: layout_width(bits, d), LAYOUT_DIM)
    n, D = x.shape
    _, _, lay = _bits(bits)
    if lay:
        for t in range(3):
            s = x[:, NSLOT * t:NSLOT * (t + 1)]
            c = D + LAYOUT_COLS * t
            y[:, c:c + LAYOUT_COLS] = layout_cols(s, layout_config_rank(s))
    if bits_from_names(bits) & 16:
        if graph is None:
            raise ValueError("the mismatch encoding needs the graph (feat, edges, cfg_ids)")
        y[:, -MISMATCH_COLS:] = mismatch(x, graph["feat"], graph["edges"], graph["cfg_ids"])
    return y


def encode_configs(x, kind, bits, graph=None):
    if kind == "tile":
        return encode_tile(x, bits, graph)
    if kind == "layout":
        return encode_layout(x, bits, graph)
    raise ValueError("encode_configs: kind %r (need 'tile' or 'layout')" % (kind,))


# ---- graph-wide encodings: roofline (tpugraphs/roofline.h), mismatch (encode.h) -------

ROOF_PEAK = 2.75e14  # TPU v4 bf16 FLOP/s
ROOF_BW = 1.2e12     # TPU v4 HBM bytes/s
ROOF_MAX_RATIO = 16.0
_ESIZE = [0, 1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8, 2, 8, 16, 0, 0, 0]  # one-hot columns 2..20
_ELEMENTWISE = set([1, 2, 7, 12, 15, 17, 19, 20, 21, 25, 30, 32, 37, 38, 40, 46] +
                   list(range(49, 61)) + [65, 66, 67, 71, 73, 80, 81, 83] +
                   list(range(87, 92)) + [94, 95, 96, 103, 107, 118, 119, 120])
OP_DOT, OP_CONV, OP_REDUCE, OP_REDUCE_WINDOW, OP_COPY, OP_TRANSPOSE = 34, 26, 70, 72, 27, 98


def _operands(n, edges):
    """For each node the producers of its edges [u, v], in the edge order."""
    ops = [[] for _ in range(n)]
    for u, v in np.asarray(edges, dtype=np.int64).reshape(-1, 2):
        ops[u].append(v)
    return ops


def roofline(x, op, edges):
    """The 5 roofline columns of every node (tpugraphs/roofline.h), float32 (n, 5)."""
    x = _as2d(x, "node features")
    n = x.shape[0]
    op = np.asarray(op).reshape(-1)
    onehot = x[:, 2:21] > 0.5
    first = np.where(onehot.any(axis=1), onehot.argmax(axis=1), -1)
    esize = np.where(first >= 0, np.array(_ESIZE)[np.maximum(first, 0)], 0).astype(np.float64)
    el = np.maximum(x[:, NF_SHAPE_PROD].astype(np.float64), 0.0)
    by = el * esize
    dims = x[:, NF_SHAPE_DIMS:NF_SHAPE_DIMS + NSLOT].astype(np.float64)
    rank = _last_positive([dims[:, i] for i in range(NSLOT)])
    win = x[:, 44].astype(np.float64)
    ops = _operands(n, edges)
    out = np.empty((n, ROOF_COLS), dtype=np.float32)
    crit = ROOF_PEAK / ROOF_BW

    def dim_at(v, axis):
        return dims[v, int(axis)] if 0 <= axis < NSLOT else -1.0

    for u in range(n):
        o = int(op[u])
        kind = ("dot" if o == OP_DOT else "conv" if o == OP_CONV else
                "reduce" if o == OP_REDUCE else "rwin" if o == OP_REDUCE_WINDOW else
                "move" if o in (OP_COPY, OP_TRANSPOSE) else
                "elem" if o in _ELEMENTWISE else None)
        if kind is None:
            out[u] = -1.0
            continue
        e = el[u]
        B = by[u]
        for v in ops[u]:
            B += by[v]
        F = 0.0
        if kind == "elem":
            F = e
        elif kind == "rwin":
            F = e * max(1.0, win[u])
        elif kind == "reduce":
            F = max([e] + [el[v] for v in ops[u]])
        elif kind == "dot":
            if len(ops[u]) < 2:
                F = 2.0 * e
            else:
                a, b = ops[u][0], ops[u][1]
                bt = 1.0
                for i in range(min(rank[u], rank[a], rank[b]) - 2):
                    if not (dims[u, i] == dims[a, i] == dims[b, i]):
                        break
                    bt *= dims[u, i]
                k2 = el[a] * el[b] / (e * bt) if e > 0 else 0.0
                F = 2.0 * e * (np.sqrt(k2) if k2 >= 1.0 else 1.0)
        elif kind == "conv":
            cout = dim_at(u, x[u, 106])
            best = None
            if cout > 0:
                for p in ops[u][:2]:
                    if rank[p] == rank[u] and dim_at(p, x[u, 100]) == cout:
                        if best is None or el[p] < el[best]:
                            best = p
            F = 2.0 * e * el[best] / cout if best is not None else 2.0 * e * max(1.0, win[u])
        tc, tm = F / ROOF_PEAK, B / ROOF_BW
        out[u, 0] = np.log2(1.0 + F)
        out[u, 1] = np.log2(1.0 + B)
        out[u, 2] = min(ROOF_MAX_RATIO, F / B / crit) if B > 0 else 0.0
        out[u, 3] = 1.0 if (F > 0 and tc >= tm) else 0.0
        out[u, 4] = np.log2(1.0 + 1e9 * max(tc, tm))
    return out


def mismatch(x, feat, edges, cfg_ids):
    """The 3 mismatch columns (in, out, total) of layout rows x (c * nc, >= 18)."""
    x = _as2d(x, "layout configs")
    feat = _as2d(feat, "node features")
    cfg_ids = np.asarray(cfg_ids, dtype=np.int64).reshape(-1)
    nc = len(cfg_ids)
    if nc < 1 or x.shape[0] % nc:
        raise ValueError("layout rows are not whole configs")
    last = {}  # node -> its last config index
    for j, u in enumerate(cfg_ids):
        last[int(u)] = j
    ops = _operands(feat.shape[0], edges)
    nrank = node_rank(feat)
    # producer of (j, t): (v, config index of v or -1, node layout or None)
    prod = {}
    for j, u in enumerate(cfg_ids):
        if last[int(u)] != j:
            continue
        for t, v in enumerate(ops[int(u)][:2]):
            r = nrank[v]
            lay = feat[v, NF_LAYOUT:NF_LAYOUT + NSLOT]
            known = 1 <= r <= NSLOT and not (r >= 2 and np.all(lay <= 0))
            prod[(j, t)] = (v, last.get(int(v), -1), lay[:int(r)].tolist() if known else None)

    def drop_unit(seq, d):
        return [a for a in seq if not (0 <= a < NSLOT and d[int(a)] == 1.0)]

    y = np.zeros((x.shape[0], MISMATCH_COLS), dtype=np.float32)
    for c in range(x.shape[0] // nc):
        rows = x[c * nc:(c + 1) * nc]
        total = 0
        for (j, t), (v, k, nlay) in prod.items():
            want = rows[j, NSLOT * (t + 1):NSLOT * (t + 2)]
            rw = int(layout_config_rank(want[None, :])[0])
            if rw < 1:
                continue
            give = None
            if k >= 0:
                rk = int(layout_config_rank(rows[k:k + 1, 0:NSLOT])[0])
                if rk >= 1:
                    give = rows[k, :rk].tolist()
            if give is None and nlay is not None:
                give = nlay
            if give is None or len(give) != rw:
                continue
            d = feat[v, NF_SHAPE_DIMS:NF_SHAPE_DIMS + NSLOT]
            if drop_unit(want[:rw].tolist(), d) != drop_unit(give, d):
                y[c * nc + j, 0] += 1
                if k >= 0:
                    y[c * nc + k, 1] += 1
                total += 1
        y[c * nc:(c + 1) * nc, 2] = total
    return y


if __name__ == "__main__":
    import sys
    import time
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
    rng = np.random.default_rng(0)
    x = rng.integers(-1, 300, size=(rows, NODE_DIM)).astype(np.float32)
    t = time.time()
    y = encode_node(x, 7)
    print("encode_node %d rows -> %r in %.2f s" % (rows, y.shape, time.time() - t))
    t = time.time()
    y = encode_tile(x[:, :TILE_DIM], 7)
    print("encode_tile %d rows -> %r in %.2f s" % (rows, y.shape, time.time() - t))
    t = time.time()
    y = encode_layout(rng.integers(-1, 6, size=(rows, LAYOUT_DIM)).astype(np.float32), 7)
    print("encode_layout %d rows -> %r in %.2f s" % (rows, y.shape, time.time() - t))
