"""perfcast roofline runs one library query (src/query/q_roofline.c): the chips
file is read once, by the library, and that one document gives the table or
--json and the --svg picture (its requested "plot": the chip and every op).

Checked on the HLO corpus (tests/data/hlo_corpus): --json with and without
--svg is the same document (but "svg"), without the command's "plot"; the
text is the same but "wrote FILE"; the picture has a marker per op with FLOPs
of the --top 0 document; the chips file is opened once (strace, when it runs
here); a chips file that cannot be read is named, in text and in --json's
error object; an unknown chip is a usage error naming --chips-file.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

from clitest import CLI, FAILS, expect, expect_rc, report, run, run_checks

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_roofline_once")
CORPUS = os.path.join(os.environ.get("PC_TEST_DATA", os.path.join(os.path.dirname(__file__),
                                                                  "..", "data")), "hlo_corpus")
SVGNS = "{http://www.w3.org/2000/svg}"


def corpus():
    files = sorted(glob.glob(os.path.join(CORPUS, "*.hlo")))
    expect(len(files) >= 5, "the HLO corpus has %d files" % len(files))
    return files


def check_same_document():
    for i, hlo in enumerate(corpus()):
        for chip in ("v5e", "h100"):
            what = "roofline %s on %s" % (os.path.basename(hlo), chip)
            svg = os.path.join(TMP, "c%d_%s.svg" % (i, chip))
            a = run("roofline", "--chip", chip, "--hlo", hlo, "--json")
            b = run("roofline", "--chip", chip, "--hlo", hlo, "--json", "--svg", svg)
            expect_rc(a, 0, what + " --json")
            expect_rc(b, 0, what + " --json --svg")
            if a.returncode or b.returncode:
                continue
            ja, jb = json.loads(a.stdout), json.loads(b.stdout)
            expect("plot" not in ja and "plot" not in jb,
                   "%s: the command's 'plot' is in --json: %r" % (what, sorted(jb)))
            expect(ja["svg"] is None and jb["svg"] == svg, "%s: svg keys %r %r"
                   % (what, ja["svg"], jb["svg"]))
            jb["svg"] = None
            expect(ja == jb, "%s: --json differs with --svg" % what)
            t1 = run("roofline", "--chip", chip, "--hlo", hlo, "--top", "3")
            t2 = run("roofline", "--chip", chip, "--hlo", hlo, "--top", "3", "--svg", svg)
            expect(t1.stdout + "wrote %s\n" % svg == t2.stdout,
                   "%s: the text differs with --svg:\n%s\n---\n%s" % (what, t1.stdout, t2.stdout))
            # the picture: every op with FLOPs of the whole module (--top 0) is a marker
            full = json.loads(run("roofline", "--chip", chip, "--hlo", hlo, "--json", "--top",
                                  "0").stdout)
            ops = [o for o in full["ops"] if o["flops"] > 0]
            root = ET.parse(svg).getroot()
            marks = [c for c in root.iter(SVGNS + "circle") if c.get("class") == "marker"]
            expect(len(marks) == len(ops), "%s: %d markers, %d ops with FLOPs"
                   % (what, len(marks), len(ops)))


def chips_file():
    path = os.path.join(TMP, "chips.json")
    p = run("chips", "--json")
    expect_rc(p, 0, "chips --json")
    with open(path, "w") as f:
        f.write(p.stdout)
    return path


def check_chips_file_once():
    path = chips_file()
    hlo = os.path.join(CORPUS, "mobilenet_v2.hlo")
    svg = os.path.join(TMP, "once.svg")
    a = run("roofline", "--chip", "v5e", "--hlo", hlo, "--json", "--svg", svg)
    b = run("roofline", "--chip", "v5e", "--hlo", hlo, "--json", "--svg", svg,
            "--chips-file", path)
    expect_rc(b, 0, "roofline --chips-file")
    expect(a.stdout == b.stdout, "roofline: a --chips-file of the built-ins changed the output")
    if not shutil.which("strace"):
        return
    trace = os.path.join(TMP, "strace.txt")
    q = subprocess.run(["strace", "-f", "-e", "trace=open,openat", "-o", trace, CLI, "roofline",
                        "--chip", "v5e", "--hlo", hlo, "--svg", svg, "--chips-file", path],
                       capture_output=True, text=True)
    if q.returncode != 0 or not os.path.exists(trace):
        return  # no ptrace here (a container): the outputs above still hold
    with open(trace) as f:
        opens = [l for l in f if '"%s"' % path in l and "ENOENT" not in l]
    expect(len(opens) == 1, "roofline --svg opened the chips file %d times:\n%s"
           % (len(opens), "".join(opens)))
    with open(trace) as f:
        hopens = [l for l in f if '"%s"' % hlo in l and "ENOENT" not in l]
    expect(len(hopens) == 1, "roofline --svg opened the HLO file %d times" % len(hopens))


def check_chips_file_errors():
    missing = os.path.join(TMP, "no_such_chips.json")
    bad = os.path.join(TMP, "bad_chips.json")
    with open(bad, "w") as f:
        f.write('{"chips": [{"name": "x"')
    for path in (missing, bad):
        for svg in ([], ["--svg", os.path.join(TMP, "err.svg")]):
            p = run("roofline", "--chip", "v5e", "--matmul", "8,8,8", "--chips-file", path, *svg)
            expect_rc(p, 1, "roofline --chips-file %s" % path)
            expect(p.stderr.startswith("perfcast roofline: error: %s: " % path),
                   "roofline: the chips file error does not name it: %r" % p.stderr)
            expect(p.stdout == "", "roofline: output despite a bad chips file: %r" % p.stdout)
            expect(not os.path.exists(os.path.join(TMP, "err.svg")), "roofline: an SVG was left")
        p = run("roofline", "--chip", "v5e", "--matmul", "8,8,8", "--chips-file", path, "--json")
        expect_rc(p, 1, "roofline --json --chips-file %s" % path)
        try:
            e = json.loads(p.stderr)["error"]
            expect(e["file"] == path and e["message"].startswith(path + ": "),
                   "roofline --json: the error object does not name the chips file: %r" % e)
        except (ValueError, KeyError):
            FAILS.append("roofline --json: no error object: %r" % p.stderr)
    p = run("roofline", "--chip", "nosuchchip", "--matmul", "8,8,8")
    expect_rc(p, 2, "roofline --chip nosuchchip")
    expect("unknown chip 'nosuchchip'" in p.stderr and "--chips-file" in p.stderr and
           "chips_file" not in p.stderr, "roofline unknown chip: %r" % p.stderr)


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    run_checks([check_same_document, check_chips_file_once, check_chips_file_errors])
    return report("roofline: one query, the same document with and without --svg")


if __name__ == "__main__":
    sys.exit(main())
