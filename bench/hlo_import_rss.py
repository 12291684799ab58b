#!/usr/bin/env python3
"""Import speed and peak memory of `perfcast import` on large HLO text (issue 16).

    hlo_import_rss.py [--perfcast build/perfcast] [--n 200000] [--keep DIR] [FILE ...]

Generates two modules of N elementwise instructions on f32[128,256]{1,0}, each
naming two of the previous 50 (as XLA prints them): one with
`metadata={op_name=... source_file=... source_line=...}` on every line (as dumps
are), one without (dense text, ~93 bytes an instruction). Each, and every FILE
given (real dumps), is imported once under /usr/bin/time -v; prints bytes,
instructions, user+sys CPU seconds, instructions per CPU second, peak RSS and
peak RSS / file size, and the .npz bytes written (with their SHA-256, so that
two builds can be compared for identical output).
"""
import argparse
import hashlib
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

OPS = ["add", "multiply", "subtract", "maximum", "minimum", "divide"]


def generate(path, n, metadata):
    rnd = random.Random(1)
    with open(path, "w") as f:
        f.write("HloModule dense\n\nENTRY main {\n")
        f.write("  p0 = f32[128,256]{1,0} parameter(0)\n  p1 = f32[128,256]{1,0} parameter(1)\n")
        names = ["p0", "p1"]
        for i in range(n):
            a, b = rnd.choice(names[-50:]), rnd.choice(names[-50:])
            name = "%s.%d" % (OPS[i % len(OPS)], i)
            root = "ROOT " if i == n - 1 else ""
            meta = (', metadata={op_name="jit(f)/jit(main)/layer_%d/%s" source_file="/src/model.py" '
                    'source_line=%d}' % (i // 100, OPS[i % len(OPS)], 100 + i % 900)) if metadata else ""
            f.write("  %s%s = f32[128,256]{1,0} %s(%s, %s)%s\n" % (root, name, OPS[i % len(OPS)], a, b, meta))
            names.append(name)
        f.write("}\n")


def measure(perfcast, path, tmp):
    out = os.path.join(tmp, "out")
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run(["/usr/bin/time", "-v", perfcast, "import", path, "--out", out, "-q"],
                       capture_output=True, text=True)
    if p.returncode:
        sys.exit("import failed: %s" % p.stderr[-2000:])
    def field(name):
        return re.search(r"%s: ([\d.:]+)" % re.escape(name), p.stderr).group(1)
    cpu = float(field("User time (seconds)")) + float(field("System time (seconds)"))
    rss = int(field("Maximum resident set size (kbytes)")) * 1024
    h, nbytes = hashlib.sha256(), 0
    for name in sorted(os.listdir(out)):
        with open(os.path.join(out, name), "rb") as f:
            data = f.read()
        h.update(data)
        nbytes += len(data)
    shutil.rmtree(out, ignore_errors=True)
    return cpu, rss, nbytes, h.hexdigest()[:16]


def count_instructions(path):
    n = 0
    with open(path, errors="replace") as f:
        for line in f:
            if re.match(r"\s*(ROOT\s+)?%?[\w.\-]+\s*=", line):
                n += 1
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*")
    ap.add_argument("--perfcast", default=os.path.join(os.path.dirname(__file__), "..", "build", "perfcast"))
    ap.add_argument("--n", type=int, default=200000)
    ap.add_argument("--keep", help="write the generated modules here (else a temporary folder)")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="pc_hlo_rss_")
    gen = args.keep or tmp
    os.makedirs(gen, exist_ok=True)
    inputs = []
    for meta in (True, False):
        path = os.path.join(gen, "dense_%s.hlo" % ("metadata" if meta else "plain"))
        if not os.path.exists(path):
            generate(path, args.n, meta)
        inputs.append(path)
    inputs += args.files
    print("%-44s %11s %8s %7s %9s %9s %6s %11s %s" % ("file", "bytes", "inst", "cpu_s", "inst/s", "peak_MB",
                                                        "x_text", "npz_bytes", "npz_sha256"))
    try:
        for path in inputs:
            size, n = os.path.getsize(path), count_instructions(path)
            cpu, rss, nbytes, digest = measure(args.perfcast, path, tmp)
            print("%-44s %11d %8d %7.2f %8.0fk %9.1f %6.1f %11d %s" % (
                os.path.basename(path)[:44], size, n, cpu, n / max(cpu, 1e-3) / 1e3, rss / 1e6, rss / size,
                nbytes, digest))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
