#!/usr/bin/env python3
"""End-to-end tests of `perfcast plan train` and `perfcast plan serve`.

Covers: --help, the book's worked examples through the CLI (scaling_book.md §5-§7; the unit
test test_plan checks them in depth), --json output, the JAX snippet, a config.json model,
MoE, multi-slice (DCN), and bad input: exit 2 with a message saying what to change for usage
errors (unknown chip or model, a slice not matching --chips, axis sizes not dividing the
chips, a chip count not dividing the heads), exit 1 when nothing fits (with what to change)
or a config.json is invalid (heads not dividing the width).

Environment (tests/CMakeLists.txt): PERFCAST, PC_TEST_TMP. Python stdlib only.
"""
import json
import os
import re
import sys

from clitest import FAILS, expect, expect_rc, run

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_plan_cli")


def close(a, b, tol, what):
    expect(abs(a - b) <= tol * abs(b), "%s: got %.6g, expected %.6g (tol %g)" % (what, a, b, tol))


def jrun(*args, rc=0):
    p = run(*args)
    expect_rc(p, rc, " ".join(args))
    try:
        return json.loads(p.stdout)
    except ValueError:
        FAILS.append("%s: output is not JSON: %s" % (" ".join(args), p.stdout[:300]))
        return None


# The book's worked examples are ideal-roofline answers: `plan train` ranks by the calibrated
# step time by default (--calibration builtin), so they run with --calibration none.
POD = ("plan", "train", "--preset", "llama3-70b", "--chip", "v5p", "--chips", "8960",
       "--batch-tokens", "4Mi", "--tokens", "15T", "--calibration", "none")


def test_help():
    p = run("--help")
    expect("plan" in p.stdout, "--help lists plan")
    for sub in ("train", "serve"):
        q = run("plan", sub, "--help")
        expect_rc(q, 0, "plan %s --help" % sub)
        expect(q.stdout.startswith("usage: perfcast plan " + sub), "plan %s --help usage" % sub)
    expect_rc(run("plan", "--help"), 0, "plan --help")
    p = run("plan")
    expect_rc(p, 2, "plan without a subcommand")
    p = run("plan", "fly")
    expect_rc(p, 2, "plan fly")
    expect("train, serve" in p.stderr, "unknown subcommand lists train, serve")


def test_train_pod():
    # §6: LLaMA-3 70B, 4M batch on the 8960-chip v5p pod
    p = run(*POD)
    expect_rc(p, 0, "plan train (text)")
    for needle in ("best: fsdp", "tensor 4", "bottleneck:", "MFU", "days", "$",
                   "850 tokens/chip", "X_opt", "jax.make_mesh((2240, 4), ('fsdp', 'tensor'))",
                   "PartitionSpec as P", "top 10 plans"):
        expect(needle in p.stdout, "plan train output has %r" % needle)
    d = jrun(*POD, "--json")
    if d:
        b = d["plans"][0]
        expect(b["axes"]["tensor"] == 4, "book layout: 4-way TP (§6)")
        expect(1024 <= b["axes"]["fsdp"] * b["axes"]["data"] <= 4096, "~2048-way data (§6)")
        close(b["tokens_per_chip"], 468, 0.002, "468 tokens/chip (§6)")
        t = d["thresholds"]
        close(t["fsdp_critical_tokens_per_chip"], 850, 0.002, "FSDP critical batch 850 (§5)")
        close(t["fsdp_critical_batch"], 7.6e6, 0.005, "7.6M tokens for the pod (§5)")
        close(t["tp_limit"], 11.2, 0.01, "TP limit F/2550 (§5)")
        expect("jax.make_mesh" in b["jax"], "JSON carries the JAX snippet")
        expect(len(d["plans"]) == 10, "--top default 10")
        expect(d["search"]["plans_evaluated"] > 10000, "a big search")
        parts = sum(b["step_parts"].values())
        close(parts, b["step_time"], 1e-9, "step parts add up")
    # §6: 44 days at 40% MFU with the 6N rule
    d = jrun(*POD, "--efficiency", "0.4", "--attention", "none", "--json", "--top", "1")
    if d:
        close(d["plans"][0]["days"], 44, 0.02, "44 days at 40% MFU (§6)")
        close(d["plans"][0]["cost_usd"], d["plans"][0]["days"] * 24 * 8960 * 4.2, 1e-6,
              "cost at $4.2/chip-hour")
        expect(len(d["plans"]) == 1, "--top 1")
    # §6: 4 checkpoints/layer -> 21.6 TB -> >= 225 chips
    d = jrun("plan", "train", "--preset", "llama3-70b", "--chip", "v5p", "--chips", "8960",
             "--batch-tokens", "4e6", "--remat", "tensors:4", "--json")
    if d:
        close(d["thresholds"]["min_chips_by_memory"], 225, 0.012, ">= 225 v5p chips (§6)")
        expect(d["plans"][0]["remat"] == "tensors:4", "--remat restricts the search")
    # fixed axes and pipeline
    d = jrun(*POD, "--pp", "4", "--tp", "8", "--json")
    if d:
        b = d["plans"][0]
        expect(b["axes"]["stage"] == 4 and b["axes"]["tensor"] == 8, "fixed --pp/--tp kept")
        expect(b["step_parts"]["bubble"] > 0, "pipeline bubble counted")
    p = run(*POD, "--pp", "4", "--tp", "8")
    expect("'stage'" in p.stdout and "micro-batches" in p.stdout, "pipeline in the JAX snippet")


