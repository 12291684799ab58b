"""The Python package (python/perfcast, ctypes over libperfcast.so) against the
CLI's JSON and numpy on tiny synthetic data: `pip install ./python` offline
(Debian's python3 -m pip, --no-build-isolation --no-index) into a folder, then
load_graph == numpy.load, rank == `perfcast rank --json` (tile and layout),
parse_count/parse_bytes == the unit table, perfcast.Error with the library's
message for a missing file and a non-checkpoint.

Needs the shared library (PERFCAST_LIB = libperfcast.so of a
-DBUILD_SHARED_LIBS=ON build): skipped (77) in a static build.
"""
import glob
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clitest import FAILS, expect, expect_rc, report, run, run_checks  # noqa: E402

import numpy as np  # noqa: E402

LIB = os.environ.get("PERFCAST_LIB", "")
SRC = os.environ.get("PC_SOURCE_DIR",
                     os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_python")

if not LIB.endswith(".so") and ".so." not in LIB:
    print("skipped: libperfcast is static in this build (PERFCAST_LIB=%r)" % LIB)
    sys.exit(77)

shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)
SITE = os.path.join(TMP, "site")


def install():
    """pip install ./python offline into SITE; without pip, the source folder."""
    p = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True)
    if p.returncode != 0:
        print("note: no pip for %s: importing python/ directly" % sys.executable)
        return os.path.join(SRC, "python")
    build = os.path.join(TMP, "src")
    shutil.copytree(os.path.join(SRC, "python"), build)  # setuptools writes build/ there
    p = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation",
                        "--no-index", "--no-deps", "--target", SITE, build],
                       capture_output=True, text=True)
    expect(p.returncode == 0, "pip install ./python: %s\n%s" % (p.stdout[-2000:],
                                                                p.stderr[-2000:]))
    return SITE


sys.path.insert(0, install())
import perfcast  # noqa: E402

expect(os.path.dirname(perfcast.__file__).startswith(SITE) or not os.path.isdir(SITE),
       "imported the installed package: %s" % perfcast.__file__)

DATA = os.path.join(TMP, "data")
expect_rc(run("synth", "--out", DATA, "--scale", "tiny", "--seed", "3", "--threads", "2"), 0,
          "synth")
MODELS = {}
for coll, extra in (("tile:xla", []), ("layout:xla:random", ["--configs", "8"])):
    out = os.path.join(TMP, coll.split(":")[0] + ".safetensors")
    p = run("train", "--data", DATA, "--collection", coll, "--out", out, "--threads", "2",
            "--epochs", "1", "--hidden", "16", "--layers", "1", *extra)
    expect_rc(p, 0, "train " + coll)
    MODELS[coll] = out
if FAILS:
    sys.exit(report(""))


def files(coll, split="valid"):
    return sorted(glob.glob(os.path.join(DATA, "npz", coll.replace(":", "/"), split, "*.npz")))


def test_version_units():
    p = run("--version")
    expect(p.stdout.strip() == "perfcast " + perfcast.version(), "version: " + p.stdout)
    for s, want in (("8k", 8000), ("8Ki", 8192), ("4M", 4e6), ("4Mi", 4194304), ("300B", 3e11),
                    ("1.5e13", 1.5e13)):
        expect(perfcast.parse_count(s) == want, "parse_count(%s)" % s)
    expect(perfcast.parse_bytes("1GiB") == 2 ** 30 and perfcast.parse_bytes("512MB") == 512e6,
           "parse_bytes")
    try:
        perfcast.parse_count("8q")
        FAILS.append("parse_count('8q') did not raise")
    except perfcast.Error as e:
        expect("'8q'" in e.message and e.status == "arg", "Error carries the message: %s" % e)


def test_load_graph():
    for coll in ("tile:xla", "layout:xla:random"):
        path = files(coll)[0]
        g = perfcast.load_graph(path)
        ref = np.load(path)
        expect(sorted(g) == sorted(ref.files), "%s: keys %s vs %s" % (path, sorted(g),
                                                                      sorted(ref.files)))
        for k in ref.files:
            a, b = g[k], ref[k]
            expect(a.shape == b.shape and np.array_equal(a, b.astype(a.dtype)),
                   "%s[%s]: %s %s vs numpy %s %s" % (path, k, a.dtype, a.shape, b.dtype, b.shape))
            expect(a.dtype == b.dtype or (b.dtype == np.float16 and a.dtype == np.float32),
                   "%s[%s] dtype %s vs %s" % (path, k, a.dtype, b.dtype))
    for bad, needle in ((os.path.join(TMP, "missing.npz"), "missing.npz"),
                        (MODELS["tile:xla"], "tile.safetensors")):
        try:
            perfcast.load_graph(bad)
            FAILS.append("load_graph(%s) did not raise" % bad)
        except perfcast.Error as e:
            expect(needle in e.message, "load_graph error names the file: %s" % e.message)


