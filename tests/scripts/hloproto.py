"""Protobuf wire format by hand, for the HLO import tests (no protobuf package needed).

- decode(): a message's fields as {number: [values]} (varints as ints,
  length-delimited fields as bytes), with packed() for packed repeated ints;
- Msg / enc(): writes messages, so tests can build tiny tuning protos;
- read_tuning() / featurize(): an independent reading of TuningData /
  ModuleTuningData and of the TpuGraphs featurizer (tpugraphs.md 6.3-6.4),
  written from the reference notes, to check perfcast's arrays against.
"""
import os
import re

import numpy as np

M64 = (1 << 64) - 1


def varint(b, i):
    r = s = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if not c & 0x80:
            return r, i


def signed(v):
    v &= M64
    return v - (1 << 64) if v >> 63 else v


def decode(b):
    """{field number: [values]} of one message."""
    out = {}
    i = 0
    while i < len(b):
        k, i = varint(b, i)
        f, w = k >> 3, k & 7
        if w == 0:
            v, i = varint(b, i)
        elif w == 1:
            v, i = b[i:i + 8], i + 8
        elif w == 5:
            v, i = b[i:i + 4], i + 4
        elif w == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            raise ValueError("wire type %d" % w)
        out.setdefault(f, []).append(v)
    return out


def ints(m, f):
    """A repeated int64 field, packed or not, as signed ints."""
    r = []
    for v in m.get(f, []):
        if isinstance(v, int):
            r.append(signed(v))
        else:
            i = 0
            while i < len(v):
                x, i = varint(v, i)
                r.append(signed(x))
    return r


def one(m, f, default=0):
    v = m.get(f)
    if not v:
        return default
    return signed(v[-1]) if isinstance(v[-1], int) else v[-1]


def sub(m, f):
    """A singular message field decoded (empty dict if absent)."""
    v = m.get(f)
    return decode(v[-1]) if v else {}


# ---- encoding ---------------------------------------------------------------

def enc_varint(v):
    v &= M64
    out = bytearray()
    while True:
        c = v & 0x7F
        v >>= 7
        if v:
            out.append(c | 0x80)
        else:
            out.append(c)
            return bytes(out)


def fld(num, value):
    """One field: int -> varint, bytes/str -> length-delimited, list of ints -> packed."""
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int):
        return enc_varint(num << 3) + enc_varint(value)
    if isinstance(value, str):
        value = value.encode()
    if isinstance(value, list):
        value = b"".join(enc_varint(x) for x in value)
    return enc_varint(num << 3 | 2) + enc_varint(len(value)) + bytes(value)


def msg(*pairs):
    """msg((1, b"..."), (2, 5), ...) -> bytes; None values are left out."""
    return b"".join(fld(n, v) for n, v in pairs if v is not None)


def shape(et, dims=(), layout=None, tuples=0):
    return msg((2, et), (3, list(dims)) if dims else (3, None),
               *[(4, msg((2, 11))) for _ in range(tuples)],
               (5, msg((1, list(layout))) if layout is not None else None))


def inst(name, opcode, iid, et=11, dims=(), operands=(), calls=(), layout=None, extra=()):
    return msg((1, name), (2, opcode), (3, shape(et, dims, layout)), (35, iid),
               (36, list(operands)) if operands else (36, None),
               (38, list(calls)) if calls else (38, None), *extra)


def comp(name, cid, root, insts):
    return msg((1, name), *[(2, i) for i in insts], (5, cid), (6, root))


def module(name, comps, entry):
    return msg((1, name), *[(3, c) for c in comps], (6, entry))


def tile_run(ns, kernel=(), output=(), inp=(), error=False, default=False, profile=True):
    tsc = msg((1, list(kernel)) if kernel else (1, None), (2, list(output)) if output else (2, None),
              (3, list(inp)) if inp else (3, None))
    return msg((1, msg((1, tsc))), (3, 1 if error else None),
               (4, msg((4, ns))) if profile else (4, None), (5, 1 if default else None))


def layout_run(ns, nodes, error=False, default=False, profile=True):
    """nodes: list of lists of dims lists (tensors)."""
    lc = msg(*[(1, msg(*[(1, msg((1, list(d)) if d else (1, None))) for d in node]))
               for node in nodes])
    return msg((2, msg((1, lc))), (3, 1 if error else None),
               (4, msg((4, ns))) if profile else (4, None), (5, 1 if default else None))


def module_tuning(mod, runs, config_nodes=(), fingerprint=None):
    return msg((1, mod), (2, fingerprint), *[(3, r) for r in runs],
               (4, list(config_nodes)) if config_nodes else (4, None))


def tuning_data(mtds):
    return msg(*[(1, m) for m in mtds])


# ---- reading tuning data ------------------------------------------------------

def read_tuning(b):
    """TuningData or ModuleTuningData bytes -> list of decoded ModuleTuningData dicts."""
    top = decode(b)
    if 3 in top or 4 in top or 2 in top:
        return [top]
    return [decode(v) for v in top.get(1, [])]


def runs_of(mtd):
    out = []
    for r in mtd.get(3, []):
        d = decode(r)
        prof = sub(d, 4)
        out.append({
            "tile": 1 in d, "layout": 2 in d, "raw": d,
            "error": bool(one(d, 3)), "default": bool(one(d, 5)),
            "profile": 4 in d, "ns": one(prof, 4),
        })
    return out