def test_train_other():
    # LLaMA-2 13B on a 16x16x16 slice, 3M batch of 32k sequences: the book's 1024 FSDP x 4 TP
    d = jrun("plan", "train", "--preset", "llama2-13b", "--chip", "v5p", "--slice", "16x16x16",
             "--batch-tokens", "3e6", "--seq", "32Ki", "--efficiency", "0.4", "--attention",
             "none", "--calibration", "none", "--json")  # a book example: ideal roofline
    if d:
        b = d["plans"][0]
        expect(b["axes"]["tensor"] == 4 and b["axes"]["fsdp"] * b["axes"]["data"] == 1024,
               "LLaMA-2 13B: 1024 x 4 (§6)")
        close(b["step_time"], 0.300, 0.04, "LLaMA-2 13B step ~300 ms (§6)")
    # MoE, multi-slice, GPUs, a config.json
    for args in (("--preset", "mixtral-8x7b", "--chip", "v5p", "--chips", "512",
                  "--batch-tokens", "2M", "--ep", "8"),
                 ("--preset", "llama3-70b", "--chip", "v5p", "--chips", "17920",
                  "--batch-tokens", "16M"),
                 ("--preset", "llama3-8b", "--chip", "h100", "--chips", "64",
                  "--batch-tokens", "1M")):
        d = jrun("plan", "train", *args, "--json")
        if d:
            expect(d["plans"], "plans for %s" % " ".join(args))
    d = jrun("plan", "train", "--preset", "llama3-70b", "--chip", "v5p", "--chips", "17920",
             "--batch-tokens", "16M", "--json")
    if d:
        close(d["thresholds"]["dcn_critical_tokens_per_slice"], 73440, 1e-6, "DCN 73,440 (§5)")
        expect(d["plans"][0]["dcn_axes"], "an axis crosses DCN")
        expect("(DCN)" in d["slice"], "the slice names its DCN axis")
    d = jrun("plan", "train", "--preset", "mixtral-8x7b", "--chip", "v5p", "--chips", "512",
             "--batch-tokens", "2M", "--ep", "8", "--json")
    if d:
        expect(d["plans"][0]["axes"]["expert"] == 8 and d["plans"][0]["step_parts"]["ep"] > 0,
               "expert parallel AllToAll")
    cfg = TMP + "/config.json"
    with open(cfg, "w") as fh:
        json.dump({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
                   "num_key_value_heads": 8, "num_hidden_layers": 32,
                   "intermediate_size": 14336, "vocab_size": 128256}, fh)
    d = jrun("plan", "train", "--model", cfg, "--chip", "v5e", "--chips", "256",
             "--batch-tokens", "1M", "--json")
    if d:
        close(d["params"], 8030261248, 1e-12, "config.json model (LLaMA-3 8B)")
    d = jrun("plan", "train", "--model", "llama3-8b", "--chip", "v5e", "--chips", "256",
             "--batch-tokens", "1M", "--json")
    if d:
        close(d["params"], 8030261248, 1e-12, "--model PRESET")


