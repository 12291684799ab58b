#!/usr/bin/env python3
"""`perfcast import FILE.hlo` (graph-only files) and `perfcast rank MODEL FILE.hlo`.

- every HLO text fixture in ../shared/fixtures/hlo imports to one graph-only
  layout .npz: graph arrays, node_config_ids = every convolution/dot/reshape,
  zero configs; `info` reads it, `check` reports "graph has no configs";
- several "// -----" modules give indexed files with the same arrays as the
  single-module imports; unknown opcodes warn with a count and the first one;
- rank with tiny models trained on synthetic data: layout candidates on a real
  program (config 0 = all defaults, deterministic for a seed), the printed
  configs fed back with --configs score the same, tile candidates per kernel;
- bad input: malformed HLO (FILE:LINE:COLUMN), a bad candidates file (line
  number), no configurable nodes, unknown --kernel, --kernel with a layout
  model, --configs on an .npz, a graph-only .npz.
(The text and protobuf readers agree array for array on the real layout
fixture: tests/unit/test_hlo_rank.c prints it as text and compares.)

Environment: PERFCAST, PC_TEST_TMP, PC_SHARED_DIR. Exit 77 without the shared
fixtures or numpy.
"""
import glob
import json
import os
import shutil
import sys

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy missing")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clitest import FAILS, expect, expect_rc, run, tiny_models  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_rank_hlo")
HLO = os.path.join(os.environ.get("PC_SHARED_DIR", os.path.join(ROOT, "..", "shared")),
                   "fixtures", "hlo")
CONFIGURABLE = {26, 34, 75}  # convolution, dot, reshape


def load(path):
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def test_import_fixtures(files):
    out = os.path.join(TMP, "imp")
    for path in files:
        p = run("import", path, "--out", out)
        expect_rc(p, 0, "import " + path)
        stem = os.path.splitext(os.path.basename(path))[0]
        npz = os.path.join(out, stem + ".npz")
        if not os.path.exists(npz):
            FAILS.append("%s: no %s" % (path, npz))
            continue
        a = load(npz)
        n = a["node_feat"].shape[0]
        expect(set(a) == {"node_feat", "node_opcode", "edge_index", "node_splits",
                          "node_config_ids", "node_config_feat", "config_runtime"},
               "%s: keys %s" % (stem, sorted(a)))
        expect(a["node_feat"].shape == (n, 140) and a["node_opcode"].shape == (n,),
               "%s: shapes" % stem)
        expect(a["config_runtime"].shape == (0,), "%s: runtimes %s" % (stem, a["config_runtime"]))
        ids = a["node_config_ids"]
        want = np.flatnonzero(np.isin(a["node_opcode"], list(CONFIGURABLE)))
        expect(np.array_equal(ids, want), "%s: configurable %s, expected %s" % (stem, ids, want))
        expect(a["node_config_feat"].shape == (0, len(ids), 18), "%s: node_config_feat" % stem)
        expect(a["edge_index"].max() < n and a["node_splits"][0, -1] == n, "%s: graph" % stem)
        expect("HLO text, 1 module" in p.stdout, p.stdout)
        q = run("info", npz)
        expect_rc(q, 0, "info " + npz)
        expect("0 configs" in q.stdout, q.stdout[-300:])
        q = run("check", npz)
        expect(q.returncode == 1 and "graph has no configs" in q.stdout, q.stdout)
    return out


