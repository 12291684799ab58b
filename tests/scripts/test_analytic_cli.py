#!/usr/bin/env python3
"""End-to-end tests of the analytic commands: chips, roofline, collective, model.

Covers: --help of each, table and --json output agreeing with the book's
worked examples (scaling_book.md; the unit test test_analytic checks the
formulas in depth), --chips-file overrides, --ops files (text and JSON),
the --svg plot (well-formed XML, written via a temporary name), HF
config.json input, and bad input: exit 2 with a message saying what to
change for usage errors, exit 1 for failures (unreadable files).

Environment (tests/CMakeLists.txt): PERFCAST, PC_TEST_TMP. Python stdlib only.
"""
import json
import os
import shutil
import sys
import xml.etree.ElementTree as ET

from clitest import FAILS, expect, expect_rc, run

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_analytic_cli")


def close(a, b, tol, what):
    expect(abs(a - b) <= tol * abs(b), "%s: got %.6g, expected %.6g (tol %g)" % (what, a, b, tol))


def jrun(*args):
    p = run(*args)
    expect_rc(p, 0, " ".join(args))
    try:
        return json.loads(p.stdout)
    except ValueError:
        FAILS.append("%s: output is not JSON: %s" % (" ".join(args), p.stdout[:300]))
        return None


def test_help():
    p = run("--help")
    for cmd in ("chips", "roofline", "collective", "model"):
        expect(cmd in p.stdout, "--help lists " + cmd)
        q = run(cmd, "--help")
        expect_rc(q, 0, cmd + " --help")
        expect(q.stdout.startswith("usage: perfcast " + cmd), cmd + " --help prints usage")


def test_chips():
    p = run("chips")
    expect_rc(p, 0, "chips")
    for name in ("v3", "v4", "v5p", "v5e", "v6e", "tpu7x", "v100", "a100", "h100", "h200", "b200"):
        expect(any(line.startswith(name + " ") for line in p.stdout.splitlines()),
               "chips lists " + name)
    d = jrun("chips", "v5e", "--json")
    d = d["chips"][0] if d else None
    if d:
        close(d["critical_intensity"]["HBM"], 240, 0.002, "v5e critical intensity (§2)")
        close(d["critical_intensity"]["ICI"], 2200, 0.006, "v5e ICI critical intensity (§5)")
        expect("scaling_book.md" in d["source"], "v5e source names the book")
        expect(d["wrap"] == "full_axis" and d["pod_shape"] == [16, 16], "v5e topology")
    p = run("chips", "h100")
    expect_rc(p, 0, "chips h100")
    expect("NVLink" in p.stdout and "source" in p.stdout, "chips h100 details")
    chips = jrun("chips", "--json")
    chips = chips["chips"] if chips else None
    expect(chips is not None and len(chips) >= 11, "chips --json lists all chips")
    # --chips-file: override a built-in and add a chip based on another
    f = TMP + "/chips.json"
    with open(f, "w") as fh:
        json.dump({"chips": [{"name": "v5e", "price_per_hour": 0.9},
                             {"name": "fast-v5e", "base": "v5e", "hbm_bw": 1.64e12}]}, fh)
    d = jrun("chips", "fast-v5e", "--json", "--chips-file", f)
    d = d["chips"][0] if d else None
    if d:
        close(d["critical_intensity"]["HBM"], 120, 0.002, "user chip based on v5e")
    d = jrun("chips", "v5e", "--json", "--chips-file", f)
    d = d["chips"][0] if d else None
    if d:
        close(d["price_per_hour"], 0.9, 1e-9, "overridden price")
    bad = TMP + "/bad_chips.json"
    with open(bad, "w") as fh:
        fh.write('{"chips": [{"name": "v5e", "hbm_bw": "fast"}]}')
    p = run("chips", "--chips-file", bad)
    expect_rc(p, 1, "bad chips file")
    expect("hbm_bw" in p.stderr and "bad_chips.json" in p.stderr, "bad chips file message")
    p = run("chips", "v9000")
    expect_rc(p, 2, "unknown chip")
    expect("v5e" in p.stderr and "--chips-file" in p.stderr, "unknown chip lists the known ones")