def test_rank():
    for coll, model in MODELS.items():
        for path in files(coll)[:2]:
            for top in ("10", "0", "3"):
                p = run("rank", "--model", model, path, "--json", "--top", top, "--threads", "1")
                expect_rc(p, 0, "rank --json " + path)
                cli = json.loads(p.stdout)
                py = perfcast.rank(model, path, top=int(top), threads=1)
                expect(sorted(py) == sorted(cli), "rank keys: %s vs %s" % (sorted(py),
                                                                          sorted(cli)))
                for k in ("file", "collection", "input"):
                    expect(py.get(k) == cli.get(k), "rank %s: %s vs %s" % (k, py.get(k),
                                                                           cli.get(k)))
                pg, cg = py["graphs"][0], cli["graphs"][0]
                for k in ("name", "kind", "configs", "configurable_nodes", "true_best"):
                    expect(pg.get(k) == cg.get(k), "rank %s: %s vs %s" % (k, pg.get(k),
                                                                          cg.get(k)))
                expect(len(pg["top"]) == len(cg["top"]), "rank rows %s" % path)
                for a, b in zip(pg["top"], cg["top"]):
                    expect(sorted(a) == sorted(b) and a["config"] == b["config"] and
                           a["rank"] == b["rank"] and a.get("runtime") == b.get("runtime"),
                           "rank row %s vs %s" % (a, b))
                    expect(abs(a["score"] - b["score"]) <= 1e-8 * max(1, abs(b["score"])),
                           "score %s vs %s" % (a["score"], b["score"]))
    try:
        perfcast.rank(os.path.join(SRC, "README.md"), files("tile:xla")[0])
        FAILS.append("rank with README.md as a model did not raise")
    except perfcast.Error as e:
        expect("README.md" in e.message, "rank error names the checkpoint: %s" % e.message)


def cli_json(*args):
    p = run(*args, "--json")
    expect_rc(p, 0, " ".join(args))
    return json.loads(p.stdout) if p.returncode == 0 else None


def same(py, cli, what, skip=()):
    """Field by field: the same keys and values (the CLI prints the library's document)."""
    if cli is None:
        return
    py = {k: v for k, v in py.items() if k not in skip}
    cli = {k: v for k, v in cli.items() if k not in skip}
    expect(sorted(py) == sorted(cli), "%s keys: %s vs %s" % (what, sorted(py), sorted(cli)))
    for k in cli:
        expect(py.get(k) == cli[k], "%s[%s]: %.300s vs %.300s" % (what, k, py.get(k), cli[k]))


HLO = os.path.join(SRC, "tests", "data", "hlo_corpus")


