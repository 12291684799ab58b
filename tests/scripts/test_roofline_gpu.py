#!/usr/bin/env python3
"""`perfcast roofline --hlo` on GPU post-optimization dumps (tests/data/hlo/gpu_*.hlo).

FLOPs are recomputed here independently of perfcast's parser and rules, from
the HLO text with regexes:
- cuDNN convolution custom-calls: the convolution is (input, kernel, output) =
  (operand 0, operand 1, result[0]) forward, (result[0], operand 1, operand 0)
  for __cudnn$convBackwardInput, (operand 0, result[0], operand 1) for
  __cudnn$convBackwardFilter; FLOPs = 2 * output elements * kernel input
  features ('i' in dim_labels' kernel part) * kernel spatial elements (its
  digits). The forward ones are also checked against a dense count from the
  window: output spatial = (in + pad_lo + pad_hi - size) / stride + 1.
- cuBLAS GEMMs: 2 * result[0] elements * product of the lhs dims named by
  backend_config's lhs_contracting_dimensions (json-decoded, quoted or not).
- fft: 5 N log2 N per complex transform, N = product of fft_length.
- while loops: the scan's known_trip_count (12) times the inner counted
  loop's trips (4) times one GEMM; collectives are communication (comm_bytes,
  T_comm), not HBM bytes; async -start/-done pairs count once.
Also: --loop-ops rows sum to the same totals; --mesh maps groups to axes; a
module with nothing to cost exits 0 with zero. Python stdlib only.
"""
import json
import math
import os
import re
import sys

from clitest import FAILS, expect, expect_rc, run

DATA = os.path.join(os.environ.get("PC_TEST_DATA", os.path.join(os.path.dirname(__file__), "..",
                                                                 "data")), "hlo")
TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_roofline_gpu")

SHAPE = r"([a-z0-9]+)\[([0-9,]*)\]"


def dims(s):
    return [int(x) for x in s.split(",") if x]


def prod(v):
    r = 1
    for x in v:
        r *= x
    return r


def parse(text):
    """name -> (first array shape dims, line) for every instruction."""
    insts = {}
    for line in text.splitlines():
        m = re.match(r"\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(\(?)" + SHAPE, line)
        if m:
            insts[m.group(1)] = (dims(m.group(4)), line)
    return insts


def operands(line):
    m = re.search(r"custom-call\(([^)]*)\)", line)
    return re.findall(r"%([\w.\-]+)", m.group(1))


def backend_config(line):
    m = re.search(r"backend_config=(\"(?:[^\"\\]|\\.)*\"|\{.*\})\s*$", line)
    s = m.group(1)
    if s.startswith('"'):
        s = json.loads(s)
    return json.loads(s)


def expected_flops(text):
    insts = parse(text)
    out = {}
    for name, (res, line) in insts.items():
        t = re.search(r'custom_call_target="([^"]+)"', line)
        if t and t.group(1).startswith("__cudnn$conv"):
            ops = [insts[o][0] for o in operands(line)]
            inp, ker, outp = ops[0], ops[1], res
            if "BackwardInput" in t.group(1):
                inp, outp = res, ops[0]
            elif "BackwardFilter" in t.group(1):
                ker, outp = res, ops[1]
            lab = re.search(r"dim_labels=(\w+)_(\w+)->(\w+)", line)
            kl = lab.group(2)
            per = ker[kl.index("i")] * prod(ker[i] for i, c in enumerate(kl) if c.isdigit())
            out[name] = 2 * prod(outp) * per
            if "Forward" in t.group(1):  # the output size from the window, densely
                w = re.search(r"window=\{([^}]*)\}", line).group(1)
                size = [int(x) for x in re.search(r"size=([\dx]+)", w).group(1).split("x")]
                st = re.search(r"stride=([\dx]+)", w)
                stride = [int(x) for x in st.group(1).split("x")] if st else [1] * len(size)
                pd = re.search(r"pad=([\d_x]+)", w)
                pads = [tuple(int(y) for y in p.split("_")) for p in pd.group(1).split("x")] \
                    if pd else [(0, 0)] * len(size)
                il = lab.group(1)
                sp = [inp[il.index(str(k))] for k in range(len(size))]
                osp = [(sp[k] + pads[k][0] + pads[k][1] - size[k]) // stride[k] + 1
                       for k in range(len(size))]
                n_out = inp[il.index("b")] * ker[kl.index("o")] * prod(osp)
                expect(n_out == prod(outp), "%s: dense output size %d vs result %d"
                       % (name, n_out, prod(outp)))
        elif t and t.group(1).startswith("__cublas$"):
            lhs = insts[operands(line)[0]][0]
            cfg = backend_config(line)
            cfg = cfg.get("gemm_backend_config", cfg)
            lc = [int(x) for x in cfg["dot_dimension_numbers"]["lhs_contracting_dimensions"]]
            out[name] = 2 * prod(res) * prod(lhs[d] for d in lc)
        elif re.search(r"\bfft\(", line):
            n = prod(int(x) for x in re.search(r"fft_length=\{([\d,]+)\}", line).group(1).split(","))
            out[name] = prod(res) // n * 5 * n * math.log2(n)
    return out