def test_multi_module(files, single_dir):
    a, b = files[0], files[1]
    body = open(a).read() + "\n// -----\n" + open(b).read()
    path = write("two.hlo", body)
    out = os.path.join(TMP, "two")
    p = run("import", path, "--out", out, "--kind", "tile")
    expect_rc(p, 0, "import of two modules")
    got = sorted(glob.glob(os.path.join(out, "two_*.npz")))
    expect(len(got) == 2 and os.path.basename(got[0]).startswith("two_000_")
           and os.path.basename(got[1]).startswith("two_001_"), "two outputs: %s" % got)
    for f, src in zip(got, (a, b)):
        x = load(f)
        y = load(os.path.join(single_dir, os.path.splitext(os.path.basename(src))[0] + ".npz"))
        expect("config_feat" in x and x["config_feat"].shape == (0, 24), "tile keys %s" % sorted(x))
        for k in ("node_feat", "node_opcode", "edge_index"):
            expect(np.array_equal(x[k], y[k]), "%s: %s differs from the single import" % (f, k))
    # unknown opcodes: one warning line with the count and the first one
    path = write("odd.hlo", "ENTRY e {\n  a = f32[4] parameter(0)\n  b = f32[4] frobnicate(a)\n"
                            "  ROOT c = f32[4] frobnicate(b)\n}\n")
    p = run("import", path, "--out", os.path.join(TMP, "odd"))
    expect_rc(p, 0, "import with unknown opcodes")
    expect("2 instructions with an opcode outside the TpuGraphs table (first: 'frobnicate')"
           in p.stderr, p.stderr)
    expect(load(os.path.join(TMP, "odd", "odd.npz"))["node_opcode"].tolist() == [63, 0, 0],
           "unknown opcodes are id 0")


def train_models():
    return tiny_models(os.path.join(TMP, "data"), TMP, 1, "layout:xla:random")


def rank_json(*args):
    p = run("rank", *args, "--json", "--threads", "2")
    expect_rc(p, 0, "rank " + " ".join(args))
    return json.loads(p.stdout) if p.returncode == 0 else None


def test_rank_layout(model):
    prog = os.path.join(HLO, "ssd_mobilenet_tf.hlo")
    r = rank_json("--model", model, prog, "--candidates", "12", "--top", "100", "--seed", "5")
    if not r:
        return
    g = r["graphs"][0]
    expect(r["collection"] == "layout:xla:random" and len(r["graphs"]) == 1, str(r)[:300])
    expect(g["configs"] == 12 and len(g["top"]) == 12, "12 candidates: %s" % str(g)[:300])
    expect(g["configurable_nodes"] == 87, "87 configurable nodes: %s" % g["configurable_nodes"])
    scores = [t["score"] for t in g["top"]]
    expect(scores == sorted(scores), "best first: %s" % scores)
    by_cfg = {t["config"]: t for t in g["top"]}
    expect(by_cfg[0]["spelled"] == "default" and by_cfg[0]["value"] == [], str(by_cfg[0]))
    spelled = [by_cfg[k]["spelled"] for k in range(12)]
    expect(len(set(spelled)) == 12, "distinct candidates")
    one = next(t for t in g["top"] if t["config"] != 0)
    first = one["value"][0]
    expect(first["opcode"] in ("convolution", "dot", "reshape") and first["name"] in one["spelled"],
           "spelled-out layout: %s" % one)
    again = rank_json("--model", model, prog, "--candidates", "12", "--top", "100", "--seed", "5")
    expect(again == r, "same seed, same ranking")
    other = rank_json("--model", model, prog, "--candidates", "12", "--top", "100", "--seed", "6")
    if other:
        expect({t["spelled"] for t in other["graphs"][0]["top"]} != set(spelled),
               "another seed, other candidates")
    # round trip: the printed configs as a candidates file score the same
    cfg = write("ssd.cfg", "# from a rank run\n" + "\n".join(reversed(spelled)) + "\n")
    back = rank_json("--model", model, prog, "--configs", cfg, "--top", "100")
    if back:
        bt = back["graphs"][0]["top"]
        expect(len(bt) == 12, "12 configs read back")
        for t in bt:
            k = 11 - t["config"]
            expect(t["spelled"] == spelled[k] and abs(t["score"] - by_cfg[k]["score"]) <= 1e-6 *
                   max(1.0, abs(t["score"])), "round trip of config %d: %s vs %s" %
                   (k, t, by_cfg[k]))
    p = run("rank", "--model", model, prog, "--candidates", "3", "--top", "2")
    expect_rc(p, 0, "text output")
    expect("3 candidates, 87 configurable nodes" in p.stdout and "   1  config" in p.stdout,
           p.stdout[:400])


