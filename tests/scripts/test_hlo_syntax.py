#!/usr/bin/env python3
"""HLO text the way XLA reads it (issue 16): `perfcast import` and
`perfcast roofline --hlo` on small modules written here, one syntax form each.

- Modules split only at a line that is exactly `// -----` and at a second
  `HloModule` line; `// ------------` banners are comments.
- UTF-8 BOM, `HloModule name:`, a blank before a layout (instruction and
  signature), buffer shapes `b(...)`, `literal=`, mesh and iota replica
  groups, `%t#0` operands, dim_labels with '?'.
- Omitted shapes XLA infers: the inferred shapes are checked through the
  roofline's FLOPs, which depend only on them (dot: 2*M*N*K, elementwise:
  the result's elements) and the result's element type; worked out by hand.
- Nested operand instructions (named <opcode>.anon) and inline to_apply={...}.
- Unbounded dims `?` are -1 in the dims feature columns (numpy, if present).
- MLIR, HloModuleProto text and binary input: exit 1, the format named, advice.
- XLA dump directories: *after_optimizations.txt, --stage before, an empty
  directory says what it holds; malformed text: FILE:LINE:COLUMN, no file.

Python stdlib (+ numpy for one check). Exit 0 pass, 1 fail.
"""
import json
import os
import shutil
import sys

from clitest import FAILS, expect, expect_rc, report, run, run_checks

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_hlo_syntax")
CHIP = "h100-sxm"


def write(name, text, mode="w"):
    path = os.path.join(TMP, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode) as f:
        f.write(text)
    return path


def imported(path, *extra):
    out = os.path.join(TMP, "out_" + os.path.basename(path.rstrip("/")).replace("*", "_"))
    shutil.rmtree(out, ignore_errors=True)
    p = run("import", path, "--out", out, *extra)
    return p, out, sorted(os.listdir(out)) if os.path.isdir(out) else []


def modules_of(p):
    for line in p.stdout.splitlines():
        if ": HLO text, " in line:
            return int(line.split(": HLO text, ")[1].split()[0])
    return -1


def ops(path):
    p = run("roofline", "--chip", CHIP, "--hlo", path, "--json")
    expect_rc(p, 0, "roofline " + path)
    if p.returncode:
        return {}
    return {o["name"]: o for o in json.loads(p.stdout)["ops"]}


ADD = "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n"


def check_split():
    banner = "HloModule a\n// ----------------------------------\n// a banner\n" + ADD + \
        "ENTRY e {\n  p = f32[8] parameter(0)\n  ROOT n = f32[8] negate(p)\n}\n"
    p, _, files = imported(write("banner.hlo", banner))
    expect_rc(p, 0, "banner")
    expect(modules_of(p) == 1 and len(files) == 1, "a banner comment splits the module: %s" % p.stdout)
    two = "HloModule a\nENTRY e {\n  ROOT p = f32[8] parameter(0)\n}\n// -----\n" \
          "ENTRY f {\n  ROOT p = f32[8] parameter(0)\n}\n\n  // -----  \nHloModule c\n" \
          "ENTRY g {\n  ROOT p = f32[2] parameter(0)\n}\nHloModule d\nENTRY h {\n  ROOT p = f32[2] parameter(0)\n}\n"
    p, _, files = imported(write("split.hlo", two))
    expect_rc(p, 0, "split")
    expect(modules_of(p) == 4 and len(files) == 4, "'// -----' and HloModule split into 4: %s %s" % (p.stdout, files))
    expect(any(f.endswith("_c.npz") for f in files) and any(f.endswith("_d.npz") for f in files),
           "module names from the HloModule lines: %s" % files)