def test_train_bad():
    # nothing fits: 70B on 16 v5e
    p = run("plan", "train", "--preset", "llama3-70b", "--chip", "v5e", "--chips", "16",
            "--batch-tokens", "4Mi")
    expect_rc(p, 1, "nothing fits")
    expect("no plan fits" in p.stderr and "more chips" in p.stderr, "says what to change: %s"
           % p.stderr)
    p = run("plan", "train", "--preset", "llama2-13b", "--chip", "v5p", "--slice", "16x16x16",
            "--batch-tokens", "3e6", "--seq", "32Ki", "--dp", "4096")
    expect_rc(p, 1, "pure DP of 13B on v5p")
    # the search time ("3 plans in 130 us") must not trip the check
    out = re.sub(r"in [0-9.]+ [mu]?s\b", "in T", p.stdout)
    expect("fixed" in p.stderr and "130" not in out, "pure DP message: %s" % p.stderr)
    bad = TMP + "/bad_config.json"
    with open(bad, "w") as fh:
        json.dump({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 30,
                   "num_hidden_layers": 2, "intermediate_size": 8, "vocab_size": 10}, fh)
    p = run("plan", "train", "--model", bad, "--chip", "v5p", "--chips", "64",
            "--batch-tokens", "1M")
    expect_rc(p, 1, "heads not dividing the width")
    expect("bad_config.json" in p.stderr and "head_dim" in p.stderr, "heads message: %s"
           % p.stderr)
    for args, needle in (
            (("--preset", "llama3-70b", "--chip", "v9", "--chips", "64", "--batch-tokens", "1M"),
             "unknown chip"),
            (("--preset", "llama9", "--chip", "v5p", "--chips", "64", "--batch-tokens", "1M"),
             "llama3-70b"),
            (("--preset", "llama3-70b", "--chip", "v5p", "--chips", "8960", "--slice",
              "16x16x16", "--batch-tokens", "1M"), "4096 chips"),
            (("--preset", "llama3-70b", "--chip", "v5e", "--slice", "4x4x4",
              "--batch-tokens", "1M"), "2-D torus"),
            (("--preset", "llama3-70b", "--chip", "v5p", "--chips", "8960", "--tp", "3",
              "--batch-tokens", "1M"), "divide"),
            (("--preset", "llama3-70b", "--chip", "v5p", "--chips", "64", "--batch-tokens",
              "1k"), "sequence"),
            (("--preset", "llama3-70b", "--chip", "v5p", "--chips", "64"), "--batch-tokens"),
            (("--preset", "llama3-70b", "--chip", "v5p", "--batch-tokens", "1M"), "--chips"),
            (("--preset", "llama3-70b", "--chip", "v5p", "--chips", "64", "--batch-tokens",
              "lots"), "--batch-tokens"),
            (("--preset", "llama3-70b", "--chip", "v5p", "--chips", "64", "--batch-tokens",
              "1M", "--remat", "most"), "--remat"),
            (("--preset", "llama3-70b", "--chip", "v5p", "--chips", "64", "--batch-tokens",
              "1M", "--zero", "4"), "--zero")):
        p = run("plan", "train", *args)
        expect_rc(p, 2, " ".join(args))
        expect(needle in p.stderr, "%s: message mentions %s: %s" % (" ".join(args), needle,
                                                                      p.stderr.strip()))


