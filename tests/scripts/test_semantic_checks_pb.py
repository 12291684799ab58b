#!/usr/bin/env python3
"""The binary .pb HLO reader runs the text reader's verifier rules (issue #18).

Hand-encoded HloModuleProto / ModuleTuningData files (hloproto.py) that parse
but that XLA's verifier refuses: dot dimension numbers naming a dimension the
operand lacks, lhs and rhs with different numbers of contracting dims,
convolution dimension numbers out of range or repeated (two roles on one
dimension, a spatial dimension twice) or not covering the operand's rank, an
operand naming an instruction of another computation, a parameter number of 1e14, a
repeated parameter number, a layout naming a dimension the shape lacks, a
layout of the wrong rank, an operand id that names no instruction. `import`,
`rank` and `roofline` each fail naming the file, the computation and the
instruction (name and id) and the rule, and write nothing. The valid module
the bad ones are edited from is accepted, and the shared fixtures
(../shared/fixtures/tpugraphs_raw/*.pb) still import.

The convolution rule holds for HLO text too (one verifier, src/hlo/verify.c).

--write-corpus DIR writes the bad modules there (how fuzz/corpus/hlo_proto/
bad_sem_*.pb and fuzz/corpus/hlo_text/bad_sem_conv_dims.hlo were made).

Environment (tests/CMakeLists.txt): PERFCAST, PC_TEST_TMP, PC_SHARED_DIR.
"""
import os
import shutil
import sys

from clitest import expect, expect_rc, report, run

try:
    from hloproto import comp, inst, module, module_tuning, layout_run, msg
except ImportError:  # hloproto needs numpy
    print("numpy missing: skipped")
    sys.exit(77)

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_semantic_pb")
F32 = 11


def dot_module(lhs_contracting=(1,), rhs_contracting=(0,), p1=1, layout_a=(1, 0),
               layout_b=(1, 0), operand_b=2):
    dd = msg((1, list(lhs_contracting)), (2, list(rhs_contracting)))
    insts = [inst("a", "parameter", 1, F32, (8, 16), layout=layout_a, extra=((9, 0),)),
             inst("b", "parameter", 2, F32, (16, 4), layout=layout_b, extra=((9, p1),)),
             inst("d", "dot", 3, F32, (8, 4), operands=(1, operand_b), layout=(1, 0),
                  extra=((30, dd),))]
    return module("m", [comp("e", 7, 3, insts)], 7)


def conv_module(input_feature=3, input_spatial=(1, 2), kernel_dims=(3, 3, 3, 4)):
    cd = msg((7, 0), (8, input_feature), (11, list(input_spatial)), (3, 2), (4, 3), (6, [0, 1]),
             (9, 0), (10, 3), (12, [1, 2]))
    insts = [inst("x", "parameter", 1, F32, (8, 16, 16, 3), extra=((9, 0),)),
             inst("w", "parameter", 2, F32, kernel_dims, extra=((9, 1),)),
             inst("conv", "convolution", 3, F32, (8, 16, 16, 4), operands=(1, 2),
                  extra=((16, cd),))]
    return module("c", [comp("e", 7, 3, insts)], 7)


def foreign_module():
    """The entry's dot names an instruction of the reducer computation as its rhs."""
    red = comp("add", 5, 12, [inst("p", "parameter", 10, F32, (16, 4), extra=((9, 0),)),
                              inst("q", "parameter", 11, F32, (16, 4), extra=((9, 1),)),
                              inst("s", "add", 12, F32, (16, 4), operands=(10, 11))])
    dd = msg((1, [1]), (2, [0]))
    insts = [inst("a", "parameter", 1, F32, (8, 16), extra=((9, 0),)),
             inst("b", "parameter", 2, F32, (16, 4), extra=((9, 1),)),
             inst("d", "dot", 3, F32, (8, 4), operands=(1, 11), extra=((30, dd),))]
    return module("m", [red, comp("e", 7, 3, insts)], 7)