def check_small_forms():
    text = "\ufeffHloModule m:, entry_computation_layout={(f32[4]{0})->f32[4]{0}}\n\n" + ADD + \
        "ENTRY e (a: f32[4]) -> f32[4] {\n" \
        "  a = f32[4] {0} parameter(0)\n" \
        "  t = (f32[4], s32[]) tuple(a, s32[] constant(1))\n" \
        "  c = b(f32[4]) custom-call(a), custom_call_target=\"x\", literal=s32[] 1\n" \
        "  g = f32[4]{0} get-tuple-element(%t#0), index=0\n" \
        "  r = f32[4]{0} all-reduce(g), channel_id=1, replica_groups=mesh['x'=2,'y'=4] {'y'}, " \
        "use_global_device_ids=true, to_apply=add\n" \
        "  r2 = f32[4]{0} all-reduce(r), replica_groups=[2,4]<=[8], to_apply=add\n" \
        "  k = f32[1,4,4,1] parameter(1)\n" \
        "  w = f32[1,1,1,1] parameter(2)\n" \
        "  v = f32[1,4,4,1] convolution(k, w), window={size=1x1}, dim_labels=b01f_01io->b01f\n" \
        "  ROOT o = f32[4] add(r2, c)\n" \
        "}\n"
    path = write("forms.hlo", text.encode("utf-8"), "wb")
    p, _, files = imported(path)
    expect_rc(p, 0, "BOM, HloModule m:, layout blank, b(), literal=, mesh, iota, #0")
    d = ops(path)
    expect(d.get("o", {}).get("flops") == 4, "add of f32[4]: 4 FLOPs, got %s" % d.get("o"))


INFER = "HloModule inf\n" + ADD + """ENTRY e {
  p = (f32[4,8], s32[]) parameter(0)
  g = get-tuple-element(p), index=0
  t = f32[8,16]{1,0} parameter(1)
  d = dot(g, t), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  tr = transpose(d), dimensions={1,0}
  cc = concatenate(tr, tr), dimensions={0}
  e = exponential(cc)
  m = multiply(e, e)
  z = f32[] constant(0)
  r = reduce(m, z), dimensions={1}, to_apply=add
  cmp = compare(r, r), direction=LT
  sel = select(cmp, r, r)
  tu = tuple(sel, d)
  g2 = get-tuple-element(tu), index=1
  ROOT out = add(g2, g2)
}
"""


def check_inference():
    path = write("infer.hlo", INFER)
    d = ops(path)
    if not d:
        return
    # d = f32[4,16]: 2*4*16*8 FLOPs; tr = f32[16,4]; cc = f32[32,4]; r = f32[32]
    expect(d.get("d", {}).get("flops") == 2 * 4 * 16 * 8, "inferred dot: %s" % d.get("d"))
    expect(d.get("m", {}).get("flops") == 32 * 4, "multiply of the inferred concatenate: %s" % d.get("m"))
    expect(d.get("out", {}).get("flops") == 4 * 16, "add of get-tuple-element(tuple) = dot: %s" % d.get("out"))
    expect(d.get("cmp", {}).get("element_type") == "pred", "compare infers pred: %s" % d.get("cmp"))
    expect(d.get("sel", {}).get("flops") == 32, "select of f32[32]: %s" % d.get("sel"))
    bad = write("noinfer.hlo", "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT c = convert(p)\n}\n")
    p, out, files = imported(bad)
    expect_rc(p, 1, "convert without a shape")
    expect("noinfer.hlo:4:12: expected a shape" in p.stderr and not files, "convert message: %s" % p.stderr)


CALLS = """HloModule calls
pair {
  a = f32[4,8] parameter(0)
  ROOT t = (f32[4,8], s32[]) tuple(a, s32[] constant(1))
}
neg {
  x = f32[6] parameter(0)
  ROOT n = f32[6] negate(x)
}
ident {
  x = f32[6] parameter(0)
  ROOT c = f32[6] copy(x)
}
ENTRY e (p: f32[4,8], q: f32[6]) -> f32[6]{
  p = f32 [4,8] parameter(0)
  q = f32[6]{0} parameter(1)
  c = call(p), to_apply=pair
  g = get-tuple-element(c), index=0
  m = multiply(g, g)
  i = call(q), to_apply={
    y = f32[6] parameter(0)
    ROOT z = f32[6] exponential(y)
  }
  b = pred[] constant(true)
  k = conditional(b, i, q), true_computation=neg, false_computation=ident
  l = f32[1] custom-call(q), custom_call_target="x", literal=( s32[2]{0} {4, 3}, pred[] 1 )
  ROOT o = add(k, k)
}
"""