def test_serve():
    # §7: LLaMA-3 70B int8 on 8 v5e at 8192 context
    p = run("plan", "serve", "--preset", "llama3-70b", "--chip", "v5e", "--chips", "8",
            "--context", "8192", "--weight-dtype", "int8")
    expect_rc(p, 0, "plan serve (text)")
    for needle in ("slice 4x2", "largest batch 42", "decode step", "$/Mtok", "26-way"):
        expect(needle in p.stdout, "plan serve output has %r" % needle)
    d = jrun("plan", "serve", "--preset", "llama3-70b", "--chip", "v5e", "--chips", "8",
             "--context", "8192", "--weight-dtype", "int8", "--attention", "none", "--json")
    if d:
        c = d["contexts"][0]
        expect(c["max_batch"] == 42, "largest batch ~43 (§7): %s" % c["max_batch"])
        rows = {r["batch"]: r for r in c["batches"]}
        expect(sorted(rows) == [1, 2, 4, 8, 16, 32, 42], "doubling table up to the max")
        close(rows[32]["decode"]["step"], 17e-3, 0.025, "~17 ms at batch 32 (§7)")
        close(rows[32]["decode"]["tokens_per_s"], 1882, 0.025, "1882 tok/s (§7)")
        close(rows[32]["kv_bytes"], 41.9e9, 0.03, "KV 41.9 GB (§7)")
        expect(rows[32]["decode"]["usd_per_mtok"] > 0, "cost per million tokens")
    # §7: LLaMA-2 13B on 8 v5e: batch 1 -> 4.98 ms
    d = jrun("plan", "serve", "--preset", "llama2-13b", "--chip", "v5e", "--chips", "8",
             "--context", "8192", "--batch", "1", "--attention", "none", "--efficiency", "1",
             "--json")
    if d:
        close(d["contexts"][0]["batches"][0]["decode"]["step"], 4.98e-3, 0.004,
              "LLaMA-2 13B batch 1: 4.98 ms (§7)")
    # contexts list
    d = jrun("plan", "serve", "--preset", "llama3-8b", "--chip", "h100", "--chips", "8",
             "--context", "2Ki,8Ki,32Ki", "--json")
    if d:
        cs = d["contexts"]
        expect([c["context"] for c in cs] == [2048, 8192, 32768], "three contexts")
        expect(cs[0]["max_batch"] > cs[1]["max_batch"] > cs[2]["max_batch"],
               "longer context, smaller batch")
    # a batch that does not fit, weights that do not fit, bad chip counts
    p = run("plan", "serve", "--preset", "llama2-13b", "--chip", "v5e", "--chips", "8",
            "--context", "8192", "--batch", "240")
    expect_rc(p, 1, "batch 240 does not fit")
    expect("largest that fits is 15" in p.stderr, "says the largest batch: %s" % p.stderr)
    p = run("plan", "serve", "--preset", "llama3-70b", "--chip", "v5e", "--chips", "2",
            "--context", "8192")
    expect_rc(p, 1, "weights do not fit")
    expect("at least 9 chips; 16 for a model-parallel degree that divides the 64 heads" in p.stderr
           and "int8" in p.stderr and "(0 for" not in p.stderr,
           "weights message: %s" % p.stderr)
    for args, needle in (
            (("--chips", "6", "--context", "8192"), "use one of 1, 2, 4, 8"),
            (("--chips", "8", "--slice", "4x4", "--context", "8192"), "16 chips"),
            (("--chips", "8"), "--context"),
            (("--chips", "8", "--context", "8192", "--batch", "0"), "--batch"),
            (("--chips", "8", "--context", "8192", "--kv-dtype", "int3"), "--kv-dtype")):
        p = run("plan", "serve", "--preset", "llama3-70b", "--chip", "v5e", *args)
        expect_rc(p, 2, " ".join(args))
        expect(needle in p.stderr, "%s: message mentions %s: %s" % (" ".join(args), needle,
                                                                      p.stderr.strip()))


CAL = ("plan", "train", "--preset", "llama3-70b", "--chip", "v5p", "--chips", "8960",
       "--batch-tokens", "4Mi", "--top", "3")
HERE = os.path.dirname(os.path.abspath(__file__))


def test_train_calibrated():
    # default (--calibration builtin): the calibrated step beside the ideal bound, never below it
    p = run(*CAL)
    expect_rc(p, 0, "plan train (calibrated)")
    expect(re.search(r"calibrated step \S+ \S+ \(MFU [0-9.]+%\) against the ideal bound", p.stdout),
           "text prints the calibrated step and the ideal bound: %s" % p.stdout[:1500])
    expect("calibrated" in p.stdout and "ideal" in p.stdout, "table has both columns")
    no_inf_nan(p, "plan train (calibrated)")
    d = jrun(*CAL, "--json")
    if d:
        expect(d["calibration"] == "builtin", "JSON names the calibration")
        for pl in d["plans"]:
            c, i = pl["calibrated_step_time"], pl["step_time"]
            expect(isinstance(c, float) and isinstance(i, float) and 0 < i <= c < 1e6,
                   "calibrated %s >= ideal %s > 0" % (c, i))
            expect(0 < pl["calibrated_mfu"] <= pl["mfu"], "calibrated MFU <= ideal MFU")
        cs = [pl["calibrated_step_time"] for pl in d["plans"]]
        # steps within 0.5% of each other are a tie (broken by the ideal step)
        expect(all(b >= a * (1 - 0.005) for a, b in zip(cs, cs[1:])),
               "plans rank by the calibrated step: %s" % cs)
    # --calibration none: the ideal roofline only, no calibrated numbers
    p = run(*CAL, "--calibration", "none")
    expect_rc(p, 0, "plan train --calibration none")
    expect("calibrated step" not in p.stdout and "--calibration none" in p.stdout,
           "--calibration none prints no calibrated step: %s" % p.stdout[:800])
    d = jrun(*CAL, "--calibration", "none", "--json")
    if d:
        expect(d["calibration"] == "none", "JSON: calibration none")
        expect(all(pl.get("calibrated_step_time") is None for pl in d["plans"]),
               "--calibration none: no calibrated_step_time")