def jrun(*args):
    p = run(*args)
    expect_rc(p, 0, " ".join(args))
    try:
        return json.loads(p.stdout)
    except ValueError:
        FAILS.append("%s: not JSON: %s" % (" ".join(args), p.stdout[:300]))
        return None


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1)


def test_convnet():
    path = os.path.join(DATA, "gpu_convnet.hlo")
    with open(path) as f:
        want = expected_flops(f.read())
    expect(len(want) == 7, "convnet: 4 convolutions, 2 GEMMs, 1 FFT found, got %s" % sorted(want))
    d = jrun("roofline", "--chip", "h100", "--hlo", path, "--json")
    if not d:
        return
    rows = {o["name"]: o for o in d["ops"]}
    for name, f in sorted(want.items()):
        got = rows.get(name, {}).get("flops")
        expect(got is not None and close(got, f), "convnet %s: FLOPs %s, expected %s"
               % (name, got, f))
    total = sum(want.values()) + rows["relu_fusion"]["flops"]
    expect(close(d["total"]["flops"], total), "convnet total FLOPs %s, expected %s"
           % (d["total"]["flops"], total))
    expect(d["hlo"]["library_calls"] == 6, "convnet: 6 library calls")
    expect(d["hlo"]["unknown_ops"] == 0, "convnet: no op without a rule")
    # tuple outputs: the result without the workspace (u8[4096]) is written
    expect(rows["cudnn-conv"]["bytes_written"] == 8 * 16 * 16 * 64 * 4, "conv bytes written %s"
           % rows["cudnn-conv"]["bytes_written"])
    expect(rows["cudnn-conv"]["matrix"], "a cuDNN convolution is a matrix op")
    print("convnet: %d library calls, total %.6g FLOPs (independent %.6g)"
          % (d["hlo"]["library_calls"], d["total"]["flops"], total))