def check_calls_and_forms():
    """call / conditional shapes from the called computation's root (a tuple through
    get-tuple-element); `f32 [4,8]`; `-> f32[6]{` then an instruction; a tuple literal
    as XLA prints it; HloModuleProto text after `#` lit lines is named as such."""
    path = write("calls.hlo", CALLS)
    p, _, files = imported(path)
    expect_rc(p, 0, "call / conditional inference")
    d = ops(path)
    expect(d.get("m", {}).get("flops") == 32, "multiply of get-tuple-element(call) = f32[4,8]: %s" % d.get("m"))
    expect(d.get("o", {}).get("flops") == 6, "add of conditional = f32[6]: %s" % d.get("o"))
    late = write("late.hlo", "HloModule l\nENTRY e {\n  q = f32[6] parameter(0)\n  ROOT c = call(q), to_apply=f\n}\n"
                 "f {\n  ROOT x = f32[6] parameter(0)\n}\n")
    p, _, files = imported(late)
    expect_rc(p, 1, "call of a computation defined later, shape omitted")
    expect("late.hlo:4:8: expected a shape before 'call'" in p.stderr and "defined before" in p.stderr
           and not files, "late callee: %s" % p.stderr)
    lit = write("lit_proto.hlo", '# RUN: hlo-translate %s | FileCheck %s\n# CHECK: x\n\nhlo_module {\n  name: "m"\n}\n')
    p, _, files = imported(lit)
    expect_rc(p, 1, "proto text after # lines")
    expect("lit_proto.hlo:4:1: expected HLO text, found an HloModuleProto" in p.stderr and not files,
           "proto after # lines: %s" % p.stderr)


def check_nested_inline():
    text = "HloModule n\nENTRY e {\n  a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n" \
           "  s = f32[4] add(f32[4] multiply(f32[4] a, f32[4] b), negate(a))\n" \
           "  z = f32[] constant(0)\n" \
           "  ROOT r = f32[] reduce(s, z), dimensions={0}, to_apply={\n" \
           "    x = f32[] parameter(0)\n    y = f32[] parameter(1)\n    ROOT m = f32[] maximum(x, y)\n  }\n}\n"
    path = write("nested.hlo", text)
    p, _, files = imported(path)
    expect_rc(p, 0, "nested + inline")
    d = ops(path)
    expect(d.get("multiply.anon", {}).get("flops") == 4, "nested multiply.anon: %s" % sorted(d))
    expect(d.get("negate.anon", {}).get("flops") == 4, "nested negate.anon: %s" % sorted(d))


def check_unbounded():
    try:
        import numpy as np
    except ImportError:
        return
    path = write("unb.hlo", "HloModule u\nENTRY e {\n  ROOT p = f32[?,4,<=8] parameter(0)\n}\n")
    p, out, files = imported(path)
    expect_rc(p, 0, "unbounded dims")
    if files:
        with np.load(os.path.join(out, files[0])) as z:
            f = z["node_feat"][0]
        # dims columns 21..26, then sum and product (tpugraphs.md 6.3)
        expect(list(f[21:24]) == [-1, 4, 8] and f[27] == 11 and f[28] == -32,
               "'?' is -1, '<=8' is 8 in the features: %s" % list(f[21:29]))