def test_train_calibration_file():
    # a file written by `perfcast calibrate` is accepted
    runs = os.path.join(HERE, "..", "data", "runs", "good_runs.json")
    cal = os.path.join(TMP, "cal.json")
    p = run("calibrate", runs, "--out", cal, "--no-loso")
    expect_rc(p, 0, "calibrate good_runs.json")
    d = jrun(*CAL, "--calibration", cal, "--json")
    if d:
        expect(d["calibration"] == cal, "JSON names the file: %s" % d["calibration"])
        expect(d["plans"] and d["plans"][0]["calibrated_step_time"] > 0, "file calibration used")
    # malformed: exit 1 naming the file and the field
    with open(cal) as fh:
        good = json.load(fh)
    bad_version = dict(good, perfcast_calibration=99)
    bad_coef = dict(good, coefficients=dict(good["coefficients"], **{"train.no_such": 1.0}))
    for name, text, needle in (("notjson.json", "{not json", "not JSON"),
                               ("version.json", json.dumps(bad_version), "perfcast_calibration"),
                               ("coef.json", json.dumps(bad_coef), "train.no_such")):
        path = os.path.join(TMP, name)
        with open(path, "w") as fh:
            fh.write(text)
        p = run(*CAL, "--calibration", path)
        expect_rc(p, 1, "plan train --calibration %s" % name)
        expect(name in p.stderr and needle in p.stderr,
               "%s: message names the file and %s: %s" % (name, needle, p.stderr.strip()))
    p = run(*CAL, "--calibration", os.path.join(TMP, "absent.json"))
    expect_rc(p, 1, "plan train --calibration absent.json")
    expect("absent.json" in p.stderr, "missing file named: %s" % p.stderr.strip())


def test_train_pins():
    # Llama 3 405B: 126 layers over 16 stages (uneven: 8 on the slowest) is accepted
    base = ("plan", "train", "--preset", "llama3-405b", "--chip", "h100", "--chips", "16384",
            "--batch-tokens", "2048x8192", "--seq", "8192", "--tp", "8", "--pp", "16", "--top", "3")
    d = jrun(*base, "--json")
    if d:
        b = d["plans"][0]
        expect(b["axes"]["stage"] == 16 and b["virtual_stages"] == 1, "405B over 16 stages")
        bubble1 = b["step_parts"]["bubble"] / (b["step_time"] - b["step_parts"]["bubble"])
    v = jrun(*base, "--vp", "2", "--micro", "16", "--json")
    if d and v:
        for pl in v["plans"]:
            expect(pl["virtual_stages"] == 2 and pl["micro_batches"] == 16,
                   "--vp 2 --micro 16 kept: %s %s" % (pl["virtual_stages"], pl["micro_batches"]))
        b = v["plans"][0]
        piped = b["step_time"] - b["step_parts"]["bubble"] - b["step_parts"]["dp"] - \
            b["step_parts"]["optimizer"]
        close(b["step_parts"]["bubble"] / piped, 15 / (2 * 16), 1e-9,
              "interleaved bubble (p-1)/(v m)")
        expect(b["calibrated_step_time"] >= b["step_time"] > 0, "calibrated >= ideal with --vp")
    p = run(*base, "--vp", "2")
    expect_rc(p, 0, "plan train --vp 2 (text)")
    expect("interleaved: 2 virtual stages" in p.stdout, "best line names the interleaving")
    no_inf_nan(p, "plan train --vp 2")
    d = jrun(*base, "--micro-batch-size", "2", "--json")
    if d:
        for pl in d["plans"]:
            expect(pl["micro_batch_size"] == 2, "--micro-batch-size 2 kept")
    # context parallel: the 131k-token phase, each sequence over 16 chips
    d = jrun("plan", "train", "--preset", "llama3-405b", "--chip", "h100", "--chips", "16384",
             "--batch-tokens", "128x128Ki", "--seq", "128Ki", "--tp", "8", "--pp", "16", "--cp",
             "16", "--top", "2", "--json")
    if d:
        b = d["plans"][0]
        expect(b["context_parallel"] == 16, "--cp 16 kept")
        expect(b["calibrated_step_time"] > 0, "cp plans are priced by the calibrated model")
    for args, needle in ((("--vp", "2", "--pp", "1"), "--vp"),
                         (("--micro", "0"), "--micro"),
                         (("--cp", "x"), "--cp"),
                         (("--micro", "3", "--micro-batch-size", "5"), "does not divide")):
        p = run("plan", "train", "--preset", "llama3-70b", "--chip", "h100", "--chips", "64",
                "--batch-tokens", "1M", *args)
        expect_rc(p, 2, " ".join(args))
        expect(needle in p.stderr, "%s: message mentions %s: %s" % (" ".join(args), needle,
                                                                      p.stderr.strip()))
    p = run(*base, "--micro", "1000")
    expect_rc(p, 1, "a pin no layout meets")
    expect("pins" in p.stderr, "says the pins rule the layouts out: %s" % p.stderr)


