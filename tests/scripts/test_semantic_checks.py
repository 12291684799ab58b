#!/usr/bin/env python3
"""Inputs that parse but mean nothing are refused with the place and the field (issue #18).

HLO that XLA's verifier refuses: dot dimension numbers naming a dimension the
operand lacks, a parameter number of 1e14, a repeated parameter number, a
layout naming a dimension the shape lacks (also inside a tuple); `import`,
`rank` and `roofline` each fail with FILE:LINE:COLUMN and the instruction, and
write nothing. A graph `check` refuses (a negative runtime) is not ranked either. Transformer configs with a stated zero that is not "absent":
num_key_value_heads 0, num_local_experts 0 with 2 experts per token.

Environment (tests/CMakeLists.txt): PERFCAST, PC_TEST_TMP.
"""
import json
import os
import shutil
import sys

from clitest import expect, report, run

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_semantic")

OK = """HloModule ok
ENTRY e {
  a = f32[8,16]{1,0} parameter(0)
  b = f32[16,4]{1,0} parameter(1)
  ROOT d = f32[8,4]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
BAD = {
    "dot_dims": (OK.replace("lhs_contracting_dims={1}", "lhs_contracting_dims={5}"),
                 5, "lhs_contracting_dims names a dimension"),
    "param_huge": (OK.replace("parameter(1)", "parameter(100000000000000)"),
                   4, "parameter(100000000000000) is out of range"),
    "param_twice": (OK.replace("parameter(1)", "parameter(0)"), 4, "appears twice"),
    "layout": (OK.replace("f32[8,16]{1,0}", "f32[8,16]{2,0}"), 3,
               "layout names a dimension its shape does not have"),
    "layout_rank": (OK.replace("f32[16,4]{1,0}", "f32[16,4]{0}"), 4,
                    "different number of dimensions"),
}


def check_hlo():
    for name, (text, line, needle) in BAD.items():
        path = os.path.join(TMP, name + ".hlo")
        open(path, "w").write(text)
        out = os.path.join(TMP, name + "_out")
        for args in (["import", path, "--out", out], ["roofline", "--chip", "tpu-v5e", "--hlo", path],
                     ["rank", "--model", os.path.join(TMP, "none.st"), path]):
            p = run(*args)
            where = "%s:%d:" % (path, line)
            ok = p.returncode == 1 and where in p.stderr and needle in p.stderr
            if args[0] == "rank":  # the model is checked after the program or before it
                ok = p.returncode == 1 and (ok or "none.st" in p.stderr)
            expect(ok, "%s %s: exit %d, %r (want %s ... %s)"
                   % (args[0], name, p.returncode, p.stderr, where, needle))
        expect(not os.path.exists(out) or not os.listdir(out), "%s: import wrote files" % name)
    path = os.path.join(TMP, "ok.hlo")
    open(path, "w").write(OK)
    p = run("roofline", "--chip", "tpu-v5e", "--hlo", path)
    expect(p.returncode == 0, "the valid module: exit %d %s" % (p.returncode, p.stderr))


def check_configs():
    base = {"model_type": "mixtral", "hidden_size": 1024, "num_hidden_layers": 4,
            "num_attention_heads": 8, "num_key_value_heads": 8, "intermediate_size": 2048,
            "vocab_size": 1000, "num_local_experts": 4, "num_experts_per_tok": 2}
    for name, edit, needle in (
            ("kv0", {"num_key_value_heads": 0}, '"num_key_value_heads" is 0'),
            ("experts0", {"num_local_experts": 0}, '"num_local_experts" is 0 but')):
        cfg = dict(base, **edit)
        path = os.path.join(TMP, name + ".json")
        json.dump(cfg, open(path, "w"))
        p = run("model", "--config", path)
        expect(p.returncode == 1 and needle in p.stderr and path in p.stderr,
               "model %s: exit %d, %r" % (name, p.returncode, p.stderr))
    path = os.path.join(TMP, "good.json")
    json.dump(base, open(path, "w"))
    p = run("model", "--config", path)
    expect(p.returncode == 0, "the valid config: exit %d %s" % (p.returncode, p.stderr))


def check_rank_agrees_with_check():
    """A graph `check` refuses (a negative runtime) is not ranked either."""
    import glob
    import numpy as np
    data = os.path.join(TMP, "d")
    run("synth", "--out", data, "--scale", "tiny", "--collections", "tile:xla")
    model = os.path.join(TMP, "m.st")
    run("train", "--data", data, "--collection", "tile:xla", "--out", model, "--epochs", "1",
        "--hidden", "8", "--progress", "never")
    f = sorted(glob.glob(os.path.join(data, "npz", "tile", "xla", "valid", "*.npz")))[0]
    z = {k: v.copy() for k, v in np.load(f).items()}
    z["config_runtime"][0] = -5
    bad = os.path.join(TMP, "neg.npz")
    np.savez(bad, **z)
    p = run("check", bad)
    expect(p.returncode == 1, "check of a negative runtime: exit %d" % p.returncode)
    p = run("rank", "--model", model, bad)
    expect(p.returncode == 1 and "config_runtime[0] = -5" in p.stderr,
           "rank of what check refuses: exit %d, %r" % (p.returncode, p.stderr))
    p = run("rank", "--model", model, f)
    expect(p.returncode == 0, "rank of the valid file: exit %d %s" % (p.returncode, p.stderr))


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    check_hlo()
    check_configs()
    check_rank_agrees_with_check()
    code = report("semantic checks: ok")
    if code == 0:
        shutil.rmtree(TMP, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