def test_scan():
    path = os.path.join(DATA, "gpu_scan_tp.hlo")
    with open(path) as f:
        text = f.read()
    gemm = 2 * 64 * 64 * 64
    d = jrun("roofline", "--chip", "h100", "--hlo", path, "--json")
    if not d:
        return
    h = d["hlo"]
    rows = {o["name"]: o for o in d["ops"]}
    # 12 layers (known_trip_count) x 4 inner trips (counter < 4) x one GEMM
    expect(close(rows["while.2"]["flops"] - 12 * 4 * (1 + 1) - 12 * 2, 12 * 4 * gemm),
           "scan: GEMM FLOPs x 48, got %s" % rows["while.2"]["flops"])
    expect(h["loops_known_trip_count"] == 1 and h["loops_counted"] == 1 and
           h["loops_fallback"] == 0, "scan: one known, one counted loop: %s" % h)
    # --while-trips is only a fallback: it does not change these loops
    d2 = jrun("roofline", "--chip", "h100", "--hlo", path, "--json", "--while-trips", "7")
    expect(d2 and d2["total"]["flops"] == d["total"]["flops"], "--while-trips is a fallback")
    kinds = sorted(c["kind"] for c in h["collectives"])
    expect(kinds == ["all-gather", "all-reduce", "all-to-all", "collective-permute",
                     "reduce-scatter"], "scan: each collective once: %s" % kinds)
    coll = {c["kind"]: c for c in h["collectives"]}
    ar = coll["all-reduce"]
    expect(ar["count"] == 12 and ar["group_size"] == 4 and ar["groups"] == 2 and
           ar["bytes"] == 64 * 64 * 4 and ar["op"] == "while.2", "all-reduce: %s" % ar)
    expect(coll["all-gather"]["bytes"] == 512 * 64 * 4 and coll["all-gather"]["group_size"] == 8,
           "all-gather V = the gathered result: %s" % coll["all-gather"])
    expect(coll["reduce-scatter"]["bytes"] == 512 * 64 * 4, "reduce-scatter V = its input")
    expect(coll["all-to-all"]["bytes"] == 64 * 64 * 4 * 2, "all-to-all V = operand x group")
    expect(coll["collective-permute"]["group_size"] == 4, "permute: 4 devices in the pairs")
    want_comm = 12 * 64 * 64 * 4 + 512 * 64 * 4 * 2 + 64 * 64 * 4 * 3
    expect(close(d["total"]["comm_bytes"], want_comm), "comm bytes %s, expected %s"
           % (d["total"]["comm_bytes"], want_comm))
    expect(d["total"]["t_comm"] > 0 and rows["while.2"]["t_comm"] > 0, "T_comm > 0")
    expect(rows["all-gather-start"]["bytes"] == 0, "collectives are not HBM bytes")
    expect("all-gather-done" not in rows and "reduce-scatter-done" not in rows,
           "-done halves are free")
    # --loop-ops: the body's rows, same totals; --mesh 2x4
    d3 = jrun("roofline", "--chip", "h100", "--hlo", path, "--json", "--loop-ops", "--mesh", "2x4")
    if d3:
        r3 = {o["name"]: o for o in d3["ops"]}
        expect("while.2/while.1/cublas-gemm.1" in r3 and
               close(r3["while.2/while.1/cublas-gemm.1"]["flops"], 48 * gemm),
               "--loop-ops: the GEMM row x 48: %s" % sorted(r3))
        expect(close(d3["total"]["flops"], d["total"]["flops"]), "--loop-ops keeps the total")
        expect(r3["while.2/all-reduce.1"]["t_comm"] > 0, "--loop-ops: the all-reduce row")
    p = run("roofline", "--chip", "h100", "--hlo", path)
    expect_rc(p, 0, "scan (text)")
    expect("known_trip_count" in p.stdout and "collective(s)" in p.stdout, "scan notes:\n" +
           p.stdout)
    print("scan: while.2 %.6g FLOPs (48 GEMMs of %d), comm %.6g bytes, T_comm %.3g s"
          % (rows["while.2"]["flops"], gemm, d["total"]["comm_bytes"], d["total"]["t_comm"]))
    _ = text


def test_zero_and_flags():
    os.makedirs(TMP, exist_ok=True)
    path = os.path.join(TMP, "zero.hlo")
    with open(path, "w") as f:
        f.write("HloModule z\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT t = (f32[4]) tuple(p)\n}\n")
    d = jrun("roofline", "--chip", "h100", "--hlo", path, "--json")
    expect(d and d["total"]["flops"] == 0 and d["ops"] == [], "zero module: zero")
    p = run("roofline", "--chip", "h100", "--hlo", path)
    expect_rc(p, 0, "zero module (text)")
    expect("nothing to cost" in p.stdout, "zero module: says so")
    p = run("roofline", "--chip", "h100", "--matmul", "1,2,3", "--mesh", "2x4")
    expect_rc(p, 2, "--mesh without --hlo")
    p = run("roofline", "--chip", "h100", "--hlo", os.path.join(DATA, "gpu_scan_tp.hlo"),
            "--mesh", "2xq")
    expect_rc(p, 2, "bad --mesh")


def main():
    test_convnet()
    test_scan()
    test_zero_and_flags()
    for f in FAILS:
        print("FAIL:", f)
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
