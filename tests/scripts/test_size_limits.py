#!/usr/bin/env python3
"""Size limits of the source (CONTRIBUTING.md, issue #13): no file under src/ or
include/ over 1,500 lines, no function over 150 lines.

A function is found the way our style writes one: a line at column 0 that
starts a definition and ends with `{`, up to the `}` that closes it (braces
counted outside strings, character literals and comments). Tables of data
(initializers: a line ending in `= {`) are not functions and are not limited.

Python stdlib only; the repository is found from this file.
"""
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MAX_FILE, MAX_FUNC = 1500, 150
DEF_RE = re.compile(r"^[A-Za-z_][^;=]*\)\s*\{\s*$")
STRIP_RE = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|/\*.*?\*/|//[^\n]*', re.S)


def functions(text):
    """(first line, length in lines, header) of each function definition."""
    lines = STRIP_RE.sub(lambda m: "\n" * m.group(0).count("\n") or '""', text).split("\n")
    out, depth, start = [], 0, None
    for i, line in enumerate(lines):
        if depth == 0 and start is None and DEF_RE.match(line):
            start = i
        depth += line.count("{") - line.count("}")
        if start is not None and depth == 0 and "}" in line:
            out.append((start + 1, i - start + 1, lines[start].strip()))
            start = None
    return out


def main():
    bad = []
    nfiles = nfuncs = 0
    for top in ("src", "include"):
        for d, _, names in os.walk(os.path.join(ROOT, top)):
            for n in sorted(names):
                if not n.endswith((".c", ".h")):
                    continue
                p = os.path.join(d, n)
                rel = os.path.relpath(p, ROOT)
                text = open(p, encoding="utf-8", errors="replace").read()
                nfiles += 1
                nl = text.count("\n")
                if nl > MAX_FILE:
                    bad.append(f"{rel}: {nl} lines (limit {MAX_FILE}): split it by concept")
                for line, length, head in functions(text):
                    nfuncs += 1
                    if length > MAX_FUNC:
                        bad.append(f"{rel}:{line}: function of {length} lines (limit {MAX_FUNC}): "
                                   f"{head[:60]}")
    for b in bad:
        print(b)
    print(f"test_size_limits: {nfiles} files, {nfuncs} functions, {len(bad)} over the limits")
    if nfiles == 0 or nfuncs == 0:
        print("test_size_limits: found nothing to check")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