def test_roofline():
    # §2: bf16 matmul compute-bound above B ~ 240 tokens on v5e
    lo = jrun("roofline", "--chip", "v5e", "--matmul", "200,65536,65536", "--json")
    hi = jrun("roofline", "--chip", "v5e", "--matmul", "300,65536,65536", "--json")
    if lo and hi:
        expect(lo["ops"][0]["bound"] == "memory", "B=200 memory-bound on v5e")
        expect(hi["ops"][0]["bound"] == "compute", "B=300 compute-bound on v5e")
        close(lo["critical_intensity"], 240, 0.002, "roofline critical intensity")
    # int8 weights halve the threshold (§2: B > 120)
    d = jrun("roofline", "--chip", "v5e", "--matmul", "130,65536,65536", "--wdtype", "int8",
             "--json")
    if d:
        expect(d["ops"][0]["bound"] == "compute", "int8 weights: B=130 compute-bound")
    # ops file (text) with an SVG, and the same ops as JSON
    ops = TMP + "/ops.txt"
    with open(ops, "w") as fh:
        fh.write("# a tiny layer\nmatmul name=up m=4096 k=4096 n=14336\n"
                 "elementwise name=act shape=4096x14336 flops=4\n"
                 "matmul name=down m=4096 k=14336 n=4096 comm=32MiB\n"
                 "reduce name=norm shape=4096x4096\n")
    svg = TMP + "/roof.svg"
    p = run("roofline", "--chip", "v5p", "--ops", ops, "--svg", svg)
    expect_rc(p, 0, "roofline --ops --svg")
    for name in ("up", "act", "down", "norm", "total"):
        expect(name in p.stdout, "roofline table has " + name)
    try:
        root = ET.parse(svg).getroot()
        expect(root.tag.endswith("svg"), "SVG root element")
        circles = [e for e in root.iter()
                   if e.tag.endswith("circle") and e.get("class") == "marker"]
        expect(len(circles) == 4, "one point per op (got %d)" % len(circles))
    except (OSError, ET.ParseError) as exc:
        FAILS.append("roofline SVG unreadable: %s" % exc)
    left = [f for f in os.listdir(TMP) if ".tmp" in f]
    expect(not left, "no temporary files left: %r" % left)
    opsj = TMP + "/ops.json"
    with open(opsj, "w") as fh:
        json.dump([{"kind": "matmul", "name": "up", "m": 4096, "k": 4096, "n": 14336},
                   {"kind": "elementwise", "name": "act", "shape": [4096, 14336], "flops": 4},
                   {"kind": "matmul", "name": "down", "m": 4096, "k": 14336, "n": 4096,
                    "comm": "32MiB"},
                   {"kind": "reduce", "name": "norm", "shape": [4096, 4096]}], fh)
    a = jrun("roofline", "--chip", "v5p", "--ops", ops, "--json")
    b = jrun("roofline", "--chip", "v5p", "--ops", opsj, "--json")
    if a and b:
        expect([o["time"] for o in a["ops"]] == [o["time"] for o in b["ops"]],
               "text and JSON ops give the same times")
        close(sum(o["share"] for o in a["ops"]), 1, 1e-9, "shares sum to 1")
    # usage errors and failures
    for args, rc, needle in (
            (("roofline", "--matmul", "1,2,3"), 2, "--chip"),
            (("roofline", "--chip", "v5e"), 2, "--matmul"),
            (("roofline", "--chip", "v5e", "--matmul", "1,2"), 2, "MxKxN"),
            (("roofline", "--chip", "v5e", "--matmul", "1,2,3", "--dtype", "fp64"), 2, "fp64"),
            (("roofline", "--chip", "v5e", "--op", "matmul m=1 k=2 n=3 zz=1"), 2, "zz"),
            (("roofline", "--chip", "v5e", "--ops", TMP + "/missing.txt"), 1, "missing.txt"),
            (("roofline", "--chip", "v5e", "--matmul", "1,2,3", "--dtype", "fp32"), 1,
             "give flops.fp32 in a --chips-file")):
        p = run(*args)
        expect_rc(p, rc, " ".join(args))
        expect(needle in p.stderr, "%s: message mentions %s: %s" % (" ".join(args), needle,
                                                                      p.stderr.strip()))