BAD = {
    "dot_dims": (dot_module(lhs_contracting=(5,)), "'d' (id 3)",
                 "lhs_contracting_dims names a dimension its operand of rank 2 does not have"),
    "dot_count": (dot_module(rhs_contracting=(0, 1)), "'d' (id 3)",
                  "lhs and rhs list different numbers of contracting"),
    "conv_dims": (conv_module(input_feature=7), "'conv' (id 3)",
                  "input_feature_dimension names a dimension its input of rank 4 does not have"),
    "param_huge": (dot_module(p1=100000000000000), "'b' (id 2)",
                   "parameter(100000000000000) is out of range: computation 'e' has 2 parameters"),
    "param_twice": (dot_module(p1=0), "'b' (id 2)", "parameter(0) appears twice in computation"),
    "layout": (dot_module(layout_a=(2, 0)), "'a' (id 1)",
               "its layout names a dimension its shape does not have"),
    "layout_rank": (dot_module(layout_b=(0,)), "'b' (id 2)",
                    "its layout lists a different number of dimensions"),
    "operand": (dot_module(operand_b=999), "'d' (id 3)",
                "names operand id 999, which is not an instruction of the module"),
    "operand_foreign": (foreign_module(), "'d' (id 3)",
                        "operand 1 names id 11, instruction 'q' of computation 'add' (expected an "
                        "instruction of the same computation)"),
    "conv_same_dim": (conv_module(input_feature=0), "'conv' (id 3)",
                      "input_batch_dimension and input_feature_dimension both name dimension 0 "
                      "of the input"),
    "conv_spatial_twice": (conv_module(input_spatial=(1, 1)), "'conv' (id 3)",
                           "input_spatial_dimensions names dimension 1 of the input twice"),
    "conv_rank": (conv_module(kernel_dims=(3, 3, 3, 4, 1)), "'conv' (id 3)",
                  "give the kernel 4 dimensions (kernel_input_feature_dimension, "
                  "kernel_output_feature_dimension and 2 spatial), but it has rank 5"),
}


def tuned(mod):
    """The module with one default layout run, as import wants."""
    return module_tuning(mod, [layout_run(5, [[]], default=True)], config_nodes=[2])