def finite_pos(x):
    return isinstance(x, (int, float)) and 0 < x < 1e12


def test_serve_calibrated():
    base = ("plan", "serve", "--preset", "llama3-70b", "--chip", "h100", "--chips", "8",
            "--context", "2048", "--prefill-tokens", "1024", "--decode-tokens", "1024",
            "--weight-dtype", "fp8")
    p = run(*base)
    expect_rc(p, 0, "plan serve (calibrated)")
    expect("calibrated (continuous batching" in p.stdout and "ideal bound" in p.stdout and
           "throughput-optimal" in p.stdout, "calibrated block: %s" % p.stdout[-800:])
    expect("decode step" in p.stdout, "the book's table is kept")
    no_inf_nan(p, "plan serve (calibrated)")
    d = jrun(*base, "--json")
    if d:
        c = d["contexts"][0]["calibrated"]
        for k in ("output_tokens_per_s", "output_tokens_per_s_per_chip", "ttft_s", "tpot_s",
                  "batch", "max_batch"):
            expect(finite_pos(c[k]), "calibrated %s positive and finite: %s" % (k, c[k]))
        expect(c["batch_chosen"] is True and c["batch_pinned"] is None,
               "no pin: the throughput-optimal batch is chosen and said")
        expect(c["batch"] <= c["max_batch"], "the chosen batch fits")
        close(c["output_tokens_per_s_per_chip"] * 8, c["output_tokens_per_s"], 1e-9, "per chip")
        expect(c["output_tokens_per_s"] <= c["ideal"]["output_tokens_per_s"],
               "calibrated tokens/s <= ideal: %s %s" % (c["output_tokens_per_s"],
                                                        c["ideal"]["output_tokens_per_s"]))
        expect(c["tp"] == 8 and c["replicas"] == 1, "default: tp = all chips")
    d = jrun(*base, "--batch", "64", "--json")
    if d:
        c = d["contexts"][0]["calibrated"]
        expect(c["batch"] == 64 and c["batch_chosen"] is False and c["batch_pinned"] == 64,
               "--batch 64 pins the calibrated batch: %s" % c)
        expect(c["ideal"]["batch"] == 64, "the ideal bound at the same batch")
        expect(c["output_tokens_per_s"] <= c["ideal"]["output_tokens_per_s"],
               "pinned: calibrated tokens/s <= ideal")
    # tensor x data parallelism: 6 H100 serve LLaMA-3 70B as 3 replicas of tp 2
    rep = ("plan", "serve", "--preset", "llama3-70b", "--chip", "h100", "--chips", "6",
           "--context", "2048", "--prefill-tokens", "1024", "--decode-tokens", "1024")
    p = run(*rep)
    expect_rc(p, 2, "6 chips, tp 6")
    expect("--replicas" in p.stderr and "use one of 1, 2, 4, 8" in p.stderr,
           "suggests --replicas: %s" % p.stderr)
    d = jrun(*rep, "--replicas", "3", "--concurrency", "30", "--json")
    if d:
        c = d["contexts"][0]["calibrated"]
        expect(d["tp"] == 2 and d["replicas"] == 3 and c["replicas"] == 3, "3 replicas of tp 2")
        expect(d["contexts"][0]["chips"] == 2, "the book's table is per replica")
        expect(c["batch"] == 10 and c["batch_pinned"] == 10, "--concurrency 30 over 3: %s" % c)
        expect(finite_pos(c["output_tokens_per_s"]) and
               c["output_tokens_per_s"] <= c["ideal"]["output_tokens_per_s"], "replicas priced")
    p = run(*rep, "--replicas", "3")
    expect_rc(p, 0, "--replicas 3 (text)")
    expect("3 replicas of 2-way tensor parallel" in p.stdout and "tp 2 x 3 replicas" in p.stdout,
           "replicas said: %s" % p.stdout[:1500])
    d = jrun("plan", "serve", "--preset", "llama3-8b", "--chip", "h100", "--chips", "6",
             "--context", "2048", "--tp", "1", "--json")
    if d:
        expect(d["replicas"] == 6 and finite_pos(
            d["contexts"][0]["calibrated"]["output_tokens_per_s"]), "--tp 1: 6 replicas")
    p = run(*rep, "--tp", "1")
    expect_rc(p, 1, "70B bf16 on one H100 per replica does not fit")
    expect("not expressible" in p.stdout, "the calibrated block says why: %s" % p.stdout[-400:])
    # MoE with expert parallelism and attention DP
    d = jrun("plan", "serve", "--preset", "mixtral-8x7b", "--chip", "h100", "--chips", "8",
             "--ep", "8", "--attention-dp", "--context", "2048", "--json")
    if d:
        c = d["contexts"][0]["calibrated"]
        expect(c["ep"] == 8 and c["attention_dp"] is True and finite_pos(c["output_tokens_per_s"]),
               "MoE ep 8 with attention DP: %s" % c)
    # --calibration none: no calibrated numbers
    d = jrun(*base, "--calibration", "none", "--json")
    if d:
        expect(d["contexts"][0]["calibrated"] is None, "--calibration none: calibrated null")
    p = run(*base, "--calibration", "none")
    expect("calibrated (continuous" not in p.stdout, "--calibration none prints no block")
    for args, needle in ((("--replicas", "5"), "--replicas 5"),
                         (("--tp", "3", "--replicas", "2"), "--tp 3"),
                         (("--tp", "3"), "does not divide"),
                         (("--ep", "2"), "--ep"),
                         (("--concurrency", "0"), "--concurrency"),
                         (("--calibration", os.path.join(TMP, "absent.json")), "absent.json")):
        p = run(*base, *args)
        expect_rc(p, 1 if needle == "absent.json" else 2, " ".join(args))
        expect(needle in p.stderr, "%s: message mentions %s: %s" % (" ".join(args), needle,
                                                                      p.stderr.strip()))


