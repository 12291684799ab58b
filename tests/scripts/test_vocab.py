"""One vocabulary across commands (docs/units.md): `8k` = 8000 and `8Ki` = 8192
in every command that takes a count (model, plan train, plan serve, roofline op
specs); `--config` for transformer configs (plan train/serve, model) with the
old `--model X` / positional CONFIG still working and a deprecation note on
stderr; `--weight-dtype` in roofline with `--wdtype` deprecated; `--top`
defaults to 10 (rank, roofline, plan train) and 0 lists every row.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clitest import FAILS, expect, expect_rc, report, run, run_checks  # noqa: E402

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_vocab")
os.makedirs(TMP, exist_ok=True)


def jrun(*args):
    p = run(*args)
    expect_rc(p, 0, " ".join(args))
    try:
        return json.loads(p.stdout), p
    except ValueError:
        FAILS.append("%s: not JSON: %s" % (" ".join(args), p.stdout[:300]))
        return None, p


def test_counts_everywhere():
    for seq, want in (("8k", 8000), ("8Ki", 8192), ("8K", 8000), ("8192", 8192)):
        d, _ = jrun("model", "--preset", "gpt2", "--seq", seq, "--json")
        if d:
            got = d["flops_per_token"]["seq"]
            expect(got == want, "model --seq %s: %s, want %d" % (seq, got, want))
        d, _ = jrun("plan", "train", "--preset", "gpt2", "--chip", "v5e", "--chips", "8",
                    "--batch-tokens", "64x" + seq, "--seq", seq, "--json")
        if d:
            expect(d.get("seq") == want, "plan train --seq %s: %s" % (seq, d.get("seq")))
            expect(d.get("batch_tokens") == 64 * want, "plan train --batch-tokens 64x%s" % seq)
        d, _ = jrun("plan", "serve", "--preset", "gpt2", "--chip", "v5e", "--chips", "1",
                    "--context", seq, "--json")
        if d:
            ctx = [c.get("context") for c in d.get("contexts", [])]
            expect(ctx == [want], "plan serve --context %s: %s" % (seq, ctx))
    for bt, want in (("4M", 4e6), ("4Mi", 4194304)):
        d, _ = jrun("plan", "train", "--preset", "gpt2", "--chip", "v5e", "--chips", "8",
                    "--batch-tokens", bt, "--json")
        if d:
            expect(d.get("batch_tokens") == want, "plan train --batch-tokens %s: %s" %
                   (bt, d.get("batch_tokens")))
        d, _ = jrun("model", "--preset", "gpt2", "--batch-tokens", bt, "--json")
        if d:
            got = d["train_memory"]["tokens"]
            expect(got == want, "model --batch-tokens %s: %s" % (bt, got))
    # an op spec: m=8k is 8000 rows, m=8Ki 8192
    a, _ = jrun("roofline", "--chip", "v5e", "--op", "matmul m=8k k=1Ki n=1Ki", "--json")
    b, _ = jrun("roofline", "--chip", "v5e", "--op", "matmul m=8000 k=1024 n=1024", "--json")
    if a and b:
        expect(a["ops"][0]["flops"] == b["ops"][0]["flops"] == 2 * 8000 * 1024 * 1024,
               "op spec m=8k k=1Ki n=1Ki")
    d, _ = jrun("collective", "--chip", "v5p", "--op", "allgather", "--bytes", "1GiB", "--mesh",
                "4x4", "--axes", "0", "--json")
    if d:
        expect(d.get("bytes") == 2 ** 30, "collective --bytes 1GiB: %s" % d.get("bytes"))
    for bad in ("8q", "-8k", "0x10", "inf", "8 k"):
        p = run("model", "--preset", "gpt2", "--seq", bad)
        expect_rc(p, 2, "model --seq %s" % bad)
        p = run("plan", "train", "--preset", "gpt2", "--chip", "v5e", "--chips", "8",
                "--batch-tokens", "1Mi", "--seq", bad)
        expect_rc(p, 2, "plan train --seq %s" % bad)


def test_config_flag():
    new, pn = jrun("plan", "train", "--config", "gpt2", "--chip", "v5e", "--chips", "8",
                   "--batch-tokens", "1Mi", "--json")
    old, po = jrun("plan", "train", "--model", "gpt2", "--chip", "v5e", "--chips", "8",
                   "--batch-tokens", "1Mi", "--json")
    expect("deprecated" not in pn.stderr, "--config: no note")
    expect("--model CONFIG is deprecated, use --config CONFIG" in po.stderr,
           "plan train --model: deprecation note: " + po.stderr)
    if new and old:
        expect(new["params"] == old["params"], "plan train --config = --model")
    s, ps = jrun("plan", "serve", "--model", "gpt2", "--chip", "v5e", "--chips", "1",
                 "--context", "1Ki", "--json")
    expect("deprecated" in ps.stderr, "plan serve --model: deprecation note")
    a, pa = jrun("model", "--config", "gpt2", "--json")
    b, _ = jrun("model", "--preset", "gpt2", "--json")
    if a and b:
        expect(a["params"] == b["params"], "model --config PRESET = --preset")
    cfg = os.path.join(TMP, "config.json")
    with open(cfg, "w") as f:
        json.dump({"model_type": "llama", "hidden_size": 256, "intermediate_size": 688,
                   "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                   "vocab_size": 1000}, f)
    a, pa = jrun("model", "--config", cfg, "--json")
    b, pb = jrun("model", cfg, "--json")
    expect("deprecated" not in pa.stderr, "model --config: no note")
    expect("positional CONFIG is deprecated" in pb.stderr, "model CONFIG: note: " + pb.stderr)
    if a and b:
        expect(a["params"] == b["params"], "model --config FILE = positional FILE")
    p = run("model", "--config", cfg, "--preset", "gpt2")
    expect_rc(p, 2, "model --config and --preset")


def test_weight_dtype_and_top():
    a, pa = jrun("roofline", "--chip", "v5e", "--matmul", "128,4096,4096", "--weight-dtype",
                 "int8", "--json")
    b, pb = jrun("roofline", "--chip", "v5e", "--matmul", "128,4096,4096", "--wdtype", "int8",
                 "--json")
    expect("--wdtype is deprecated, use --weight-dtype" in pb.stderr, "--wdtype note")
    if a and b:
        expect(a["ops"] == b["ops"], "--weight-dtype = --wdtype")
    args = ["roofline", "--chip", "v5e", "--json"]
    for i in range(12):
        args += ["--matmul", "%d,1024,1024" % (128 * (i + 1))]
    d, _ = jrun(*args)
    if d:
        expect(len(d["ops"]) == 10 and d["others"]["ops"] == 2, "roofline --top default 10")
    d, _ = jrun(*args, "--top", "0")
    if d:
        expect(len(d["ops"]) == 12 and d["others"] is None, "roofline --top 0: every op")
    d, _ = jrun("plan", "train", "--config", "llama3-8b", "--chip", "v5e", "--chips", "256",
                "--batch-tokens", "4Mi", "--json")
    if d:
        expect(len(d["plans"]) == 10, "plan train --top default 10: %d" % len(d["plans"]))


if __name__ == "__main__":
    run_checks([test_counts_everywhere, test_config_flag, test_weight_dtype_and_top])
    sys.exit(report("vocabulary: ok"))
