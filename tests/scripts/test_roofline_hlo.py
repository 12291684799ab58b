#!/usr/bin/env python3
"""End-to-end tests of `perfcast roofline --hlo FILE` (whole-module roofline).

- Small HLO texts written here: exact FLOPs/bytes in --json, --top N with the
  rest summarized, --while-trips, --module out of range, bad HLO -> exit 1
  with PATH:LINE:COLUMN, --while-trips without --hlo -> exit 2.
- Every openxla fixture (fixtures/hlo/*.hlo) and the two raw TpuGraphs protos
  (fixtures/tpugraphs_raw/*.pb): --json --svg: shares sum to 1, the totals
  are the sums of the rows, the SVG is well-formed XML.
- Golden: graphsage_tf.hlo's dots and elementwise ops recomputed here
  independently (shapes and dimension numbers read with regexes, not with
  perfcast's parser): dot FLOPs = 2 * prod(result dims) * prod(lhs
  contracting dims), bytes = (lhs + rhs + result elements) * element size;
  elementwise FLOPs = result elements.
- A hand-built HloModuleProto (.pb) with a batched dot: dimension numbers read
  from the proto's field 30; a corrupt .pb -> exit 1 naming the file.

Without $PC_SHARED_DIR/fixtures the fixture parts are skipped and the script
exits 77 (after the rest passed). Python stdlib only.
"""
import json
import math
import os
import re
import shutil
import sys
import xml.etree.ElementTree as ET

from clitest import FAILS, expect, expect_rc, run

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_roofline_hlo")
SHARED = os.environ.get("PC_SHARED_DIR", "")
HLO_DIR = os.path.join(SHARED, "fixtures", "hlo")
RAW_DIR = os.path.join(SHARED, "fixtures", "tpugraphs_raw")
TYPE_BYTES = {"pred": 1, "s8": 1, "u8": 1, "bf16": 2, "f16": 2, "s16": 2, "f32": 4, "s32": 4,
              "u32": 4, "f64": 8, "s64": 8}


def jrun(*args):
    p = run(*args)
    expect_rc(p, 0, " ".join(args))
    try:
        return json.loads(p.stdout)
    except ValueError:
        FAILS.append("%s: output is not JSON: %s" % (" ".join(args), p.stdout[:300]))
        return None


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def by_name(doc):
    return {o["name"]: o for o in doc["ops"]}


SMALL = """HloModule small
f {
  p0 = bf16[64,128] parameter(0)
  p1 = bf16[128,256] parameter(1)
  d = bf16[64,256] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT r = bf16[64,256] maximum(d, d)
}
ENTRY e {
  a = bf16[64,128] parameter(0)
  b = bf16[128,256] parameter(1)
  fu = bf16[64,256] fusion(a, b), kind=kOutput, calls=f
  x = f32[64,256] convert(fu)
  ROOT t = f32[256,64] transpose(x), dimensions={1,0}
}
"""


def test_small():
    path = write("small.hlo", SMALL)
    d = jrun("roofline", "--chip", "v5e", "--hlo", path, "--json", "--top", "0")
    if not d:
        return
    ops = by_name(d)
    expect(sorted(ops) == ["fu", "t", "x"], "small: rows %s" % sorted(ops))
    fu = ops.get("fu", {})
    # 2*64*256*128 + 64*256 (the maximum), bytes (64*128 + 128*256 + 64*256)*2
    expect(fu.get("flops") == 2 * 64 * 256 * 128 + 64 * 256, "small: fusion flops %s" % fu)
    expect(fu.get("bytes") == (64 * 128 + 128 * 256 + 64 * 256) * 2, "small: fusion bytes %s" % fu)
    expect(fu.get("matrix") is True and fu.get("dtype") == "bf16", "small: fusion matrix bf16")
    expect(ops.get("t", {}).get("flops") == 0, "small: transpose has no flops")
    expect(d["hlo"]["instructions"] == 5 and d["hlo"]["free_instructions"] == 2,
           "small: counts %s" % d["hlo"])
    expect(abs(sum(o["share"] for o in d["ops"]) - 1) < 1e-9, "small: shares sum to 1")
    top = jrun("roofline", "--chip", "v5e", "--hlo", path, "--json", "--top", "1")
    if top:
        expect(len(top["ops"]) == 1 and top.get("others", {}).get("ops") == 2,
               "small --top 1: one row and two others")
        expect(abs(top["ops"][0]["share"] + top["others"]["share"] - 1) < 1e-9,
               "small --top 1: shares sum to 1")
    p = run("roofline", "--chip", "v5e", "--hlo", path, "--top", "2")
    expect_rc(p, 0, "small --top 2 (text)")
    expect("(1 others)" in p.stdout and "overall:" in p.stdout, "small text: " + p.stdout)


