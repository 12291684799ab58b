#!/usr/bin/env python3
"""Independent numpy implementation of perfcast's feature encodings.

Written from the SPEC in src/gnn/encode.h (pad_minus1, dim_encodings,
layout_categories), not from src/gnn/encode.c; tests/scripts/
test_encode_numpy.py compares the two. Test/bench-only: the product never
imports this file. Needs only numpy.

    from encode_np import bits_from_names, encode_node, encode_configs
    y = encode_node(node_feat, bits_from_names("all"))      # (rows, 140) -> (rows, 183)
    y = encode_configs(config_feat, "tile", 7)              # (rows, 24)  -> (rows, 78)
    y = encode_configs(lay.reshape(-1, 18), "layout", 7)    # (rows, 18)  -> (rows, 51)

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

BITS = {"pad": 1, "dims": 2, "layout": 4}

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
          "layout": "layout", "layout_categories": "layout"}


def bits_from_names(spec):
    """'all' -> 7, 'none' or '' -> 0, 'pad,dims' -> 3 (also the long names)."""
    if isinstance(spec, int):
        if spec & ~7:
            raise ValueError("unknown encoding bits 0x%x" % spec)
        return spec
    s = spec.strip().lower()
    if s == "all":
        return 7
    if s in ("none", ""):
        return 0
    bits = 0
    for name in s.split(","):
        name = name.strip()
        if name not in _NAMES:
            raise ValueError("unknown encoding %r (pad, dims, layout, all, none)" % name)
        bits |= BITS[_NAMES[name]]
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
    if in_dim <= 0 or ((pad or dims or lay) and in_dim < NODE_DIM):
        return -1
    return in_dim + NODE_DIM_COLS * dims + LAYOUT_COLS * lay


def tile_width(bits, in_dim=TILE_DIM):
    _, dims, _ = _bits(bits)
    if in_dim <= 0 or (dims and in_dim < TILE_DIM):
        return -1
    return in_dim + TILE_DIM_COLS * dims


def layout_width(bits, in_dim=LAYOUT_DIM):
    _, _, lay = _bits(bits)
    if in_dim <= 0 or (lay and in_dim < LAYOUT_DIM):
        return -1
    return in_dim + 3 * LAYOUT_COLS * lay


def encode_node(x, bits):
    """Node features (rows, >=140) float32 -> (rows, node_width) float32, as pc_encode_node."""
    x, y = _start(x, "node features", lambda d: node_width(bits, d), NODE_DIM)
    n, D = x.shape
    pad, dims, lay = _bits(bits)
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


def encode_tile(x, bits):
    """Tile config features (rows, >=24) -> (rows, tile_width), as pc_encode_tile."""
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
    return y


def layout_config_rank(s):
    """Number of leading slots >= 0 of (rows, 6) vectors."""
    lead = np.cumprod(np.asarray(s) >= 0, axis=1)
    return lead.sum(axis=1)


def encode_layout(x, bits):
    """Layout config features (rows, >=18) -> (rows, layout_width), as pc_encode_layout."""
    x, y = _start(x, "layout configs", lambda d: layout_width(bits, d), LAYOUT_DIM)
    n, D = x.shape
    _, _, lay = _bits(bits)
    if lay:
        for t in range(3):
            s = x[:, NSLOT * t:NSLOT * (t + 1)]
            c = D + LAYOUT_COLS * t
            y[:, c:c + LAYOUT_COLS] = layout_cols(s, layout_config_rank(s))
    return y


def encode_configs(x, kind, bits):
    if kind == "tile":
        return encode_tile(x, bits)
    if kind == "layout":
        return encode_layout(x, bits)
    raise ValueError("encode_configs: kind %r (need 'tile' or 'layout')" % (kind,))


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