INF_NAN = re.compile(r"(?<![A-Za-z])-?(inf|nan)(?![A-Za-z])", re.I)


def no_inf_nan(p, what):
    out = p.stdout + p.stderr
    m = INF_NAN.search(out)
    expect(m is None, "%s prints no inf/nan: ...%s..." % (what, out[max(0, m.start() - 80):
                                                                    m.end() + 20] if m else ""))


def test_v4_across_pods():
    # v4 has a DCN bandwidth (6.25e9/chip, as v5p: same 2x2x1 host): plans across two pods
    # are priced, finite, with MFU > 0
    base = ("plan", "train", "--preset", "llama3-70b", "--chip", "v4", "--chips", "8192",
            "--batch-tokens", "16M")
    for extra in ((), ("--fsdp", "8192")):
        p = run(*(base + extra))
        expect_rc(p, 0, "v4 across pods " + " ".join(extra))
        no_inf_nan(p, "v4 across pods " + " ".join(extra))
        expect("MFU 0.0%" not in p.stdout, "v4 across pods: MFU > 0")
        d = jrun(*(base + extra + ("--json",)))
        if d:
            b = d["plans"][0]
            expect(isinstance(b["step_time"], float) and 0 < b["step_time"] < 1e6,
                   "finite step time: %s" % b["step_time"])
            expect(b["mfu"] > 0.05, "MFU > 0: %s" % b["mfu"])
            expect(any(b["dcn_axes"]), "a data axis crosses the pods over DCN")
    # a chip without DCN bandwidth: nothing priced -> exit 1 naming the field, no inf/nan
    nodcn = os.path.join(TMP, "v4_nodcn.json")
    with open(nodcn, "w") as fh:
        json.dump({"name": "v4", "dcn_bw": 0}, fh)
    p = run(*(base + ("--fsdp", "8192", "--chips-file", nodcn)))
    expect_rc(p, 1, "v4 without DCN bandwidth, fsdp over the pods")
    expect("dcn_bw" in p.stderr and "cannot be priced" in p.stderr
           and "set dcn_bw in a --chips-file" in p.stderr, "names dcn_bw: %s" % p.stderr)
    no_inf_nan(p, "v4 without DCN bandwidth")
    p = run(*(base + ("--chips-file", nodcn)))
    no_inf_nan(p, "v4 without DCN bandwidth, searched")
    if p.returncode == 0:
        expect("MFU 0.0%" not in p.stdout, "no MFU 0 plan")
        expect("not priced" in p.stderr, "warns about unpriced layouts: %s" % p.stderr)