WHILE = """cond {
  p = (s32[], f32[1024]) parameter(0)
  ROOT c = pred[] constant(false)
}
body {
  p = (s32[], f32[1024]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[1024] get-tuple-element(p), index=1
  y = f32[1024] multiply(x, x)
  ROOT t = (s32[], f32[1024]) tuple(i, y)
}
ENTRY e {
  a = (s32[], f32[1024]) parameter(0)
  ROOT w = (s32[], f32[1024]) while(a), condition=cond, body=body
}
"""


def test_while_and_errors():
    path = write("while.hlo", WHILE)
    one = jrun("roofline", "--chip", "h100", "--hlo", path, "--json", "--top", "0")
    ten = jrun("roofline", "--chip", "h100", "--hlo", path, "--json", "--while-trips", "10", "--top", "0")
    if one and ten:
        expect(one["total"]["flops"] == 1024 and ten["total"]["flops"] == 10240,
               "while: 1024 flops a trip, got %s / %s" % (one["total"]["flops"],
                                                          ten["total"]["flops"]))
        expect(one["hlo"]["while_loops"] == 1, "while: counted")
    p = run("roofline", "--chip", "v5e", "--hlo", path)
    expect("while loop" in p.stdout, "while: a note in the table output")
    bad = write("bad.hlo", "ENTRY e {\n  a = f32[2] parameter(0)\n  ROOT b = f32[2 add(a, a)\n}\n")
    p = run("roofline", "--chip", "v5e", "--hlo", bad)
    expect_rc(p, 1, "bad HLO")
    expect(re.search(r"bad\.hlo:3:\d+: expected", p.stderr) is not None,
           "bad HLO: line:column in %r" % p.stderr)
    p = run("roofline", "--chip", "v5e", "--hlo", path, "--module", "4")
    expect_rc(p, 1, "--module out of range")
    expect("module 4" in p.stderr, "--module out of range: " + p.stderr)
    p = run("roofline", "--chip", "v5e", "--hlo", os.path.join(TMP, "missing.hlo"))
    expect_rc(p, 1, "missing HLO file")
    expect("missing.hlo" in p.stderr, "missing HLO: " + p.stderr)
    p = run("roofline", "--chip", "v5e", "--matmul", "1,2,3", "--while-trips", "3")
    expect_rc(p, 2, "--while-trips without --hlo")
    p = run("roofline", "--chip", "v5e", "--hlo", path, "--top", "-1")
    expect_rc(p, 2, "--top -1")


def test_proto():
    """A bare HloModuleProto built by hand (hloproto.py): the batched dot's dimension numbers
    come from DotDimensionNumbers (field 30). Skipped without numpy (hloproto needs it)."""
    try:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from hloproto import comp, inst, module, msg
    except ImportError:
        print("numpy missing: proto test skipped")
        return
    dd = msg((1, [2]), (2, [1]), (3, [0]), (4, [0]))
    insts = [inst("a", "parameter", 1, 16, (4, 16, 32), extra=((9, 0),)),
             inst("b", "parameter", 2, 16, (4, 32, 8), extra=((9, 1),)),
             inst("d", "dot", 3, 16, (4, 16, 8), operands=(1, 2), extra=((30, dd),))]
    path = os.path.join(TMP, "dot.pb")
    with open(path, "wb") as f:
        f.write(module("m", [comp("e", 7, 3, insts)], 7))
    d = jrun("roofline", "--chip", "v5e", "--hlo", path, "--json", "--top", "0")
    if d:
        o = by_name(d).get("d", {})
        expect(o.get("flops") == 2 * 4 * 16 * 8 * 32 and o.get("bytes") == (2048 + 1024 + 512) * 2,
               "proto dot: %s" % o)
        expect(d["hlo"]["format"] == "HloModuleProto" and d["hlo"]["dots_without_dims"] == 0,
               "proto dot: %s" % d["hlo"])
    with open(os.path.join(TMP, "junk.pb"), "wb") as f:
        f.write(b"\xff\xff\xff")
    p = run("roofline", "--chip", "v5e", "--hlo", os.path.join(TMP, "junk.pb"))
    expect_rc(p, 1, "corrupt .pb")
    expect("junk.pb" in p.stderr, "corrupt .pb names the file: " + p.stderr)