def test_rank_tile(model):
    prog = os.path.join(HLO, "dot.hlo")
    r = rank_json("--model", model, prog, "--top", "100")
    if not r:
        return
    g = r["graphs"]
    expect(len(g) == 1 and g[0]["name"] == "fusion" and g[0]["kind"] == "kernel", str(g)[:300])
    # output 128x64: 8 x 7 tiles, config 0 = the whole output
    expect(g[0]["configs"] == 56, "56 tile candidates: %s" % g[0]["configs"])
    c0 = next(t for t in g[0]["top"] if t["config"] == 0)
    expect(c0["spelled"] == "output=128,64" and c0["value"]["output"] == [128, 64], str(c0))
    cfg = write("tiles.cfg", "output=8,8\n16,64   # bare list = output\noutput=8,8 kernel=2,2\n")
    r = rank_json("--model", model, prog, "--configs", cfg, "--kernel", "fusion")
    if r:
        spelled = sorted(t["spelled"] for t in r["graphs"][0]["top"])
        expect(spelled == ["output=16,64", "output=8,8", "output=8,8 kernel=2,2"], str(spelled))
        scores = {t["spelled"]: t["score"] for t in r["graphs"][0]["top"]}
        expect(scores["output=8,8"] != scores["output=8,8 kernel=2,2"],
               "kernel bounds reach config_feat")
    # a program with several fusions: one ranking per kernel
    r = rank_json("--model", model, os.path.join(HLO, "graphsage_tf.hlo"), "--candidates", "5")
    if r:
        expect(len(r["graphs"]) >= 1 and all(g["configs"] <= 5 for g in r["graphs"]),
               str(r)[:300])


def test_bad_inputs(models, single_dir):
    lay, tile = models["layout:xla:random"], models["tile:xla"]
    bad = write("bad.hlo", "ENTRY e {\n  a = f32[4] parameter(0)\n  ROOT b = f32[4 add(a, a)\n}\n")
    for cmd in (["import", bad, "--out", os.path.join(TMP, "badout")],
                ["rank", "--model", lay, bad]):
        p = run(*cmd)
        expect(p.returncode == 1 and "bad.hlo:3:" in p.stderr, "%s: %s" % (cmd[0], p.stderr))
    expect(not os.path.exists(os.path.join(TMP, "badout", "bad.npz")), "no file from bad input")
    prog = os.path.join(HLO, "dot.hlo")
    cfg = write("bad.cfg", "default\n\ndot=1,0/1,0/0,7\n")
    p = run("rank", "--model", lay, prog, "--configs", cfg)
    expect(p.returncode == 1 and "bad.cfg:3: node 'dot' kernel layout '0,7'" in p.stderr,
           p.stderr)
    p = run("rank", "--model", tile, prog, "--configs", write("bad2.cfg", "output=8,8 tile=4\n"))
    expect(p.returncode == 1 and "bad2.cfg:1: 'tile': unknown field" in p.stderr, p.stderr)
    p = run("rank", "--model", lay, os.path.join(HLO, "add.hlo"))
    expect(p.returncode == 1 and "no configurable nodes" in p.stderr, p.stderr)
    p = run("rank", "--model", tile, prog, "--kernel", "nope")
    expect(p.returncode == 1 and "no kernel named 'nope' (kernels: 'fusion')" in p.stderr,
           p.stderr)
    p = run("rank", "--model", lay, prog, "--kernel", "fusion")
    expect(p.returncode == 2 and "--kernel applies to tile models" in p.stderr, p.stderr)
    npz = os.path.join(single_dir, "dot.npz")
    p = run("rank", "--model", lay, npz, "--configs", cfg)
    expect(p.returncode == 2 and "apply to HLO programs" in p.stderr, p.stderr)
    p = run("rank", "--model", lay, npz)
    expect(p.returncode == 1 and "has no configs" in p.stderr, p.stderr)
    p = run("rank", "--model", lay, os.path.join(TMP, "missing.hlo"))
    expect(p.returncode == 1 and "missing.hlo" in p.stderr, p.stderr)


def main():
    files = sorted(glob.glob(os.path.join(HLO, "*.hlo")))
    if not files:
        print("SKIP: no HLO fixtures in %s" % HLO)
        return 77
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    single = test_import_fixtures(files)
    test_multi_module(files, single)
    models = train_models()
    if not FAILS:
        test_rank_layout(models["layout:xla:random"])
        test_rank_tile(models["tile:xla"])
        test_bad_inputs(models, single)
    for f in FAILS:
        print("FAIL:", f)
    print("%d failure(s)" % len(FAILS))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