def write(name, data):
    path = os.path.join(TMP, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def check_bad():
    for name, (mod, where, needle) in BAD.items():
        for kind, data in (("bare", mod), ("tuned", tuned(mod))):
            path = write("%s_%s.pb" % (name, kind), data)
            out = os.path.join(TMP, name + "_out")
            for args in (["import", path, "--out", out],
                         ["roofline", "--chip", "tpu-v5e", "--hlo", path],
                         ["rank", "--model", os.path.join(TMP, "none.st"), path]):
                p = run(*args)
                ok = (p.returncode == 1 and path in p.stderr and where in p.stderr and
                      needle in p.stderr and "computation 'e'" in p.stderr)
                if args[0] == "rank":  # the model is checked after the program or before it
                    ok = p.returncode == 1 and (ok or "none.st" in p.stderr)
                expect(ok, "%s %s %s: exit %d, %r (want %s, %s, %s)"
                       % (args[0], name, kind, p.returncode, p.stderr, path, where, needle))
            expect(not os.path.exists(out), "%s: import wrote files" % name)


def check_good():
    for name, mod in (("ok_dot", dot_module()), ("ok_conv", conv_module())):
        path = write(name + ".pb", mod)
        p = run("roofline", "--chip", "tpu-v5e", "--hlo", path)
        expect_rc(p, 0, "roofline of the valid module " + name)
        path = write(name + "_tuned.pb", tuned(mod))
        out = os.path.join(TMP, name + "_out")
        p = run("import", path, "--out", out)
        expect_rc(p, 0, "import of the valid module " + name)


CONV_TEXT = """HloModule c
ENTRY e {
  x = f32[8,16,16]{2,1,0} parameter(0)
  w = f32[3,3,3,4]{3,2,1,0} parameter(1)
  ROOT conv = f32[8,16,16,4]{3,2,1,0} convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
}
"""


CONV_TEXT_BAD = {  # the roles of each operand a permutation of its dimensions, in text too
    "rank": (CONV_TEXT.replace("f32[8,16,16]{2,1,0}", "f32[8,16,16,3,1]{4,3,2,1,0}"),
             "give the input 4 dimensions (input_batch_dimension, input_feature_dimension and "
             "2 spatial), but it has rank 5"),
    "out_rank": (CONV_TEXT.replace("f32[8,16,16]{2,1,0}", "f32[8,16,16,3]{3,2,1,0}")
                 .replace("ROOT conv = f32[8,16,16,4]{3,2,1,0}", "ROOT conv = f32[8,16,16,4,1]"),
                 "give the output 4 dimensions"),
}


def check_text_conv():
    """The convolution rule is the text reader's too (one verifier for both)."""
    for name, (text, needle) in CONV_TEXT_BAD.items():
        path = write("conv_text_%s.hlo" % name, text.encode())
        out = os.path.join(TMP, "conv_text_%s_out" % name)
        for args in (["roofline", "--chip", "tpu-v5e", "--hlo", path],
                     ["import", path, "--out", out]):
            p = run(*args)
            expect(p.returncode == 1 and "%s:5:" % path in p.stderr and
                   "instruction 'conv'" in p.stderr and needle in p.stderr,
                   "%s text convolution %s: exit %d %r (want %s)"
                   % (args[0], name, p.returncode, p.stderr, needle))
        expect(not os.path.exists(out) or not os.listdir(out), "import wrote files: " + name)
    path = os.path.join(TMP, "conv_rank.hlo")
    open(path, "w").write(CONV_TEXT)
    p = run("roofline", "--chip", "tpu-v5e", "--hlo", path)
    expect(p.returncode == 1 and "%s:5:" % path in p.stderr and "instruction 'conv'" in p.stderr
           and "input_feature_dimension names a dimension its input of rank 3" in p.stderr,
           "text convolution of a rank-3 input: exit %d %r" % (p.returncode, p.stderr))
    p = run("roofline", "--chip", "tpu-v5e", "--hlo", write("ok_conv_text.hlo",
            CONV_TEXT.replace("f32[8,16,16]{2,1,0}", "f32[8,16,16,3]{3,2,1,0}").encode()))
    expect_rc(p, 0, "the text convolution with a rank-4 input")


def check_fixtures():
    raw = os.path.join(os.environ.get("PC_SHARED_DIR", ""), "fixtures", "tpugraphs_raw")
    if not os.path.isdir(raw):
        print("no shared fixtures: fixture import skipped")
        return
    files = sorted(f for f in os.listdir(raw) if f.endswith(".pb"))
    expect(files, "no .pb fixtures in " + raw)
    for f in files:
        out = os.path.join(TMP, "fx_" + f)
        p = run("import", os.path.join(raw, f), "--out", out)
        expect_rc(p, 0, "import of the fixture " + f)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--write-corpus":
        for name, (mod, _, _) in BAD.items():
            with open(os.path.join(sys.argv[2], "bad_sem_%s.pb" % name), "wb") as f:
                f.write(tuned(mod))
        with open(os.path.join(sys.argv[2], "bad_sem_conv_dims.hlo"), "w") as f:
            f.write(CONV_TEXT)
        for name, (text, _) in CONV_TEXT_BAD.items():
            with open(os.path.join(sys.argv[2], "bad_sem_conv_%s.hlo" % name), "w") as f:
                f.write(text)
        return 0
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    check_bad()
    check_good()
    check_text_conv()
    check_fixtures()
    return report("the .pb reader refuses what the text reader refuses, naming the instruction")


if __name__ == "__main__":
    sys.exit(main())