def check_doc(d, what):
    ops = d["ops"]
    t = d["total"]
    expect(len(ops) > 0, what + ": no ops")
    expect(abs(sum(o["share"] for o in ops) - 1) < 1e-9, what + ": shares sum to 1")
    expect(math.isclose(sum(o["time"] for o in ops), t["time"], rel_tol=1e-9),
           what + ": total time is the sum")
    expect(math.isclose(sum(o["flops"] for o in ops), t["flops"], rel_tol=1e-9, abs_tol=1e-9),
           what + ": total flops is the sum")
    expect(math.isclose(sum(o["bytes"] for o in ops), t["bytes"], rel_tol=1e-9),
           what + ": total bytes is the sum")
    expect(all(o["flops"] >= 0 and o["bytes"] >= 0 and o["time"] >= 0 for o in ops),
           what + ": negative numbers")
    expect(t["bound"] in ("compute", "memory", "comm"), what + ": overall bound")


def test_fixtures():
    files = sorted(os.path.join(HLO_DIR, f) for f in os.listdir(HLO_DIR) if f.endswith(".hlo"))
    files += sorted(os.path.join(RAW_DIR, f) for f in os.listdir(RAW_DIR) if f.endswith(".pb"))
    expect(len(files) >= 12, "fixtures: %d files" % len(files))
    for i, path in enumerate(files):
        svg = os.path.join(TMP, "roof%d.svg" % i)
        for chip in ("v5e", "h100"):
            d = jrun("roofline", "--chip", chip, "--hlo", path, "--json", "--top", "0", "--svg", svg)
            if not d:
                continue
            check_doc(d, "%s on %s" % (os.path.basename(path), chip))
            try:
                root = ET.parse(svg).getroot()
                expect(root.tag.endswith("svg"), path + ": SVG root")
            except (ET.ParseError, OSError) as exc:
                FAILS.append("%s: SVG unreadable: %s" % (path, exc))


def shapes_of(text):
    """name -> (type, dims) for every instruction with an array shape."""
    out = {}
    for m in re.finditer(r"%([\w.-]+) = (\w+)\[([\d,]*)\]", text):
        dims = [int(x) for x in m.group(3).split(",") if x]
        out[m.group(1)] = (m.group(2), dims)
    return out


def test_graphsage_golden():
    with open(os.path.join(HLO_DIR, "graphsage_tf.hlo")) as f:
        text = f.read()
    shapes = shapes_of(text)
    want = {}
    elementwise = ("add", "multiply", "maximum", "divide", "convert", "rsqrt", "logistic")
    entry = text[text.index("ENTRY"):]
    for m in re.finditer(r"%([\w.-]+) = (\w+)\[([\d,]*)\]\S* ([a-z-]+)\(([^)]*)\)(.*)", entry):
        name, op, args, rest = m.group(1), m.group(4), m.group(5), m.group(6)
        t, dims = shapes[name]
        out = math.prod(dims)
        if op == "dot":
            lhs, rhs = [a.strip().lstrip("%") for a in args.split(",")]
            cd = [int(x) for x in re.search(r"lhs_contracting_dims=\{([\d,]*)\}", rest)
                  .group(1).split(",")]
            k = math.prod(shapes[lhs][1][c] for c in cd)
            nbytes = (math.prod(shapes[lhs][1]) + math.prod(shapes[rhs][1]) + out) * TYPE_BYTES[t]
            want[name] = (2 * out * k, nbytes)
        elif op in elementwise:
            want[name] = (out, None)
    expect(sum(1 for n in want if want[n][1] is not None) == 7, "graphsage: 7 dots")
    d = jrun("roofline", "--chip", "v5e", "--hlo", os.path.join(HLO_DIR, "graphsage_tf.hlo"),
             "--json", "--top", "0")
    if not d:
        return
    ops = by_name(d)
    for name, (flops, nbytes) in want.items():
        o = ops.get(name)
        if o is None:
            FAILS.append("graphsage: no row for %s" % name)
            continue
        expect(o["flops"] == flops, "graphsage %s: flops %s, expected %s" % (name, o["flops"], flops))
        if nbytes is not None:
            expect(o["bytes"] == nbytes,
                   "graphsage %s: bytes %s, expected %s" % (name, o["bytes"], nbytes))
    dots = sum(f for f, b in want.values() if b is not None)
    expect(sum(o["flops"] for o in d["ops"] if o["kind"] == "dot") == dots,
           "graphsage: dot FLOPs sum to %s" % dots)


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    test_small()
    test_while_and_errors()
    test_proto()
    have = os.path.isdir(HLO_DIR) and os.path.isdir(RAW_DIR)
    if have:
        test_fixtures()
        test_graphsage_golden()
    if FAILS:
        print("%d failure(s):" % len(FAILS))
        for f in FAILS:
            print(" -", f)
        return 1
    if not have:
        print("fixtures not found under PC_SHARED_DIR: fixture tests skipped")
        return 77
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
