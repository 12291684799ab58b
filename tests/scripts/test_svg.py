#!/usr/bin/env python3
"""Every --svg picture of the CLI (issue #17): each file parsed with xml.etree and
checked for its elements (the classes src/cli/svg.h gives them: title, axis,
tick, marker, label, legend, bar, curve, best), `xmllint --noout` when installed,
no temporary file left, an --svg equal to an input refused, a missing folder
refused before any work.

  roofline --hlo (the largest HLO fixture under PC_SHARED_DIR, else
  examples/mlp_block.hlo): one marker per op with FLOPs, their radius growing
  with the op's time, colours by bound, numbered labels <= --top;
  train --log + plot train: the JSONL (one object per epoch) and its two panels;
  eval --svg / rank --svg: one marker per config (sampled beyond a cap), the true
  and the predicted best;  plan train --svg: one bar per exposed part of each plan;
  plan serve --svg: one curve per context, one marker per batch size.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clitest import FAILS, expect, expect_rc, report, run, run_checks  # noqa: E402

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_svg")
SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.environ.get("PC_SHARED_DIR", "")
SVG_NS = "{http://www.w3.org/2000/svg}"


def load(path, what):
    """The parsed SVG root (None after recording a failure)."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        FAILS.append("%s: %s unreadable: %s" % (what, path, exc))
        return None
    expect(root.tag == SVG_NS + "svg", "%s: root element is <svg>, got %s" % (what, root.tag))
    if shutil.which("xmllint"):
        p = subprocess.run(["xmllint", "--noout", path], capture_output=True, text=True)
        expect(p.returncode == 0, "%s: xmllint: %s" % (what, p.stderr))
    left = [f for f in os.listdir(os.path.dirname(path)) if ".tmp" in f]
    expect(not left, "%s: temporary files left: %r" % (what, left))
    return root


def cls(root, name):
    return [e for e in root.iter() if e.get("class") == name]


def texts(root, name):
    return ["".join(e.itertext()) for e in cls(root, name)]


def common(root, what, title_has):
    t = texts(root, "title")
    expect(len(t) == 1 and title_has in t[0], "%s: title with %r, got %r" % (what, title_has, t))
    expect(cls(root, "axis"), "%s: axes" % what)
    expect(len(cls(root, "tick")) >= 4, "%s: tick labels" % what)


def biggest_hlo():
    hlos = glob.glob(os.path.join(SHARED, "fixtures", "hlo", "*.hlo")) if SHARED else []
    if not hlos:
        return os.path.join(SRC, "examples", "mlp_block.hlo")
    return max(hlos, key=os.path.getsize)