def test_collective():
    # §3: 1 GiB AllGather over one wrapped v5e axis of 16 = V/W_ici * 15/16
    d = jrun("collective", "--chip", "v5e", "--op", "allgather", "--bytes", "1GiB",
             "--mesh", "16x16", "--axes", "0", "--json")
    if d:
        c = d["collectives"][0]
        close(c["time"], 2**30 / 9e10 * 15 / 16, 1e-9, "v5e AllGather (§3)")
        expect(c["participants"] == 16 and c["network"] == "ICI", "v5e AllGather group")
    # the brief's example: v5p 16x16 (a 16x16x1 slice: no wraparound, noted)
    p = run("collective", "--chip", "v5p", "--op", "allgather", "--bytes", "1GiB",
            "--mesh", "16x16", "--axes", "0")
    expect_rc(p, 0, "collective v5p 16x16")
    expect("note:" in p.stdout and "--wrap yes" in p.stdout, "no-wraparound note")
    d = jrun("collective", "--chip", "v5p", "--bytes", "1GiB", "--mesh", "16x16", "--wrap", "yes",
             "--json")
    if d:
        ops = [c["op"] for c in d["collectives"]]
        expect(ops == ["allgather", "reducescatter", "allreduce", "alltoall"], "all four ops")
        ag, rs, ar, a2a = (c["time"] for c in d["collectives"])
        close(rs, ag, 1e-12, "RS = AG")
        close(ar, 2 * ag, 1e-12, "AR = 2 AG")
    # --book: the book's V/W_ici (§3); at n = 4 the exact ring factor is 3/4 of it
    for conv, factor in ((("--book",), 1.0), ((), 0.75)):
        d = jrun("collective", "--chip", "v5e", "--op", "allgather", "--bytes", "1GiB",
                 "--mesh", "4x4", "--wrap", "yes", "--axes", "0", "--json", *conv)
        if d:
            close(d["collectives"][0]["time"], 2**30 / 9e10 * factor, 1e-9,
                  "v5e AllGather n=4, convention %s" % (conv or "exact"))
            expect(d["convention"] == ("book" if conv else "exact"), "convention in JSON")
    d = jrun("collective", "--chip", "v5e", "--op", "allreduce", "--bytes", "1GiB",
             "--mesh", "16x16", "--book", "--json")
    if d:
        close(d["collectives"][0]["bw_time"], 2 * 2**30 / (2 * 9e10), 1e-9,
              "book AllReduce over two axes 2V/(2 W_ici) (§3)")
    # permute: V over one link one way + latency
    for name in ("permute", "collective-permute", "p2p", "sendrecv"):
        d = jrun("collective", "--chip", "v5e", "--op", name, "--bytes", "1e9", "--mesh", "4x4",
                 "--json")
        if d:
            c = d["collectives"][0]
            close(c["time"], 1e9 / 4.5e10 + 1e-6, 1e-9, "v5e %s over ICI" % name)
            expect(c["op"] == "permute", "%s parses as permute" % name)
    d = jrun("collective", "--chip", "h100", "--op", "permute", "--bytes", "1e9", "--mesh",
             "16x8", "--axes", "0", "--json")
    if d:
        close(d["collectives"][0]["time"], 1e9 / 50e9 + 1e-5, 1e-9, "H100 permute across nodes")
        expect(d["collectives"][0]["network"] == "IB", "H100 permute network")
    # latency-bound small message
    d = jrun("collective", "--chip", "v5e", "--op", "ag", "--bytes", "64k", "--mesh", "16",
             "--json")
    if d:
        expect(d["collectives"][0]["latency_bound"], "64 kB AllGather is latency-bound")
    # GPUs: 413 GB/s over a 32-node H100 SuperPod unit (§5)
    d = jrun("collective", "--chip", "h100", "--op", "allgather", "--bytes", "1e9",
             "--mesh", "32x8", "--json")
    if d:
        c = d["collectives"][0]
        close(1e9 / c["bw_time"], 413e9, 0.001, "H100 SuperPod AllGather 413 GB/s (§5)")
        expect(c["network"] == "NVLink+IB" and c["nodes"] == 32, "H100 levels")
    # DCN between v5e pods
    d = jrun("collective", "--chip", "v5e", "--op", "allreduce", "--bytes", "1e9",
             "--mesh", "2x16x16", "--dcn-axes", "0", "--axes", "0", "--json")
    if d:
        close(d["collectives"][0]["bw_time"], 1e9 / 3.125e9, 1e-9, "v5e DCN AllReduce")
    for args, needle in (
            # the library names pc_mesh.dcn_mask, the command its flag
            (("collective", "--chip", "v5e", "--bytes", "1GiB", "--mesh", "32x32"),
             "joined over DCN with --dcn-axes"),
            (("collective", "--chip", "v5e", "--bytes", "1GiB", "--mesh", "4x4x4"), "2-D torus"),
            (("collective", "--chip", "v5e", "--bytes", "lots", "--mesh", "16"), "byte size"),
            (("collective", "--chip", "v5e", "--bytes", "1GB", "--mesh", "16x16", "--chips", "64"),
             "--chips"),
            (("collective", "--chip", "v5e", "--bytes", "1GB", "--mesh", "16", "--axes", "1"),
             "--axes"),
            (("collective", "--chip", "v5e", "--bytes", "1GB", "--mesh", "16", "--op", "bcast"),
             "--op"),
            (("collective", "--chip", "h100", "--bytes", "1GB", "--mesh", "2x8",
              "--dcn-axes", "0"), "InfiniBand automatically, so drop --dcn-axes"),
            (("collective", "--chip", "v5e", "--bytes", "1GB"), "--mesh")):
        p = run(*args)
        expect_rc(p, 2, " ".join(args))
        expect(needle in p.stderr, "%s: message mentions %s: %s" % (" ".join(args), needle,
                                                                      p.stderr.strip()))