def check_formats():
    cases = {
        "jax.mlir.txt": ("module @jit_f attributes {mhlo.num_partitions = 1 : i32} {\n"
                         "  func.func public @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {\n"
                         "    %0 = stablehlo.add %arg0, %arg0 : tensor<2xf32>\n"
                         "    return %0 : tensor<2xf32>\n  }\n}\n", "StableHLO/MHLO MLIR"),
        "lit.hlo": ("// RUN: xla-translate %s\n\nfunc.func @main(%arg0: tensor<f32>) -> tensor<f32> {\n"
                    "  return %arg0 : tensor<f32>\n}\n", "StableHLO/MHLO MLIR"),
        "proto.txt": ('hlo_module {\n  name: "jit_f"\n  entry_computation_name: "main"\n}\n',
                      "HloModuleProto in protobuf text format"),
        "proto2.txt": ('name: "jit_f"\nentry_computation_name: "main"\ncomputations {\n}\n',
                       "HloModuleProto in protobuf text format"),
    }
    for name, (text, what) in cases.items():
        p, _, files = imported(write(name, text))
        expect_rc(p, 1, name)
        expect(what in p.stderr and "as_text()" in p.stderr and "--xla_dump_to" in p.stderr and not files,
               "%s: %s" % (name, p.stderr))
    p, _, files = imported(write("bin.hlo", b"\x0a\x05jit_f\x12\x00\x1a\x03abc", "wb"))
    expect_rc(p, 1, "binary")
    expect("binary data" in p.stderr and not files, "binary: %s" % p.stderr)
    p = run("roofline", "--chip", CHIP, "--hlo", os.path.join(TMP, "jax.mlir.txt"))
    expect_rc(p, 1, "roofline on MLIR")
    expect("StableHLO/MHLO MLIR" in p.stderr, "roofline on MLIR: %s" % p.stderr)


def check_dump_dir():
    dump = os.path.join(TMP, "dump")
    shutil.rmtree(dump, ignore_errors=True)
    one = "HloModule %s\nENTRY e {\n  p = f32[8] parameter(0)\n  ROOT n = f32[8] negate(p)\n}\n"
    write("dump/module_0001.jit_f.cpu_before_optimizations.txt", one % "f_before")
    write("dump/module_0001.jit_f.cpu_after_optimizations.txt", one % "f_after")
    write("dump/module_0002.jit_g.sm_8.0_gpu_after_optimizations.txt", one % "g_after")
    write("dump/module_0001.jit_f.cpu_after_optimizations-buffer-assignment.txt", "not HLO\n")
    write("dump/module_0001.jit_f.ir-no-opt.ll", "; llvm\n")
    p, _, files = imported(dump)
    expect_rc(p, 0, "dump dir")
    expect(modules_of(p) == 2 and files == ["dump_000_f_after.npz", "dump_001_g_after.npz"],
           "dump dir: after_optimizations modules: %s %s" % (p.stdout, files))
    p, _, files = imported(dump, "--stage", "before")
    expect_rc(p, 0, "dump dir --stage before")
    expect(files == ["dump_000_f_before.npz"], "--stage before: %s" % files)
    d = ops(dump)
    expect(set(d) == {"n"} or len(d) == 2, "roofline --hlo DIR: %s" % d)
    p = run("roofline", "--chip", CHIP, "--hlo", dump, "--stage", "before", "--json")
    expect_rc(p, 0, "roofline --stage before")
    os.makedirs(os.path.join(TMP, "empty"), exist_ok=True)
    write("empty/notes.txt", "hello\n")
    p, _, files = imported(os.path.join(TMP, "empty"))
    expect_rc(p, 1, "empty dir")
    expect("no HLO text file matching" in p.stderr and "out of memory" not in p.stderr and not files,
           "empty dir: %s" % p.stderr)
    p = run("import", os.path.join(TMP, "forms.hlo"), "--stage", "before", "--out", os.path.join(TMP, "x"))
    expect_rc(p, 2, "--stage with a file")


def check_malformed():
    path = write("bad.hlo", "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2 negate(p)\n}\n")
    p, _, files = imported(path)
    expect_rc(p, 1, "malformed")
    expect("bad.hlo:4:18: expected" in p.stderr and not files, "malformed: %s" % p.stderr)


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    run_checks([check_split, check_small_forms, check_inference, check_calls_and_forms, check_nested_inline,
                check_unbounded, check_formats, check_dump_dir, check_malformed])
    return report("test_hlo_syntax: all checks passed")


if __name__ == "__main__":
    sys.exit(main())