def check_roofline():
    hlo = biggest_hlo()
    svg = os.path.join(TMP, "roof", "roof.svg")
    os.makedirs(os.path.dirname(svg), exist_ok=True)
    p = run("roofline", "--chip", "v5e", "--hlo", hlo, "--json", "--top", "7", "--svg", svg)
    expect_rc(p, 0, "roofline --svg")
    doc = json.loads(p.stdout)
    root = load(svg, "roofline")
    if root is None:
        return
    common(root, "roofline", "Roofline")
    n_ops = doc["hlo"]["ops"]
    marks = [e for e in cls(root, "marker") if e.tag == SVG_NS + "circle"]
    # --json's ops are the --top 7; count those with FLOPs from a full run
    full = json.loads(run("roofline", "--chip", "v5e", "--hlo", hlo, "--json", "--top", "0").stdout)
    with_flops = sum(1 for o in full["ops"] if o["flops"] > 0)
    expect(len(marks) == with_flops, "roofline: one marker per op with FLOPs: %d, expected %d "
           "(of %d ops)" % (len(marks), with_flops, n_ops))
    labels = texts(root, "label")
    numbers = [int(x) for lab in labels for x in lab.split(",")]
    expect(0 < len(labels) <= 7 and max(numbers) <= 7,
           "roofline: at most --top 7 labels, got %r" % labels)
    rows = cls(root, "row")
    expect(len(rows) == min(7, n_ops), "roofline: the %d slowest listed, got %d"
           % (min(7, n_ops), len(rows)))
    colors = {e.get("fill") for e in marks}
    bounds = {o["bound"] for o in full["ops"] if o["flops"] > 0}
    expect(len(colors) == len(bounds), "roofline: one colour per bound %r, got %r" % (bounds, colors))
    # the radius grows with the time: the slowest drawn op has the largest marker
    radii = sorted(float(e.get("r")) for e in marks)
    times = sorted(o["time"] for o in full["ops"] if o["flops"] > 0)
    expect(radii[-1] > radii[0] or times[-1] == times[0], "roofline: markers sized by time share")
    expect(texts(root, "legend") and any("memory" in t for t in texts(root, "legend")),
           "roofline: legend of the bounds")
    # --top applied to the text too; the --svg path may not be the input
    p = run("roofline", "--chip", "v5e", "--hlo", hlo, "--svg", hlo)
    expect_rc(p, 2, "roofline --svg equal to --hlo")
    p = run("roofline", "--chip", "v5e", "--hlo", hlo, "--svg", os.path.join(TMP, "no", "r.svg"))
    expect_rc(p, 1, "roofline --svg into a missing folder")
    expect("does not exist" in p.stderr, "roofline: names the missing folder: " + p.stderr)


def data_dir():
    d = os.path.join(TMP, "data")
    if not os.path.isdir(d):
        p = run("synth", "--out", d, "--scale", "tiny", "--seed", "3")
        expect_rc(p, 0, "synth")
    return d


def check_train_log():
    d = data_dir()
    model = os.path.join(TMP, "tile.st")
    log = os.path.join(TMP, "train.jsonl")
    p = run("train", "--data", d, "--collection", "tile:xla", "--out", model, "--epochs", "3",
            "--patience", "10", "--threads", "1", "--log", log, "--progress", "never")
    expect_rc(p, 0, "train --log")
    recs = [json.loads(line) for line in open(log, encoding="utf-8") if line.strip()]
    expect(len(recs) == 3, "train --log: one record per epoch, got %d" % len(recs))
    for i, r in enumerate(recs):
        for k in ("seed", "epoch", "step", "loss", "valid", "metric", "lr", "elapsed_s"):
            expect(k in r, "train --log: record %d has %s: %r" % (i, k, r))
        expect(r["epoch"] == i + 1, "train --log: epochs 1.. in order: %r" % r)
    expect(recs[-1]["step"] > recs[0]["step"] > 0, "train --log: steps grow")
    expect(all(r["metric"] == "tile_score" for r in recs), "train --log: metric name")
    svg = os.path.join(TMP, "train.svg")
    p = run("plot", "train", log, "--svg", svg)
    expect_rc(p, 0, "plot train")
    root = load(svg, "plot train")
    if root is not None:
        common(root, "plot train", "Training")
        expect(len(cls(root, "curve")) == 2, "plot train: a loss and a valid curve")
        expect(len(cls(root, "marker")) + len(cls(root, "best")) == 6,
               "plot train: one point per record and panel")
        expect(len(cls(root, "best")) == 1, "plot train: the best valid round starred")
        expect(any("seed" in t for t in texts(root, "legend")), "plot train: legend")
    # bad input: named with its line; nothing written
    bad = os.path.join(TMP, "bad.jsonl")
    with open(bad, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(recs[0]) + "\n{\"epoch\": 2}\n")
    out = os.path.join(TMP, "bad.svg")
    p = run("plot", "train", bad, "--svg", out)
    expect_rc(p, 1, "plot train of a bad log")
    expect("bad.jsonl: line 2" in p.stderr and "step" in p.stderr, "plot train: names line and "
           "field: " + p.stderr)
    expect(not os.path.exists(out), "plot train: no output on bad input")
    p = run("plot", "train", log, "--svg", log)
    expect_rc(p, 2, "plot train --svg equal to the input")