def test_roofline():
    for name, chip, extra in (("gpu_hlo_collective_cse.hlo", "h100", {}),
                              ("gpu_sub_byte_collectives.hlo", "h100",
                               {"mesh": "2x4", "loop_ops": True}),
                              ("while_with_known_trip_count.hlo", "v5e", {"while_trips": 7}),
                              ("mobilenet_v2.hlo", "v5e", {"top": 0})):
        path = os.path.join(HLO, name)
        flags = []
        for k, v in extra.items():
            flags += ["--" + k.replace("_", "-")] + ([] if v is True else [str(v)])
        cli = cli_json("roofline", "--chip", chip, "--hlo", path, *flags)
        same(perfcast.roofline(path, chip=chip, **extra), cli, "roofline " + name)
        with open(path) as f:  # HLO text, as jax's .as_text() gives it
            py = perfcast.roofline(f.read(), chip=chip, **extra)
        expect(py["hlo"]["file"] is None, "hlo_text: no file")
        if cli:
            cli["hlo"]["file"] = None
        same(py, cli, "roofline text " + name)
    cli = cli_json("roofline", "--chip", "v5p", "--matmul", "8,16,32", "--matmul",
                   "4096,4096,4096", "--op", "elementwise shape=8192x4096 inputs=2",
                   "--weight-dtype", "int8", "--top", "2", "--comm-bw", "1e10")
    py = perfcast.roofline(chip="v5p", matmul=[(8, 16, 32), "4096,4096,4096"],
                           op="elementwise shape=8192x4096 inputs=2", weight_dtype="int8",
                           top=2, comm_bw="10G")
    same(py, cli, "roofline ops")
    for kw, needle in (({"chip": "v5x", "matmul": (1, 2, 3)}, "unknown chip 'v5x'"),
                       ({"chip": "v5e", "matmul": "1,x,3"}, "matmul '1,x,3'"),
                       ({"chip": "v5e", "matmul": (1, 2, 3), "top": -1}, "'top'"),
                       ({"hlo": os.path.join(TMP, "missing.hlo"), "chip": "v5e"}, "missing.hlo")):
        try:
            perfcast.roofline(**kw)
            FAILS.append("roofline(%s) did not raise" % kw)
        except perfcast.Error as e:
            expect(needle in e.message, "roofline error %r in: %s" % (needle, e.message))
    try:
        perfcast.query("roofline", chip="v5e", matmul=["1,2,3"], tpo=3)
        FAILS.append("an unknown request key did not raise")
    except perfcast.Error as e:
        expect("unknown key 'tpo'" in e.message, "unknown key: %s" % e.message)


def flags(kw):
    """Keywords as the command's flags."""
    out = []
    for k, v in kw.items():
        out += ["--" + k.replace("_", "-")] + ([] if v is True else [str(v)])
    return out


def raises(fn, kw, needle, what):
    try:
        fn(**kw)
        FAILS.append("%s(%s) did not raise" % (what, kw))
    except perfcast.Error as e:
        expect(needle in e.message, "%s error %r in: %s" % (what, needle, e.message))


def test_model():
    presets = run("model", "--list-presets").stdout.split()
    expect(len(presets) >= 9, "presets: %s" % presets)
    for name in presets:
        same(perfcast.model(name), cli_json("model", "--config", name), "model " + name)
    gpt2 = {"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12,
            "vocab_size": 50257, "n_positions": 1024}
    path = os.path.join(TMP, "gpt2_config.json")
    with open(path, "w") as f:
        json.dump(gpt2, f)
    cli = cli_json("model", "--config", path, "--seq", "1024", "--causal")
    same(perfcast.model(path, seq=1024, causal=True), cli, "model config path")
    py = perfcast.model(gpt2, seq="1Ki", attention="causal")
    expect(py["model"]["name"] == "config", "a dict config is named 'config'")
    if cli:
        cli["model"]["name"] = "config"
    same(py, cli, "model config dict")
    for name, kw in (("llama3-70b", {"batch_tokens": "4M", "remat": "tensors:4",
                                     "kv_dtype": "int8"}),
                     ("mixtral-8x7b", {"chip": "v5e", "weight_dtype": "int8",
                                       "optimizer": "momentum", "master_weights": True}),
                     ("llama2-13b", {"chip": "v5p", "mfu_step_time": 0.3, "chips": 64,
                                     "batch_tokens": "4M", "remat": "full"}),
                     ("llama3-70b", {"chip": "h100", "gpu_hours": 3.93e6, "tokens": "15T",
                                     "attention": "none"}),
                     ("llama3-8b", {"layers": 16, "kv_heads": 4, "tied": True})):
        same(perfcast.model(name, **kw), cli_json("model", "--config", name, *flags(kw)),
             "model %s %s" % (name, kw))
    fields = {"layers": 2, "d_model": 64, "d_ff_expert": 128, "experts": 4,
              "experts_per_token": 2, "heads": 4, "vocab": 100, "plain_mlp": True}
    same(perfcast.model(**fields), cli_json("model", *flags(fields)), "model from fields")
    raises(perfcast.model, {"config": "llama9"}, "unknown preset 'llama9'", "model")
    raises(perfcast.model, {"config": "gpt2", "remat": "most"}, "'remat'", "model")
    raises(perfcast.model, {"config": "gpt2", "kv_heads": 5}, "must divide", "model")
    raises(perfcast.model, {"config": os.path.join(TMP, "missing.json")}, "missing.json",
           "model")
    raises(perfcast.model, {"config": "gpt2", "sq": 8}, "did you mean 'seq'", "model")


