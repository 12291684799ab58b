#!/usr/bin/env python3
"""Import pass rate of `perfcast import` over a source tree's HLO (issue 16).

    hlo_corpus_bench.py TREE [--perfcast build/perfcast] [--jobs 2] [--show 20]

TREE is a checkout (a folder) or a bare git directory (as the search tool's
`fetch` leaves it: read with `git ls-tree` / `git show` at HEAD). Two sets:
  files     every *.hlo file;
  embedded  every C++ raw string R"(...)" / R"tag(...)tag" in *.cc / *.cpp /
            *.h files whose text starts (after blanks and // comments) with
            `HloModule`: the modules XLA's own tests parse.
Each is written to a temporary file and imported (`perfcast import FILE --out
DIR`). A failure whose message says the input is not HLO text (MLIR,
HloModuleProto text, binary) counts as "not HLO", apart from the pass rate,
as do files that hold no module (comments only). Prints per set: inputs,
passed, failed, not HLO, pass rate over the HLO ones, and the most common
failure messages (the text after FILE:LINE:COLUMN, numbers and names
normalized), then up to --show failures with their first line.
"""
import argparse
import collections
import concurrent.futures as cf
import os
import re
import shutil
import subprocess
import sys
import tempfile

RAW = re.compile(r'R"([A-Za-z0-9_]{0,16})\((.*?)\)\1"', re.S)


def git_files(tree, exts):
    out = subprocess.run(["git", "--git-dir", tree, "ls-tree", "-r", "--name-only", "HEAD"],
                         capture_output=True, text=True, check=True).stdout.split("\n")
    return [p for p in out if p.endswith(exts)]


def git_read(tree, path):
    return subprocess.run(["git", "--git-dir", tree, "show", "HEAD:" + path], capture_output=True,
                          check=True).stdout.decode("utf-8", "replace")


def walk_files(tree, exts):
    for root, _, names in os.walk(tree):
        for n in names:
            if n.endswith(exts):
                yield os.path.relpath(os.path.join(root, n), tree)


def starts_with_module(text):
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("//"):
            continue
        return s.startswith("HloModule")
    return False


def collect(tree):
    bare = os.path.isfile(os.path.join(tree, "HEAD")) and not os.path.isdir(os.path.join(tree, ".git"))
    lister = (lambda e: git_files(tree, e)) if bare else (lambda e: list(walk_files(tree, e)))
    reader = (lambda p: git_read(tree, p)) if bare else \
        (lambda p: open(os.path.join(tree, p), encoding="utf-8", errors="replace").read())
    files = [(p, reader(p)) for p in lister((".hlo",))]
    embedded = []
    for p in lister((".cc", ".cpp", ".h")):
        text = reader(p)
        if "HloModule" not in text:
            continue
        for k, m in enumerate(RAW.finditer(text)):
            if starts_with_module(m.group(2)):
                embedded.append(("%s#%d" % (p, k), m.group(2)))
    return files, embedded


NOT_HLO = ("expected HLO text, found", "no HLO module or computation found")


def normalize(msg):
    msg = re.sub(r"^.*?:\d+:\d+: ", "", msg.strip().splitlines()[-1] if msg.strip() else "")
    msg = re.sub(r"perfcast: error: ", "", msg)
    msg = re.sub(r"'[^']*'", "'X'", msg)
    return re.sub(r"\d+", "N", msg)[:140]


def one(perfcast, tmp, i, item):
    name, text = item
    path = os.path.join(tmp, "in%06d.hlo" % i)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    out = os.path.join(tmp, "out%06d" % i)
    p = subprocess.run([perfcast, "import", path, "--out", out, "-q"], capture_output=True, text=True)
    shutil.rmtree(out, ignore_errors=True)
    os.unlink(path)
    err = p.stderr.strip()
    kind = "pass" if p.returncode == 0 else ("nothlo" if any(s in err for s in NOT_HLO) else "fail")
    return name, kind, err


def run_set(label, items, args, tmp):
    res = []
    with cf.ThreadPoolExecutor(args.jobs) as ex:
        futs = [ex.submit(one, args.perfcast, tmp, i, it) for i, it in enumerate(items)]
        for f in futs:
            res.append(f.result())
    count = collections.Counter(k for _, k, _ in res)
    hlo = count["pass"] + count["fail"]
    rate = 100.0 * count["pass"] / hlo if hlo else 0.0
    print("%-9s %6d inputs  %6d passed  %5d failed  %5d not HLO   pass rate %.1f%%"
          % (label, len(items), count["pass"], count["fail"], count["nothlo"], rate))
    msgs = collections.Counter(normalize(e) for _, k, e in res if k == "fail")
    for m, n in msgs.most_common(8):
        print("    %5d  %s" % (n, m))
    for name, k, e in [r for r in res if r[1] == "fail"][: args.show]:
        print("    FAIL %s: %s" % (name, (e.splitlines() or [""])[-1][:200]))
    return count


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tree")
    ap.add_argument("--perfcast", default=os.path.join(os.path.dirname(__file__), "..", "build", "perfcast"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--show", type=int, default=10)
    args = ap.parse_args()
    files, embedded = collect(args.tree)
    tmp = tempfile.mkdtemp(prefix="pc_hlo_bench_")
    try:
        run_set("files", files, args, tmp)
        run_set("embedded", embedded, args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