def test_topology_warnings():
    # §5's 18,823 v5p chips: 7 x 2689 (prime) -> 2689 slices of 7 chips over DCN, said
    p = run("plan", "train", "--preset", "llama3-70b", "--chip", "v5p", "--chips", "18823",
            "--batch-tokens", "16M")
    expect("warning: 18823 chips do not form one v5p slice; using 2689 slices of 7 chips "
           "(7x1x1" in p.stderr, "18823 warning names the shape: %s" % p.stderr)
    expect("nearest counts" in p.stderr, "18823 warning suggests counts")
    p = run("plan", "train", "--preset", "llama3-70b", "--chip", "v5p", "--chips", "8960",
            "--batch-tokens", "4Mi")
    expect("warning" not in p.stderr, "a full pod is a standard slice: %s" % p.stderr)
    # degenerate: 257 v5e chips would be 257 one-chip slices: usage error with nearest counts
    p = run("plan", "serve", "--preset", "llama3-8b", "--chip", "v5e", "--chips", "257",
            "--context", "4Ki")
    expect_rc(p, 2, "257 v5e chips")
    expect("257 slices of 1 chip" in p.stderr and "256 or 512" in p.stderr,
           "degenerate split refused with nearest counts: %s" % p.stderr)


def test_serve_book():
    common = ("plan", "serve", "--preset", "llama3-70b", "--chip", "v5e", "--weight-dtype",
              "int8", "--context", "8192", "--batch", "32", "--json")
    x = jrun(*(common + ("--chips", "16")))
    b = jrun(*(common + ("--chips", "16", "--book")))
    if x and b:
        rx, rb = x["contexts"][0]["batches"][0], b["contexts"][0]["batches"][0]
        expect(rx["decode"]["comm"] > 0 and rb["decode"]["comm"] == 0,
               "--book leaves out the decode TP AllReduces (§7)")
        dec = rb["decode"]
        close(dec["step"], dec["kv_load"] + max(dec["math"], dec["weight_load"]), 1e-9,
              "book decode step T_kv + max(T_math, T_w)")
        expect(b["convention"] == "book" and x["convention"] == "exact", "convention in JSON")
    # decode TP limit at a chosen batch: M_Y F/(B beta), one torus axis, beta = 8.2e11/9e10
    d = jrun("plan", "serve", "--preset", "llama3-70b", "--chip", "v5e", "--slice", "16",
             "--weight-dtype", "int8", "--context", "8192", "--batch", "64", "--json")
    if d:
        close(d["contexts"][0]["batches"][0]["tp_limit_decode"], 28672 / (64 * 8.2e11 / 9e10),
              1e-9, "decode TP limit at batch 64 (§7: F/(8*64) = 56 with beta rounded to 8)")
    p = run("plan", "serve", "--preset", "llama3-70b", "--chip", "v5e", "--slice", "16",
            "--weight-dtype", "int8", "--context", "8192", "--batch", "64")
    expect("TP lim" in p.stdout and " 49" in p.stdout, "TP limit column: %s" % p.stdout)
    # MoE: compute-bound above B_crit E/k (mixtral E=8, k=2: 240.24 x 4)
    d = jrun("plan", "serve", "--preset", "mixtral-8x7b", "--chip", "v5e", "--chips", "8",
             "--context", "4096", "--json")
    if d:
        close(d["contexts"][0]["moe_critical_batch"], 1.97e14 / 8.2e11 * 4, 1e-9,
              "MoE critical batch B_crit E/k")
    p = run("plan", "serve", "--preset", "mixtral-8x7b", "--chip", "v5e", "--chips", "8",
            "--context", "4096")
    expect("B_crit E/k = 961" in p.stdout, "MoE line in plan serve: %s" % p.stdout[:600])


def main():
    os.makedirs(TMP, exist_ok=True)
    for t in (test_help, test_train_pod, test_train_other, test_train_bad, test_serve,
              test_train_calibrated, test_train_calibration_file, test_train_pins,
              test_serve_calibrated,
              test_v4_across_pods, test_topology_warnings, test_serve_book):
        t()
    if FAILS:
        for f in FAILS:
            print("FAIL:", f)
        print("%d failure(s)" % len(FAILS))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