# ---- the featurizer, from the reference notes -----------------------------------

def opcode_table(root):
    """name -> id, read from src/tpugraphs/opcode.{h,c}."""
    h = open(os.path.join(root, "src/tpugraphs/opcode.h")).read()
    c = open(os.path.join(root, "src/tpugraphs/opcode.c")).read()
    ids = {k: int(v) for k, v in re.findall(r"(PC_HLO_\w+) = (\d+)", h)}
    return {name: ids[k] for k, name in re.findall(r"\[(PC_HLO_\w+)\] = \"([^\"]+)\"", c)}


TYPE_ORDER = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 15, 18, 13, 14, 17]


def seq(vals, k, zero_empty=False):
    out = [float(v) for v in vals[:k]] + [0.0] * max(0, k - len(vals))
    s, p = 0, 1
    for v in vals:
        s = (s + v) & M64
        p = (p * v) & M64
    out.append(float(signed(s)))
    out.append(0.0 if (zero_empty and not vals) else float(signed(p)))
    return out


def first(vals, k):
    return [float(v) for v in vals[:k]] + [0.0] * max(0, k - len(vals))


def inst_features(d, root_id):
    f = []
    f.append(1.0 if one(d, 35) == root_id else 0.0)
    f.append(0.0)
    sh = sub(d, 3)
    et = one(sh, 2)
    f += [1.0 if et == t else 0.0 for t in TYPE_ORDER]
    f += seq(ints(sh, 3), 6)
    f.append(float(len(sh.get(4, []))))
    f.append(float(one(d, 9)) if one(d, 2) == b"parameter" else 0.0)
    f += first(ints(d, 14), 6)
    wdims = [decode(x) for x in sub(d, 15).get(1, [])]
    for fn in (1, 2, 3, 4, 5, 6):
        f += seq([one(w, fn) for w in wdims], 6)
    rev = [bool(one(w, 7)) for w in wdims]
    f += [1.0 if r else 0.0 for r in rev[:6]] + [0.0] * max(0, 6 - len(rev))
    f += [float(sum(rev)), float(len(rev) - sum(rev))]
    cd = sub(d, 16)
    f += [float(one(cd, 7)), float(one(cd, 8))] + first(ints(cd, 11), 4)
    f += [float(one(cd, 3)), float(one(cd, 4))] + first(ints(cd, 6), 4)
    f += [float(one(cd, 9)), float(one(cd, 10))]
    f += [float(one(d, 50)), float(one(d, 58))]
    sl = [decode(x) for x in d.get(17, [])]
    f += seq([one(s, 1) for s in sl], 2)  # start
    f += seq([one(s, 3) for s in sl], 2)  # stride
    f += seq([one(s, 2) for s in sl], 2)  # limit
    f += seq(ints(d, 20), 2)
    pd = [decode(x) for x in sub(d, 21).get(1, [])]
    f += seq([one(p, 1) for p in pd], 2)
    f += seq([one(p, 2) for p in pd], 2)
    f.append(1.0 if one(d, 60) else 0.0)
    f += first(ints(sub(sh, 5), 1), 6)
    assert len(f) == 140, len(f)
    return f


def featurize(mod_bytes, opcodes):
    """HloModuleProto bytes -> (node_feat, node_opcode, edge_index, node_splits)."""
    mod = decode(mod_bytes)
    comps = [decode(c) for c in mod.get(3, [])]
    index, roots = {}, {}
    n = 0
    for c in comps:
        for i in c.get(2, []):
            index[one(decode(i), 35)] = n
            n += 1
        roots[one(c, 5)] = one(c, 6)
    feats, ops, edges, splits = [], [], [], [0]
    count = 0
    for c in comps:
        for ib in c.get(2, []):
            d = decode(ib)
            me = index[one(d, 35)]
            ops.append(opcodes.get(one(d, 2, b"").decode(), 0))
            feats.append(inst_features(d, one(c, 6)))
            for o in sorted(set(ints(d, 36))):
                edges.append((me, index[o]))
            for cc in ints(d, 38):
                edges.append((me, index[roots[cc]]))
        count += len(c.get(2, []))
        name = one(c, 1, b"").decode()
        if "cluster" in name or "while" in name or "cond" in name:
            splits.append(count)
    if splits[-1] < count:
        splits.append(count)
    edges = sorted(set(edges))
    return (np.array(feats, dtype=np.float32).reshape(-1, 140), np.array(ops, dtype=np.uint8),
            np.array(edges, dtype=np.int64).reshape(-1, 2), np.array(splits, dtype=np.int64))


def tile_config(raw_run):
    tsc = sub(sub(raw_run, 1), 1)
    return seq(ints(tsc, 1), 6, True) + seq(ints(tsc, 2), 6, True) + seq(ints(tsc, 3), 6, True)


def layout_config(raw_run, nc):
    lc = sub(sub(raw_run, 2), 1)
    out = []
    for node in lc.get(1, []):
        row = [-1.0] * 18
        for t, tb in enumerate(decode(node).get(1, [])):
            dims = ints(decode(tb), 1)
            for j, v in enumerate(dims[:6]):
                row[t * 6 + j] = float(v)
        out.append(row)
    assert len(out) == nc
    return out