def check_eval_rank():
    d = data_dir()
    model = os.path.join(TMP, "tile.st")
    if not os.path.exists(model):
        return
    svg = os.path.join(TMP, "eval.svg")
    p = run("eval", "--model", model, "--data", d, "--svg", svg, "--json")
    expect_rc(p, 0, "eval --svg")
    graphs = json.loads(p.stdout)["graphs"]
    root = load(svg, "eval")
    if root is not None:
        common(root, "eval", "predicted score vs measured runtime")
        panels = min(graphs, 12)
        expect(len(cls(root, "best")) == 2 * panels,
               "eval: a true and a predicted best per graph (%d)" % panels)
        expect(len(texts(root, "label")) == panels, "eval: one title per panel")
        expect(cls(root, "legend"), "eval: legend")
    f = sorted(glob.glob(os.path.join(d, "npz", "tile", "xla", "valid", "*.npz")))[0]
    svg = os.path.join(TMP, "rank.svg")
    p = run("rank", "--model", model, f, "--svg", svg, "--json")
    expect_rc(p, 0, "rank --svg")
    n = json.loads(p.stdout)["graphs"][0]["configs"]
    root = load(svg, "rank")
    if root is not None:
        common(root, "rank", "predicted score vs measured runtime")
        best = cls(root, "best")
        expect(len(best) == 2, "rank: the true and the predicted best")
        expect(len(cls(root, "marker")) + 2 == n or n < 2,
               "rank: one marker per config (%d), got %d" % (n, len(cls(root, "marker")) + 2))
    p = run("rank", "--model", model, f, "--svg", f)
    expect_rc(p, 2, "rank --svg equal to the input")
    p = run("eval", "--model", model, "--data", d, "--svg", model)
    expect_rc(p, 2, "eval --svg equal to the model")


def check_plan():
    svg = os.path.join(TMP, "plan_train.svg")
    p = run("plan", "train", "--preset", "llama3-8b", "--chip", "h100", "--chips", "64",
            "--batch-tokens", "1M", "--pp", "2", "--top", "4", "--svg", svg, "--json")
    expect_rc(p, 0, "plan train --svg")
    doc = json.loads(p.stdout)
    root = load(svg, "plan train")
    if root is not None:
        common(root, "plan train", "plan train")
        plans = doc["plans"]
        nparts = sum(1 for pl in plans for v in pl["step_parts"].values() if v > 0)
        expect(len(cls(root, "bar")) == nparts,
               "plan train: one bar segment per exposed part: %d, expected %d"
               % (len(cls(root, "bar")), nparts))
        expect(len(texts(root, "label")) == len(plans), "plan train: one label per plan")
        expect(any("compute" in t for t in texts(root, "legend")), "plan train: legend")
    svg = os.path.join(TMP, "plan_serve.svg")
    p = run("plan", "serve", "--preset", "llama3-8b", "--chip", "v5e", "--chips", "4",
            "--context", "2k,8k", "--svg", svg, "--json")
    expect_rc(p, 0, "plan serve --svg")
    doc = json.loads(p.stdout)
    root = load(svg, "plan serve")
    if root is not None:
        common(root, "plan serve", "plan serve")
        expect(len(cls(root, "curve")) == 2, "plan serve: one curve per context")
        rows = sum(1 for c in doc["contexts"] for b in c["batches"] if b["fits"])
        expect(len(cls(root, "marker")) == rows, "plan serve: one marker per batch: %d, "
               "expected %d" % (len(cls(root, "marker")), rows))
        expect(len(cls(root, "best")) == 2, "plan serve: the KV/weights crossover per context")
        expect(any("KV" in t for t in texts(root, "legend")), "plan serve: legend")


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    run_checks([check_roofline, check_train_log, check_eval_rank, check_plan])
    return report("svg: ok")


if __name__ == "__main__":
    sys.exit(main())
