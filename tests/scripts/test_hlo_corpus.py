#!/usr/bin/env python3
"""Real HLO in every test run (issue 16): `perfcast import` and
`perfcast roofline --hlo` on every file of tests/data/hlo_corpus/ (listed in
its MANIFEST.tsv, with origin and license) and of ../shared/fixtures/hlo/
(expectations in tests/data/hlo_corpus/shared_expect.tsv; skipped when the
folder is absent).

Per file: import exits 0 with the recorded number of modules and writes one
.npz per module; roofline --json exits 0 (or, for `nocost`, reports zero
FLOPs, exit 0); where recorded, the total
FLOPs equal the count derived by hand (tests/data/hlo_corpus/README.md).
Also every file on the list exists, every .hlo in the folder is listed, each
is < 1 MB and the folder < 20 MB, and licenses are Apache-2.0, MIT or BSD.

Python stdlib. Exit 0 pass, 1 fail.
"""
import csv
import json
import os
import shutil
import sys

from clitest import FAILS, expect, expect_rc, report, run

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CORPUS = os.path.join(ROOT, "tests", "data", "hlo_corpus")
SHARED = os.path.join(os.environ.get("PC_SHARED_DIR", os.path.join(ROOT, "..", "shared")), "fixtures", "hlo")
TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_hlo_corpus")
LICENSES = {"Apache-2.0", "MIT", "BSD-2-Clause", "BSD-3-Clause"}


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def check_file(path, exp):
    name = os.path.basename(path)
    out = os.path.join(TMP, name + ".out")
    shutil.rmtree(out, ignore_errors=True)
    p = run("import", path, "--out", out)
    expect_rc(p, 0, "import " + name)
    n = int(exp["modules"])
    written = sorted(os.listdir(out)) if os.path.isdir(out) else []
    expect(("HLO text, %d module" % n) in p.stdout and len(written) == n,
           "%s: expected %d module(s): %s %s" % (name, n, p.stdout.strip(), written))
    p = run("roofline", "--chip", "h100-sxm", "--hlo", path, "--json")
    if exp["roofline"] == "nocost":
        ok = p.returncode == 0 and json.loads(p.stdout)["total"]["flops"] == 0
        expect(ok, "%s: nothing to cost: exit %d %s" % (name, p.returncode, p.stderr.strip()))
        return
    expect_rc(p, 0, "roofline " + name)
    if p.returncode == 0 and exp["flops"] != "-":
        total = json.loads(p.stdout)["total"]["flops"]
        expect(total == float(exp["flops"]), "%s: %s FLOPs, expected %s" % (name, total, exp["flops"]))


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    manifest = rows(os.path.join(CORPUS, "MANIFEST.tsv"))
    listed = {r["file"] for r in manifest}
    present = {f for f in os.listdir(CORPUS) if f.endswith((".hlo", ".txt"))}
    expect(listed == present, "MANIFEST.tsv and the folder differ: %s" % sorted(listed ^ present))
    total = 0
    for r in manifest:
        path = os.path.join(CORPUS, r["file"])
        if not os.path.exists(path):
            continue
        size = os.path.getsize(path)
        total += size
        expect(size < 1 << 20 and size == int(r["bytes"]), "%s: %d bytes (MANIFEST: %s)" % (r["file"], size, r["bytes"]))
        expect(r["license"] in LICENSES, "%s: license %s" % (r["file"], r["license"]))
        expect(len(r["commit"]) == 40 and r["repo"].count("/") == 1, "%s: origin incomplete" % r["file"])
        check_file(path, r)
    expect(total < 20 << 20, "corpus is %d bytes" % total)
    shared = rows(os.path.join(CORPUS, "shared_expect.tsv"))
    if os.path.isdir(SHARED):
        files = sorted(f for f in os.listdir(SHARED) if f.endswith(".hlo"))
        exp = {r["file"]: r for r in shared}
        for f in files:
            check_file(os.path.join(SHARED, f), exp.get(f, {"modules": "1", "roofline": "0", "flops": "-"}))
        print("checked %d corpus files and %d shared fixtures" % (len(manifest), len(files)))
    else:
        print("no %s: shared fixtures skipped" % SHARED)
    return report("test_hlo_corpus: all checks passed")


if __name__ == "__main__":
    sys.exit(main())
