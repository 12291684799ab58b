#!/usr/bin/env python3
"""The layering of src/ (CONTRIBUTING.md, "Layout and layering") against the includes.

CONTRIBUTING.md holds the table in a ```layering fenced block, one row per module:

    floor | module | may include | public headers

- floor: an integer; a module may only include modules on lower floors.
- module: a folder under src/; every folder there has a row, every row a folder.
- may include: the modules it uses (their src/<module>/ headers or the public
  include/perfcast/ headers they own), `-` for none, or `public` for "any public
  header, no src/ header of another module" (the CLI).
- public headers: the include/perfcast/*.h the module implements, `-` for none;
  every public header has exactly one owner.

Lines `exception: src/FILE -> module  # why` allow one file one include the rows
forbid, so known debt stays visible; an exception that nothing needs fails too.

Checked, for every #include "x/y.h" in src/**/*.[ch] and include/perfcast/*.h:
"perfcast/y.h" counts as an include of y.h's owner, "m/y.h" of module m (public
headers may include only public headers); includes without a folder are the
file's own folder's (or generated, tuning.pb-c.h). An include of the file's own
module is always fine; any other must be listed in its row. The table must be
exact: a listed module that the module's includes do not reach, directly or
through the headers they include, fails, as does a listed module on the same or
a higher floor.

Python stdlib only; no environment needed (the repository is found from this file).
"""
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOC = os.path.join(ROOT, "CONTRIBUTING.md")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
FAILS = []


def fail(msg):
    FAILS.append(msg)


def read_table():
    """(rows {module: (floor, deps set | 'public', headers set)}, exceptions {(file, mod): why})."""
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^```layering\n(.*?)^```", text, re.M | re.S)
    if not m:
        sys.exit("test_layering: no ```layering block in CONTRIBUTING.md")
    rows, exceptions = {}, {}
    for n, line in enumerate(m.group(1).splitlines(), 1):
        body = line.split("#", 1)[0].strip()
        if not body:
            continue
        ex = re.fullmatch(r"exception:\s*(\S+)\s*->\s*(\w+)", body)
        if ex:
            why = line.split("#", 1)[1].strip() if "#" in line else ""
            if not why:
                fail("layering table line %d: an exception needs a `# why`" % n)
            exceptions[(ex.group(1), ex.group(2))] = why
            continue
        cells = [c.strip() for c in body.split("|")]
        if len(cells) != 4 or not cells[0].isdigit():
            fail("layering table line %d: expected `floor | module | may include | public "
                 "headers`, got %r" % (n, line))
            continue
        floor, mod, deps, headers = int(cells[0]), cells[1].rstrip("/"), cells[2], cells[3]
        if mod in rows:
            fail("layering table: module %s listed twice" % mod)
        deps = "public" if deps == "public" else set(d.rstrip("/") for d in deps.split()) - {"-"}
        headers = set(headers.split()) - {"-"}
        rows[mod] = (floor, deps, headers)
    return rows, exceptions