def test_plan_serve():
    for name, kw in (("llama3-8b", {"chip": "v5e", "chips": 8, "context": "8Ki"}),
                     ("llama3-70b", {"chip": "v5e", "chips": 16, "context": "2Ki,8Ki,32Ki",
                                     "replicas": 2, "concurrency": 64}),
                     ("mixtral-8x7b", {"chip": "h100", "chips": 8, "context": 4096, "ep": 8,
                                       "attention_dp": True, "weight_dtype": "fp8",
                                       "kv_dtype": "int8"}),
                     ("llama3-8b", {"chip": "v5e", "slice": "2x4", "context": 8192,
                                    "batch": 16, "book": True, "attention": "full",
                                    "efficiency": 0.5, "price_per_chip_hour": 1.2,
                                    "calibration": "none", "prefill_tokens": 1000,
                                    "decode_tokens": 200}),
                     ("llama3-8b", {"chip": "v5e", "chips": 8, "context": 8192, "batch": 100000}),
                     ("llama3-405b", {"chip": "v5e", "chips": 8, "context": 8192})):
        p = run("plan", "serve", "--config", name, *flags(kw), "--json")
        fits = p.returncode == 0
        expect(p.returncode in (0, 1), "plan serve %s %s: rc %d %s" % (name, kw, p.returncode,
                                                                      p.stderr[-500:]))
        cli = json.loads(p.stdout) if p.stdout.strip() else None
        py = perfcast.plan_serve(name, **kw)
        same(py, cli, "plan serve %s %s" % (name, kw))
        expect(py["fits"] == fits, "plan serve %s: fits %s, exit %d" % (name, py["fits"],
                                                                       p.returncode))
    py = perfcast.plan_serve(preset="llama3-8b", chip="v5e", chips=8, context=["2Ki", 8192])
    expect([c["context"] for c in py["contexts"]] == [2048, 8192], "a list of contexts")
    raises(perfcast.plan_serve, {"config": "llama9", "chip": "v5e", "chips": 8, "context": 1},
           "unknown preset 'llama9'", "plan_serve")
    raises(perfcast.plan_serve, {"config": "gpt2", "chip": "v5e", "chips": 8, "context": 1,
                                 "tp": 5}, "'tp' 5", "plan_serve")
    raises(perfcast.plan_serve, {"config": "gpt2", "chip": "v5e", "chips": 8}, "'context'",
           "plan_serve")
    raises(perfcast.plan_serve, {"config": "gpt2", "chip": "v5e", "chips": 8, "context": 1,
                                 "contxt": 1}, "did you mean 'context'", "plan_serve")


def test_plan_train():
    for name, kw in (("llama3-8b", {"chip": "v5e", "chips": 256, "batch_tokens": "4M",
                                    "top": 3}),
                     ("llama3-70b", {"chip": "v5p", "chips": 1024, "batch_tokens": "4Mi",
                                     "tokens": "15T", "remat": "full,none", "zero": "1,3"}),
                     ("mixtral-8x7b", {"chip": "h100", "chips": 64, "batch_tokens": "2Mi",
                                       "ep": 8, "top": 4, "calibration": "none",
                                       "optimizer": "momentum", "book": True}),
                     ("llama3-8b", {"chip": "v5p", "slice": "4x4x8", "batch_tokens": "4Mi",
                                    "pp": 4, "vp": 2, "micro": 16, "top": 2}),
                     ("llama3-70b", {"chip": "v5e", "chips": 1, "batch_tokens": "4M"})):
        p = run("plan", "train", "--config", name, *flags(kw), "--json")
        expect(p.returncode in (0, 1), "plan train %s %s: rc %d %s" % (name, kw, p.returncode,
                                                                      p.stderr[-500:]))
        cli = json.loads(p.stdout) if p.stdout.strip() else None
        py = perfcast.plan_train(name, **kw)
        if cli:  # the search's wall time differs between runs
            py["search"]["seconds"] = cli["search"]["seconds"]
        same(py, cli, "plan train %s %s" % (name, kw))
        expect((len(py["plans"]) > 0) == (p.returncode == 0),
               "plan train %s: %d plans, exit %d" % (name, len(py["plans"]), p.returncode))
    py = perfcast.plan_train("gpt2", chip="v5e", chips=4, batch_tokens="64Ki", seq=1024,
                             remat=["none", "full"], top=2)
    expect(len(py["plans"]) == 2, "remat as a list: %d plans" % len(py["plans"]))
    raises(perfcast.plan_train, {"config": "gpt2", "chip": "v5e", "chips": 4},
           "'batch_tokens'", "plan_train")
    raises(perfcast.plan_train, {"config": "gpt2", "chip": "v5e", "chips": 4,
                                 "batch_tokens": "1M", "tp": 3}, "do not divide", "plan_train")
    raises(perfcast.plan_train, {"config": "gpt2", "chip": "v5e", "chips": 4,
                                 "batch_tokens": "1M", "remat": "most"}, "'remat'", "plan_train")


