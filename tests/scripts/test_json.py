"""Every command's --json (docs/json.md): one JSON document on stdout with the
documented keys whatever the input, nothing but one JSON object on stderr,
errors as {"error": {"message", "file", "field", "exit"}} with the usual exit
codes, and chips --json read back by --chips-file.

PC_JSON_EXAMPLES=DIR also writes each command's output to DIR/<name>.json (the
examples of docs/json.md come from such a run).
"""
import json
import os
import shutil
import sys

from clitest import FAILS, expect, expect_rc, report, run, run_checks

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_json")
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOT = os.path.join(TMP, "dot.hlo")
DOT_TEXT = """HloModule dot_module

ENTRY main {
  a = f32[128,64]{1,0} parameter(0)
  b = f32[64,32]{1,0} parameter(1)
  t = f32[32,64]{0,1} transpose(b), dimensions={1,0}
  r = f32[64,32]{1,0} reshape(t)
  ROOT d = f32[128,32]{1,0} dot(a, r), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
CAL = os.path.join(ROOT, "data", "calibration")
EXAMPLES = os.environ.get("PC_JSON_EXAMPLES")
DATA = os.path.join(TMP, "data")

# The top-level keys of each command's --json (docs/json.md), exactly.
SCHEMA = {
    "info": None,  # a list: one object per file (see docs/json.md)
    "stats": {"dataset", "splits", "pruning"},
    "stats_prune": {"dataset", "splits", "pruning"},
    "check": {"files", "ok", "with_problems", "problems", "model", "widths", "results"},
    "synth": {"out", "scale", "seed", "seconds", "collections"},
    "cache": {"out", "files", "built", "up_to_date", "failed", "collections", "failures"},
    "train": {"out", "collection", "metric", "runs", "summary", "log"},
    "eval": {"collection", "split", "graphs", "metric_name", "metric", "metric_ci95",
             "kendall_tau", "kendall_tau_ci95", "opa", "opa_ci95", "top1_slowdown",
             "top1_slowdown_ci95", "top5_slowdown", "top5_slowdown_ci95", "top10_slowdown",
             "top10_slowdown_ci95", "ci"},
    "predict": {"out", "split", "rows", "spread", "collections"},
    "rank_npz": {"file", "collection", "input", "graphs"},
    "rank_hlo": {"file", "collection", "input", "graphs"},
    "tune": {"graph", "kind", "out", "vars", "log10_space", "rounds", "scored", "seconds",
             "risk", "max_changes", "tile_max_changes", "tile_new_sizes", "tile_risk",
             "stop", "input_best", "input_best_score", "scores"},
    "simulate": {"file", "graph", "kind", "configs", "default_ns", "best", "runtimes"},
    "import": {"file", "out", "container", "kind", "modules", "written", "skipped", "runs",
               "nodes", "edges", "unknown_opcodes", "first_unknown", "notes", "skipped_modules"},
    "chips": {"chips"},
    "chips_one": {"chips"},
    "roofline": {"chip", "dtype", "peak_flops", "hbm_bw", "critical_intensity", "hlo", "ops",
                 "others", "bf16_rate_fallbacks", "total", "svg"},
    "roofline_hlo": {"chip", "dtype", "peak_flops", "hbm_bw", "critical_intensity", "hlo",
                     "ops", "others", "bf16_rate_fallbacks", "total", "svg"},
    "collective": {"chip", "bytes", "mesh", "axes", "dcn_axes", "wrap", "convention",
                   "collectives"},
    "model": {"model", "params", "flops_per_token", "train_memory", "kv_cache", "weight_bytes",
              "chip", "moe_critical_batch", "mfu"},
    "model_chip": {"model", "params", "flops_per_token", "train_memory", "kv_cache",
                   "weight_bytes", "chip", "moe_critical_batch", "mfu"},
    "plan_train": {"model", "params", "chip", "chips", "slice", "batch_tokens", "seq",
                   "total_tokens", "efficiency", "calibration", "price_per_chip_hour",
                   "attention", "convention", "search", "thresholds", "plans",
                   "least_memory_plan", "chip_kind", "chip_hbm_bytes", "nvlink_domain",
                   "peak_flops", "act_dtype", "links", "calibrated", "pinned", "warnings"},
    "plan_serve": {"model", "chip", "slice", "tp", "replicas", "replica_slice", "weight_dtype",
                   "kv_dtype", "calibration", "attention", "convention", "contexts", "chips",
                   "chip_hbm_bytes", "heads", "experts", "experts_per_token", "batch",
                   "warnings", "fits"},
    "validate": {"calibration", "runs", "summary", "invalid_runs"},
    "calibrate": {"out", "coefficients", "in_sample"},
    "plot_train": {"kind", "file", "out", "metric", "points", "series"},
}
PLOT_SERIES = {"seed", "points", "best_valid", "best_step"}
RANK_GRAPH = {"name", "kind", "configs", "configurable_nodes", "top", "true_best"}
RANK_ROW = {"rank", "config", "score", "spread", "runtime", "spelled", "value"}
OUT = {}


def jrun(name, *args, rc=0):
    """Runs a command with --json; checks stdout is one JSON document and stderr
    empty or one JSON object; returns the parsed stdout (None on failure)."""
    p = run(*args, "--json", timeout=300)
    expect_rc(p, rc, name)
    err = p.stderr.strip()
    if err:
        try:
            e = json.loads(err)
            expect(isinstance(e, dict) and set(e) <= {"error", "warnings"},
                   "%s: stderr object %s" % (name, err[:300]))
        except ValueError:
            FAILS.append("%s: stderr is not one JSON object: %r" % (name, err[:500]))
    try:
        d = json.loads(p.stdout)
    except ValueError:
        FAILS.append("%s: stdout is not JSON: %r" % (name, p.stdout[:500]))
        return None
    OUT[name] = d
    want = SCHEMA.get(name)
    if want is not None:
        expect(isinstance(d, dict) and set(d) == want,
               "%s: keys %s, documented %s" % (name, sorted(d) if isinstance(d, dict) else
                                               type(d), sorted(want)))
    if EXAMPLES:
        with open(os.path.join(EXAMPLES, name + ".json"), "w") as f:
            json.dump(d, f, indent=2)
    return d


def npz(coll, split):
    d = os.path.join(DATA, "npz", coll.replace(":", "/"), split)
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".npz"))


def check_rank(d, name):
    if not d:
        return
    for g in d["graphs"]:
        expect(set(g) == RANK_GRAPH, "%s graph keys %s" % (name, sorted(g)))
        for t in g["top"]:
            expect(set(t) == RANK_ROW, "%s row keys %s" % (name, sorted(t)))


def test_dataset_commands():
    jrun("synth", "synth", "--out", DATA, "--scale", "tiny", "--seed", "3")
    jrun("info", "info", npz("tile:xla", "train")[0])
    # several files, one unreadable: every entry, the bad one an error entry; exit 1 and no
    # error object on stderr (the error is in the document)
    junk = os.path.join(TMP, "junk.npz")
    with open(junk, "w") as f:
        f.write("not a zip")
    good = npz("tile:xla", "train")[:2]
    p = run("info", good[0], junk, good[1], "--json")
    expect_rc(p, 1, "info with an unreadable file")
    try:
        d = json.loads(p.stdout)
    except ValueError:
        d = None
        FAILS.append("info with an unreadable file: stdout is not JSON: %r" % p.stdout[:300])
    if d is not None:
        expect([e["file"] for e in d] == [good[0], junk, good[1]], "info entries: %s" % d)
        expect(d[0]["error"] is None and d[2]["error"] is None and "arrays" in d[2],
               "info: the good entries are whole, with error null")
        bad = d[1]
        expect(set(bad) == {"file", "error"} and set(bad["error"]) == {"message", "file", "field"}
               and bad["error"]["file"] == junk and "zip" in bad["error"]["message"],
               "info: the error entry: %s" % bad)
    expect(p.stderr.strip() == "", "info: the error is in the document, stderr: %r" % p.stderr)
    # over the memory budget: the flag named once ("--max-memory budget", not "--max---max-")
    p = run("info", good[0], "--max-memory", "1KiB", "--json")
    expect_rc(p, 1, "info over its memory budget")
    m = json.loads(p.stdout)[0]["error"]["message"] if p.stdout.startswith("[") else ""
    expect("--max-memory budget of" in m and "--max---" not in m, "info budget message: %r" % m)
    jrun("stats", "stats", DATA)
    d = jrun("stats_prune", "stats", DATA, "--prune-hops", "1")
    expect(d and d["pruning"] and d["pruning"]["hops"] == 1, "stats pruning object")
    d = jrun("check", "check", DATA)
    expect(d and d["files"] == len(d["results"]) and d["ok"] == d["files"], "check counts")
    # several PATHs: one summary; a plain folder of .npz files is accepted
    plain = os.path.join(TMP, "plain")
    os.makedirs(os.path.join(plain, "sub"), exist_ok=True)
    for f in npz("tile:xla", "valid"):
        shutil.copy(f, os.path.join(plain, "sub"))
    p = run("check", plain, npz("tile:xla", "train")[0], "--json")
    expect_rc(p, 0, "check plain folder + file")
    d = json.loads(p.stdout) if p.returncode == 0 else {}
    expect(d.get("files") == len(npz("tile:xla", "valid")) + 1, "one summary: %s" % d)
    bad = os.path.join(TMP, "bad.npz")
    with open(bad, "w") as f:
        f.write("not a zip")
    p = run("check", plain, bad, "--json")
    expect_rc(p, 1, "check with a bad file")
    d = json.loads(p.stdout) if p.stdout else {}
    expect(d.get("with_problems") == 1 and p.stderr.strip() == "",
           "problems found: the result, no error object: %s / %s" % (d, p.stderr))
    p = run("check", plain, bad)
    expect(p.stdout.count("checked ") == 1, "text check: one summary: " + p.stdout)
    jrun("cache", "cache", DATA, "--out", os.path.join(TMP, "cache"))


def test_model_commands():
    model = os.path.join(TMP, "tile.safetensors")
    d = jrun("train", "train", "--data", DATA, "--collection", "tile:xla", "--out", model,
             "--epochs", "1", "--threads", "2")
    expect(d and len(d["runs"]) == 1 and d["runs"][0]["checkpoint"] == model, "train runs")
    lay = os.path.join(TMP, "layout.safetensors")
    run("train", "--data", DATA, "--collection", "layout:xla:random", "--out", lay,
        "--epochs", "1", "--threads", "2")
    log = os.path.join(TMP, "train.jsonl")
    run("train", "--data", DATA, "--collection", "tile:xla", "--out",
        os.path.join(TMP, "logged.safetensors"), "--epochs", "2", "--threads", "2", "--seeds",
        "2", "--log", log)
    svg = os.path.join(TMP, "train.svg")
    d = jrun("plot_train", "plot", "train", log, "--svg", svg)
    if d:
        expect(d["out"] == svg and d["file"] == log and d["kind"] == "train" and
               d["points"] == 4 and os.path.exists(svg), "plot train: %s" % d)
        expect([s["seed"] for s in d["series"]] == [1, 2] and
               all(set(s) == PLOT_SERIES and s["points"] == 2 for s in d["series"]),
               "plot train series: %s" % d["series"])
    jerr("plot train of a missing log", ["plot", "train", os.path.join(TMP, "no.jsonl"), "--svg",
                                         svg], 1, file=os.path.join(TMP, "no.jsonl"))
    jrun("eval", "eval", "--model", model, "--data", DATA)
    jrun("predict", "predict", "--model", model, "--data", DATA, "--out",
         os.path.join(TMP, "p.csv"))
    check_rank(jrun("rank_npz", "rank", "--model", model, npz("tile:xla", "valid")[0]),
               "rank npz")
    check_rank(jrun("rank_hlo", "rank", "--model", lay, DOT, "--candidates", "3", "--top", "2"),
               "rank hlo")
    jrun("tune", "tune", "--model", model, npz("tile:xla", "valid")[0], "--budget-s", "1",
         "--top", "2")
    jrun("simulate", "simulate", npz("tile:xla", "train")[0], "--seed", "3", "--scale", "tiny",
         "--top", "2")
    jrun("import", "import", DOT, "--out",
         os.path.join(TMP, "imported"))


def test_analytic_commands():
    d = jrun("chips", "chips")
    jrun("chips_one", "chips", "v5e")
    # round trip: the output is a --chips-file
    f = os.path.join(TMP, "chips.json")
    if d:
        with open(f, "w") as fh:
            json.dump(d, fh)
        p = run("chips", "--chips-file", f, "--json")
        expect_rc(p, 0, "chips --chips-file (chips --json)")
        expect(p.returncode != 0 or json.loads(p.stdout) == d, "chips round trip differs")
    jrun("roofline", "roofline", "--chip", "v5e", "--matmul", "256,4096,4096")
    jrun("roofline_hlo", "roofline", "--chip", "v5e", "--hlo", DOT)
    jrun("collective", "collective", "--chip", "v5e", "--bytes", "1G", "--mesh", "16x16",
         "--axes", "0")
    jrun("model", "model", "--config", "llama3-8b")
    jrun("model_chip", "model", "--config", "mixtral-8x7b", "--chip", "v5e")
    jrun("plan_train", "plan", "train", "--config", "llama3-8b", "--chip", "v5e", "--chips",
         "256", "--batch-tokens", "4M", "--top", "2")
    jrun("plan_serve", "plan", "serve", "--config", "llama3-8b", "--chip", "v5e", "--chips",
         "8", "--context", "4096")
    jrun("validate", "validate", os.path.join(CAL, "training_runs.json"),
         os.path.join(CAL, "serving_runs.json"))
    jrun("calibrate", "calibrate", os.path.join(CAL, "training_runs.json"), "--out",
         os.path.join(TMP, "cal.json"), "--no-loso")


def jerr(what, args, rc, file=None, field=None):
    """A failure under --json: nothing but {"error": ...} on stderr, exit rc."""
    p = run(*args, "--json")
    expect_rc(p, rc, what)
    try:
        e = json.loads(p.stderr)["error"]
    except (ValueError, KeyError, TypeError):
        FAILS.append("%s: stderr is not a JSON error: %r" % (what, p.stderr[:400]))
        return
    expect(set(e) >= {"message", "file", "field"} and e["message"], "%s: %s" % (what, e))
    if file is not None:
        expect(e["file"] is not None and e["file"].endswith(file), "%s: file %s" % (what, e))
    if field is not None:
        expect(e["field"] == field, "%s: field %s" % (what, e))
    expect(p.stdout == "", "%s: nothing on stdout: %r" % (what, p.stdout[:200]))


def test_errors():
    missing = os.path.join(TMP, "missing.npz")
    jerr("simulate of a missing file", ["simulate", missing], 1, file="missing.npz")
    jerr("unknown flag", ["stats", "--colection", DATA], 2, field="--colection")
    jerr("bad --threads", ["check", "--threads", "lots", DATA], 2, field="--threads")
    jerr("rank without a model", ["rank", "--model", missing, missing], 1, file="missing.npz")
    bad = os.path.join(TMP, "bad_chips.json")
    with open(bad, "w") as fh:
        fh.write('{"chips": [{"name": "v5e", "hbm_bw": "fast"}]}')
    jerr("bad chips file", ["chips", "--chips-file", bad], 1, file="bad_chips.json")
    jerr("empty folder", ["check", TMP + "/empty_dir"], 1)
    # no plan fits: the JSON result on stdout, one error object on stderr, no text
    p = run("plan", "train", "--config", "llama3-70b", "--chip", "v5e", "--chips", "1",
            "--batch-tokens", "4M", "--json")
    expect_rc(p, 1, "plan train with no plan")
    try:
        d = json.loads(p.stdout)
        expect(d["plans"] == [] and set(d) == SCHEMA["plan_train"], "no plans: same keys")
        expect("error" in json.loads(p.stderr), "an error object")
    except ValueError:
        FAILS.append("plan train without a plan: not JSON: %r / %r" % (p.stdout[:200],
                                                                       p.stderr[:400]))


if __name__ == "__main__":
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP + "/empty_dir")
    with open(DOT, "w") as f:
        f.write(DOT_TEXT)
    if EXAMPLES:
        os.makedirs(EXAMPLES, exist_ok=True)
    run_checks([test_dataset_commands, test_model_commands, test_analytic_commands, test_errors])
    sys.exit(report("json: every command's --json has its documented shape"))