def includes(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return INCLUDE_RE.findall(f.read())


def resolve(rel, inc):
    """The header an include names, relative to ROOT, or None (system or generated)."""
    if "/" not in inc:
        cand = os.path.join(os.path.dirname(rel), inc)
    elif inc.startswith("perfcast/"):
        cand = os.path.join("include", inc)
    else:
        cand = os.path.join("src", inc)
    return cand if os.path.isfile(os.path.join(ROOT, cand)) else None


def reach_by_module(files, rows):
    """{module: the modules its files' includes reach, transitively}."""
    mod_of = {rel: mod for rel, mod, _ in files}
    edges = {}
    for rel, _, _ in files:
        found = (resolve(rel, inc) for inc in includes(os.path.join(ROOT, rel)))
        edges[rel] = [h for h in found if h]
    reach = {mod: set() for mod in rows}
    for rel, mod, _ in files:
        if mod not in rows:
            continue
        seen, todo = set(), [rel]
        while todo:
            f = todo.pop()
            for h in edges.get(f, []):
                if h not in seen:
                    seen.add(h)
                    todo.append(h)
        reach[mod] |= {mod_of[h] for h in seen if mod_of.get(h)}
    return reach


def main():
    rows, exceptions = read_table()
    src = os.path.join(ROOT, "src")
    pub = os.path.join(ROOT, "include", "perfcast")

    # The table against the tree.
    dirs = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    for d in dirs:
        if d not in rows:
            fail("src/%s/ has no row in the layering table" % d)
    for mod in rows:
        if mod not in dirs:
            fail("layering table lists %s, but there is no src/%s/" % (mod, mod))
    owner = {}
    for mod, (_, _, headers) in rows.items():
        for h in headers:
            if h in owner:
                fail("public header %s owned by both %s and %s" % (h, owner[h], mod))
            owner[h] = mod
    pub_headers = sorted(h for h in os.listdir(pub) if h.endswith(".h"))
    for h in pub_headers:
        if h not in owner:
            fail("include/perfcast/%s has no owner in the layering table" % h)
    for h in owner:
        if h not in pub_headers:
            fail("layering table: %s owns %s, which is not in include/perfcast/" % (owner[h], h))
    for mod, (floor, deps, _) in rows.items():
        if deps == "public":
            continue
        for d in sorted(deps):
            if d not in rows:
                fail("layering table: %s may include %s, which has no row" % (mod, d))
            elif rows[d][0] >= floor:
                fail("layering table: %s (floor %d) may include %s (floor %d): not a lower "
                     "floor" % (mod, floor, d, rows[d][0]))

    # Every include against the table.
    files = []  # (path relative to ROOT, module, is a public header)
    for d in dirs:
        for dirpath, _, names in os.walk(os.path.join(src, d)):
            for name in sorted(names):
                if name.endswith((".c", ".h")):
                    files.append((os.path.relpath(os.path.join(dirpath, name), ROOT), d, False))
    for h in pub_headers:
        files.append((os.path.join("include", "perfcast", h), owner.get(h), True))
    used_exceptions = set()
    checked = 0
    for rel, mod, is_pub in files:
        if mod not in rows:
            continue
        deps = rows[mod][1]
        for inc in includes(os.path.join(ROOT, rel)):
            if "/" not in inc:
                continue  # the file's own folder, or generated code (tuning.pb-c.h)
            top, rest = inc.split("/", 1)
            checked += 1
            if top == "perfcast":
                target = owner.get(rest)
                if target is None:
                    fail("%s: #include \"%s\": not a public header with an owner" % (rel, inc))
                    continue
            elif top in rows:
                target = top
                if is_pub:
                    fail("%s: #include \"%s\": a public header includes a src/ header"
                         % (rel, inc))
                    continue
                if deps == "public" and target != mod:
                    fail("%s: #include \"%s\": %s uses only the public API (include/perfcast/)"
                         % (rel, inc, mod))
                    continue
            else:
                fail("%s: #include \"%s\": %s/ is no module of the layering table"
                     % (rel, inc, top))
                continue
            if target == mod or deps == "public" or target in deps:
                continue
            if (rel, target) in exceptions:
                used_exceptions.add((rel, target))
            else:
                floor, tfloor = rows[mod][0], rows[target][0]
                how = "up a floor" if tfloor >= floor else "not in its row"
                fail("%s: #include \"%s\": %s (floor %d) -> %s (floor %d), %s of the layering "
                     "table (CONTRIBUTING.md)" % (rel, inc, mod, floor, target, tfloor, how))
    # No stale entries: each listed module is reached by the module's includes, directly
    # or through the headers they include (train uses nn through gnn/gnn.h).
    reach = reach_by_module(files, rows)
    for mod, (_, deps, _) in rows.items():
        if deps == "public":
            continue
        for d in sorted(deps - reach[mod]):
            fail("layering table: %s lists %s, but no include of %s reaches it (keep the table "
                 "exact)" % (mod, d, mod))
    for key in sorted(set(exceptions) - used_exceptions):
        fail("layering table: exception %s -> %s is not needed any more" % key)

    print("test_layering: %d modules, %d public headers, %d files, %d module includes, "
          "%d exceptions" % (len(rows), len(owner), len(files), checked, len(exceptions)))
    if FAILS:
        for f in FAILS:
            print("FAIL:", f)
        print("test_layering: %d failure(s)" % len(FAILS))
        return 1
    print("test_layering: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