def test_model():
    # §6: LLaMA-3 70B: 70.55e9 params; 4 checkpoints/layer at 4M tokens -> 20.9 TB
    d = jrun("model", "--preset", "llama3-70b", "--batch-tokens", "4M", "--remat", "tensors:4",
             "--json")
    if d:
        expect(d["params"]["total"] == 70553706496, "LLaMA-3 70B params (§6)")
        close(d["train_memory"]["activations"], 20.9e12, 0.004, "LLaMA-3 70B checkpoints (§6)")
        close(d["kv_cache"]["bytes_per_token"], 327680, 0, "LLaMA-3 70B bf16 KV/token (§7)")
    d = jrun("model", "--preset", "llama3-70b", "--kv-dtype", "int8", "--json")
    if d:
        close(d["kv_cache"]["bytes_per_token"], 163840, 0, "LLaMA-3 70B int8 KV/token (§7)")
    p = run("model", "--list-presets")
    expect_rc(p, 0, "--list-presets")
    for name in ("llama3-8b", "llama3-70b", "llama3-405b", "mixtral-8x7b", "gemma-7b", "gpt2"):
        expect(name in p.stdout.split(), "preset " + name)
    p = run("model", "--preset", "mixtral-8x7b")
    expect_rc(p, 0, "model mixtral table")
    expect("46.70e9" in p.stdout and "12.88e9" in p.stdout, "mixtral total/active in the table")
    # an HF config.json
    cfg = TMP + "/config.json"
    with open(cfg, "w") as fh:
        json.dump({"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12,
                   "n_inner": None, "n_positions": 1024, "vocab_size": 50257}, fh)
    d = jrun("model", cfg, "--json")
    if d:
        expect(d["params"]["total"] == 124439808, "gpt2 config.json params")
    # flags, and flags overriding a preset
    d = jrun("model", "--layers", "32", "--d-model", "4096", "--d-ff", "14336", "--heads", "32",
             "--kv-heads", "8", "--vocab", "128256", "--json")
    if d:
        expect(d["params"]["total"] == 8030261248, "LLaMA-3 8B from flags")
    d = jrun("model", "--preset", "llama3-8b", "--layers", "16", "--json")
    if d:
        expect(d["model"]["layers"] == 16 and d["params"]["total"] < 8e9, "preset override")
    for args, rc, needle in (
            (("model", "--layers", "2", "--d-model", "4096", "--d-ff", "8", "--heads", "30",
              "--vocab", "10"), 2, "does not divide"),
            (("model", "--preset", "llama3-8b", "--kv-heads", "5"), 2, "divisor of 32"),
            (("model", "--preset", "llama9"), 2, "llama3-8b"),
            (("model",), 2, "--preset"),
            (("model", "--preset", "gpt2", "--remat", "most"), 2, "big_matmuls"),
            (("model", "--preset", "gpt2", "--seq", "0"), 2, "--seq"),
            (("model", TMP + "/missing.json"), 1, "missing.json")):
        p = run(*args)
        expect_rc(p, rc, " ".join(args))
        expect(needle in p.stderr, "%s: message mentions %s: %s" % (" ".join(args), needle,
                                                                      p.stderr.strip()))
    # MFU of a measured run (hand value: 3e6 x 6 x 12,851,609,600 / (4096 x 0.3 x 4.59e14))
    d = jrun("model", "--preset", "llama2-13b", "--chip", "v5p", "--mfu-step-time", "0.3",
             "--chips", "4096", "--batch-tokens", "3e6", "--attention", "none", "--json")
    if d:
        close(d["mfu"]["mfu"], 3e6 * 6 * 12851609600 / (4096 * 0.3 * 4.59e14), 1e-9,
              "MFU from a step time")
        close(d["mfu"]["achieved_flops_per_chip"], 3e6 * 6 * 12851609600 / (4096 * 0.3), 1e-9,
              "achieved FLOP/s per chip")
    p = run("model", "--preset", "llama3-70b", "--chip", "h100", "--gpu-hours", "3.93e6",
            "--tokens", "15T", "--attention", "none")
    expect_rc(p, 0, "model --gpu-hours")
    expect("MFU 44.7%" in p.stdout and "6N" in p.stdout, "MFU from GPU-hours: " + p.stdout[-300:])
    # MoE compute-bound batch: mixtral (E=8, k=2) on v5e: 1.97e14/8.2e11 x 4
    d = jrun("model", "--preset", "mixtral-8x7b", "--chip", "v5e", "--json")
    if d:
        close(d["moe_critical_batch"], 1.97e14 / 8.2e11 * 4, 1e-9, "MoE B_crit E/k")
    for args, needle in (
            (("model", "--preset", "gpt2", "--mfu-step-time", "1", "--chips", "8"), "--chip"),
            (("model", "--preset", "gpt2", "--chip", "h100", "--gpu-hours", "10"), "--tokens"),
            (("model", "--preset", "gpt2", "--chip", "h100", "--mfu-step-time", "x"),
             "--mfu-step-time"),
            (("model", "--preset", "gpt2", "--attention", "half"), "--attention")):
        p = run(*args)
        expect_rc(p, 2, " ".join(args))
        expect(needle in p.stderr, "%s: message mentions %s: %s" % (" ".join(args), needle,
                                                                      p.stderr.strip()))
    bad = TMP + "/bad_config.json"
    with open(bad, "w") as fh:
        json.dump({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 30,
                   "num_hidden_layers": 2, "intermediate_size": 8, "vocab_size": 10}, fh)
    p = run("model", bad)
    expect_rc(p, 1, "config with heads not dividing width")
    expect("bad_config.json" in p.stderr and "head_dim" in p.stderr, "bad config message")


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    for t in (test_help, test_chips, test_roofline, test_collective, test_model):
        t()
    if FAILS:
        print("%d failure(s):" % len(FAILS))
        for f in FAILS:
            print(" -", f)
        return 1
    print("all analytic CLI checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