def test_max_memory():
    """max_memory= of load_graph and rank: the CLI's --max-memory (issue #18)."""
    for coll, model in MODELS.items():
        path = files(coll)[0]
        for mm in (None, "1GiB", 2 ** 30):  # the default and a roomy budget: the same arrays
            g = perfcast.load_graph(path, max_memory=mm)
            expect(sorted(g) == sorted(np.load(path).files), "load_graph(max_memory=%r)" % (mm,))
        cases = ((perfcast.load_graph, (path,), 1024, [path, "member '", "budget of 1 KiB"]),
                 (perfcast.rank, (model, path), "1KiB", [model, "budget of 1 KiB"]))
        for fn, args, mm, needles in cases:
            try:
                fn(*args, max_memory=mm)
                FAILS.append("%s(max_memory=%r) did not raise" % (fn.__name__, mm))
            except perfcast.Error as e:
                expect(e.status == "nomem" and all(n in e.message for n in needles),
                       "%s(max_memory=%r): %s %s (want %s)" % (fn.__name__, mm, e.status,
                                                               e.message, needles))
        py = perfcast.rank(model, path, top=3, threads=1, max_memory="64MiB")
        cli = json.loads(run("rank", "--model", model, path, "--json", "--top", "3",
                             "--threads", "1", "--max-memory", "64MiB").stdout)
        expect([r["config"] for r in py["graphs"][0]["top"]] ==
               [r["config"] for r in cli["graphs"][0]["top"]], "rank max_memory=64MiB vs CLI")
    try:  # tune: the query's 'max_memory' (the CLI's --max-memory)
        perfcast.tune(MODELS["tile:xla"], files("tile:xla")[0], max_memory=1024, max_scored=10)
        FAILS.append("tune(max_memory=1024) did not raise")
    except perfcast.Error as e:
        expect(e.status == "nomem" and "budget of 1 KiB" in e.message,
               "tune(max_memory=1024): %s %s" % (e.status, e.message))
    hlo = os.path.join(HLO, "mobilenet_v2.hlo")  # roofline: the query's 'max_memory'
    try:
        perfcast.roofline(hlo, chip="v5e", max_memory="64KiB")
        FAILS.append("roofline(max_memory='64KiB') did not raise")
    except perfcast.Error as e:
        expect(e.status == "nomem" and hlo in e.message and "budget of 64 KiB" in e.message,
               "roofline(max_memory='64KiB'): %s %s" % (e.status, e.message))
    same(perfcast.roofline(hlo, chip="v5e", max_memory="1GiB"),
         cli_json("roofline", "--chip", "v5e", "--hlo", hlo, "--max-memory", "1GiB"),
         "roofline max_memory=1GiB vs CLI")
    for bad in ("lots", 0, -5, True):
        try:
            perfcast.load_graph(files("tile:xla")[0], max_memory=bad)
            FAILS.append("load_graph(max_memory=%r) did not raise" % (bad,))
        except perfcast.Error as e:
            expect(e.status == "arg", "max_memory=%r: %s %s" % (bad, e.status, e.message))

CAL = os.path.join(SRC, "data", "calibration")


