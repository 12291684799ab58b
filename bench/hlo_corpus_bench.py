#!/usr/bin/env python3
"""Import pass rate of `perfcast import` over a source tree's HLO (issue 16).

    hlo_corpus_bench.py TREE [--perfcast build/perfcast] [--jobs 2] [--show 20]
                        [--failures FILE.tsv] [--save DIR]

TREE is a checkout or any plain folder, or a bare git directory (as the search
tool's `fetch` leaves it: read at HEAD with one `git cat-file --batch`; blobs a
snapshot lists but lacks are counted and left out). --save writes every input
into DIR (files/..., embedded/...), which a later run takes as TREE with the
same two sets; --failures appends each input that did not pass. Two sets:
  files     every *.hlo file;
  embedded  every C++ raw string R"(...)" / R"tag(...)tag" in *.cc / *.cpp /
            *.h files whose text starts (after blanks and // comments) with
            `HloModule`: the modules XLA's own tests parse.
Each is written to a temporary file and imported (`perfcast import FILE --out
DIR`). A failure whose message says the input is not HLO text (MLIR,
HloModuleProto text, binary) counts as "not HLO", apart from the pass rate,
as do files that hold no module (comments only). Embedded strings that are
templates (placeholders the test fills in before parsing: $0, %s, {{NAME}},
<<TYPE>>, TYPE[...]) or fragments (concatenated with other strings in C++:
unbalanced braces, no body) are counted apart and outside the rate; the run
also prints the rate over all inputs. Prints per set: inputs,
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


class GitReader:
    """Reads blobs at HEAD through one `git cat-file --batch`; None for a blob
    that is listed but absent (a snapshot may leave its largest files out)."""

    def __init__(self, tree):
        self.p = subprocess.Popen(["git", "--git-dir", tree, "cat-file", "--batch"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def __call__(self, path):
        self.p.stdin.write(("HEAD:%s\n" % path).encode())
        self.p.stdin.flush()
        head = self.p.stdout.readline().decode().split()
        if len(head) != 3:
            return None
        data = self.p.stdout.read(int(head[2]))
        self.p.stdout.read(1)
        return data.decode("utf-8", "replace")


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
    reader = GitReader(tree) if bare else \
        (lambda p: open(os.path.join(tree, p), encoding="utf-8", errors="replace").read())
    files, absent, embedded = [], 0, []
    for p in lister((".hlo",)):
        text = reader(p)
        if text is None:
            absent += 1
        elif not bare and p.startswith("embedded" + os.sep):
            embedded.append((p, text))  # a folder written by --save
        else:
            files.append((p, text))
    if absent:
        print("files: %d listed but absent from the snapshot (left out)" % absent)
    for p in lister((".cc", ".cpp", ".h")):
        text = reader(p)
        if text is None or "HloModule" not in text:
            continue
        for k, m in enumerate(RAW.finditer(text)):
            if starts_with_module(m.group(2)):
                embedded.append(("%s#%d" % (p, k), m.group(2)))
    return files, embedded


NOT_HLO = ("expected HLO text, found", "no HLO module or computation found")
# A test's module template, filled in by absl::Substitute / StrReplaceAll / StrFormat
# before XLA parses it: $0, $name, ${x}, %s, %d, %1$d, {{NAME}}, <<NAME>>, a TYPE[...]
# element type or a word among a shape's dimensions (s32[INDICES_BOUND,3]). Not HLO
# text as it stands. A `$` inside a word (__cudnn$convForward) is not a placeholder.
TEMPLATE = re.compile(r"(?<![A-Za-z_$])\$\{?\w|^\s*(?!ENTRY\b|ROOT\b)[A-Z][A-Z0-9_]{3,}\s*$|(?<![\w%])%(?:\d+\$)?(?:s|d|lld|ld|u)(?![\w.])"
                      r"|\{\{\s*[A-Z_][A-Z0-9_]*\s*\}\}|<<\w+>>|(?<![\w%.])[A-Z][A-Z0-9_]{2,}\["
                      r"|\b(?:pred|[suf]\d+|bf16|f8\w+|c64|c128)\[[^\]\n]*[A-Za-z_]", re.M)


def has_placeholder(text):
    for m in TEMPLATE.finditer(text):
        g = m.group(0)
        # `%s` / `%d` are also instruction names: a placeholder only if nothing defines them
        if g[0] == "%" and re.search(r"(^|\s)%s\s*=" % re.escape(g), text, re.M):
            continue
        return True
    return False


def kind_of_text(text):
    """'template', 'fragment' (a piece the test concatenates with others: braces
    unbalanced or no computation body) or 'hlo'."""
    if has_placeholder(text):
        return "template"
    body = re.sub(r"^\s*HloModule[^\n]*", "", text)  # its entry_computation_layout={...} aside
    if "{" not in body or text.count("{") != text.count("}"):
        return "fragment"
    return "hlo"


def normalize(msg):
    msg = re.sub(r"^.*?:\d+:\d+: ", "", msg.strip().splitlines()[-1] if msg.strip() else "")
    msg = re.sub(r"perfcast: error: ", "", msg)
    msg = re.sub(r"'[^']*'", "'X'", msg)
    return re.sub(r"\d+", "N", msg)[:140]


def one(perfcast, tmp, i, item, embedded):
    name, text = item
    path = os.path.join(tmp, "in%06d.hlo" % i)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    out = os.path.join(tmp, "out%06d" % i)
    p = subprocess.run([perfcast, "import", path, "--out", out, "-q"], capture_output=True, text=True)
    shutil.rmtree(out, ignore_errors=True)
    os.unlink(path)
    err = p.stderr.strip()
    tk = kind_of_text(text) if embedded else "hlo"
    if p.returncode == 0:
        kind = "pass" if tk == "hlo" else tk + "-pass"
    elif any(s in err for s in NOT_HLO):
        kind = "nothlo"
    else:
        kind = "fail" if tk == "hlo" else tk
    return name, kind, err


def run_set(label, items, args, tmp):
    res = []
    with cf.ThreadPoolExecutor(args.jobs) as ex:
        futs = [ex.submit(one, args.perfcast, tmp, i, it, label == "embedded") for i, it in enumerate(items)]
        for f in futs:
            res.append(f.result())
    count = collections.Counter(k for _, k, _ in res)
    hlo = count["pass"] + count["fail"]
    rate = 100.0 * count["pass"] / hlo if hlo else 0.0
    print("%-9s %6d inputs  %6d passed  %5d failed  %5d not HLO   pass rate %.2f%%"
          % (label, len(items), count["pass"], count["fail"], count["nothlo"], rate))
    if label == "embedded":
        for k in ("template", "fragment"):
            print("          %6d %ss (%d of them imported as they stand), outside the rate"
                  % (count[k] + count[k + "-pass"], k, count[k + "-pass"]))
        allp = count["pass"] + count["template-pass"] + count["fragment-pass"]
        print("          all inputs, templates and fragments included: %d of %d imported (%.2f%%)"
              % (allp, len(items), 100.0 * allp / max(1, len(items))))
    if args.failures:
        with open(args.failures, "a", encoding="utf-8") as f:
            for name, k, e in res:
                if not k.endswith("pass"):
                    f.write("%s\t%s\t%s\t%s\n" % (label, k, name, normalize(e)))
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
    ap.add_argument("--failures", help="append every input that did not pass (set, kind, name, message) as TSV")
    ap.add_argument("--save", help="also write every input into this folder (files/..., embedded/...) "
                    "so that a later run can take the folder as TREE")
    args = ap.parse_args()
    files, embedded = collect(args.tree)
    if args.save:
        for label, items in (("files", files), ("embedded", embedded)):
            for name, text in items:
                dest = os.path.join(args.save, label, name.replace("#", "__") + ".hlo") \
                    if label == "embedded" else os.path.join(args.save, label, name)
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                with open(dest, "w", encoding="utf-8") as f:
                    f.write(text)
    tmp = tempfile.mkdtemp(prefix="pc_hlo_bench_")
    try:
        run_set("files", files, args, tmp)
        run_set("embedded", embedded, args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