def test_tune():
    """tune == `perfcast tune --json` (tile and layout .npz, an HLO program, --oracle) with
    max_scored for reproducible searches; configs as numpy; the proposals file the same."""
    hlo = os.path.join(TMP, "tune.hlo")
    with open(hlo, "w") as f:
        f.write("HloModule m\n\nENTRY main {\n  a = f32[128,64]{1,0} parameter(0)\n"
                "  b = f32[64,32]{1,0} parameter(1)\n  ROOT d = f32[128,32]{1,0} dot(a, b), "
                "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n")
    cases = [(MODELS["tile:xla"], files("tile:xla")[0], {"top": 3, "max_scored": 300}),
             (MODELS["layout:xla:random"], files("layout:xla:random")[0],
              {"top": 2, "max_scored": 512, "seed": 5, "max_changes": 2}),
             (MODELS["layout:xla:random"], hlo, {"top": 2, "max_scored": 256,
                                                 "candidates": 16}),
             (None, files("tile:xla", "train")[0], {"oracle": True, "synth_seed": 3,
                                                    "synth_scale": "tiny", "top": 2,
                                                    "max_scored": 200})]
    for i, (model, path, kw) in enumerate(cases):
        out_cli, out_py = (os.path.join(TMP, "tune_%s_%d.npz" % (w, i)) for w in ("cli", "py"))
        args = ["tune", path, "--out", out_cli] + (["--model", model] if model else [])
        args += [("--%s" % k.replace("_", "-")) if v is True else "--%s=%s" % (k.replace("_", "-"), v)
                 for k, v in kw.items()]
        cli = cli_json(*args)
        py = perfcast.tune(model, path, out=out_py, **kw)
        entries = py if isinstance(py, list) else [py]
        for e in entries:
            c = e.pop("configs")
            expect(isinstance(c, np.ndarray) and c.dtype == np.float32 and
                   c.shape[0] == len(e["scores"]), "tune configs: %r" % (c,))
            e["out"] = e["out"].replace(out_py, out_cli) if e.get("out") else e.get("out")
        if cli is None:
            continue
        clis = cli if isinstance(cli, list) else [cli]
        expect(len(clis) == len(entries), "tune %s: %d vs %d graphs" % (path, len(entries),
                                                                        len(clis)))
        for e, c in zip(entries, clis):
            e["seconds"] = c["seconds"]  # wall time
            same(e, c, "tune %s %s" % (os.path.basename(path), kw))
        a, b = np.load(out_cli), np.load(out_py)
        expect(sorted(a.files) == sorted(b.files) and
               all(np.array_equal(a[k], b[k]) for k in a.files),
               "tune %s: the proposals files differ" % path)
        if not isinstance(py, list):
            key = "config_feat" if "config_feat" in b.files else "node_config_feat"
            got = b[key].reshape(len(entries[0]["scores"]), -1)
            expect(np.array_equal(got, perfcast.tune(model, path, **kw)["configs"]),
                   "tune %s: configs are not the file's %s" % (path, key))
    raises(perfcast.tune, {"model": MODELS["tile:xla"], "path": files("tile:xla")[0],
                           "top": 0}, "'top'", "tune")
    raises(perfcast.tune, {"path": files("tile:xla")[0]}, "'model'", "tune")
    raises(perfcast.tune, {"model": os.path.join(SRC, "README.md"),
                           "path": files("tile:xla")[0]}, "README.md", "tune")


def test_validate():
    """validate == `perfcast validate --json` on the built-in calibration runs."""
    train, serve = (os.path.join(CAL, f) for f in ("training_runs.json", "serving_runs.json"))
    for args, kw in (([train, serve], {}),
                     ([train], {"calibration": "none", "kind": "train"}),
                     ([train, serve], {"loso": True})):
        flags_ = ["--calibration", kw["calibration"]] if "calibration" in kw else []
        flags_ += ["--kind", kw["kind"]] if "kind" in kw else []
        flags_ += ["--loso"] if kw.get("loso") else []
        cli = cli_json("validate", *args, *flags_)
        py = perfcast.validate(args if len(args) > 1 else args[0], **kw)
        same(py, cli, "validate %s" % kw)
    raises(perfcast.validate, {"runs": os.path.join(TMP, "missing.json")}, "missing.json",
           "validate")
    raises(perfcast.validate, {"runs": train, "kind": "both"}, "'kind'", "validate")
    raises(perfcast.validate, {"runs": train, "loso": True, "calibration": "none"}, "'loso'",
           "validate")


if __name__ == "__main__":
    run_checks([test_version_units, test_load_graph, test_rank, test_roofline, test_model,
                test_plan_serve, test_plan_train, test_max_memory, test_tune, test_validate])
    sys.exit(report("python package: ok"))
