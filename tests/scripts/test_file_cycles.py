#!/usr/bin/env python3
"""No file circles inside a module: the .c files of one src/ module call each other one way.

A file A "uses" file B of the same module when A's object file has an undefined
symbol (a function or a table) that B's object file defines, as `nm` reads them
from the library's objects (the list CMake writes: PC_OBJECTS_LIST). Those uses
must form no cycle: two files that call each other, or a longer circle, means a
shared piece belongs in the lower file or in a small file of its own (e.g.
dataset/load.c chooses between graph.c and cache.c; hlo/sample.c is what
import.c and import_text.c both write).

KNOWN lists the uses that are allowed to close a circle for now, each with the
reason; one that no longer exists fails too, so the list stays exact.

Environment (tests/CMakeLists.txt): PC_OBJECTS_LIST (one object path a line),
PC_SOURCE_DIR. Without them, or without nm, exits 77 (skipped). Python stdlib only.
  -v: print every use inside each module.
"""
import collections
import os
import re
import shutil
import subprocess
import sys

# "src/m/a.c -> src/m/b.c": why the use may stay.
KNOWN = {
}

OBJ_RE = re.compile(r"(?:^|/)(src/[A-Za-z0-9_]+/[A-Za-z0-9_.-]+\.c)\.o(?:bj)?$")


def load_objects(listing):
    """{source path 'src/m/f.c': object path} for the library's objects under src/."""
    objs = {}
    with open(listing, encoding="utf-8") as f:
        for line in f:
            path = line.strip()
            m = OBJ_RE.search(path.replace("\\", "/"))
            if path and m:
                objs[m.group(1)] = path
    return objs


def symbols(objs):
    """(defined, undefined): {source: set of names} each, from one nm run."""
    files = sorted(objs)
    out = subprocess.run(["nm", "-A", "-P"] + [objs[f] for f in files], capture_output=True,
                         text=True, check=True).stdout
    by_obj = {objs[f]: f for f in files}
    defined = collections.defaultdict(set)
    undefined = collections.defaultdict(set)
    for line in out.splitlines():
        obj, sep, rest = line.partition(": ")
        if not sep or obj not in by_obj:
            continue
        fields = rest.split()
        if len(fields) < 2:
            continue
        name, kind = fields[0], fields[1]
        if kind == "U":
            undefined[by_obj[obj]].add(name)
        elif kind.isupper():  # global: T D B R C V W (hidden visibility included)
            defined[by_obj[obj]].add(name)
    return defined, undefined


def module_of(src):
    return src.split("/")[1]


def uses(defined, undefined):
    """{a: {b: symbols a takes from b}} for files a != b of the same module."""
    owner = {}
    for f, names in defined.items():
        for n in names:
            owner[n] = f
    edges = collections.defaultdict(lambda: collections.defaultdict(set))
    for a, names in undefined.items():
        for n in names:
            b = owner.get(n)
            if b and b != a and module_of(a) == module_of(b):
                edges[a][b].add(n)
    return edges


def cycles(nodes, edges):
    """The strongly connected components of more than one file (Tarjan, iterative)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, {}))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, {})))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def main():
    listing = os.environ.get("PC_OBJECTS_LIST")
    src_dir = os.environ.get("PC_SOURCE_DIR")
    if not listing or not src_dir:
        print("SKIP: PC_OBJECTS_LIST / PC_SOURCE_DIR not set (run through CTest)")
        return 77
    if not shutil.which("nm"):
        print("SKIP: no nm")
        return 77
    objs = load_objects(listing)
    missing = [o for o in objs.values() if not os.path.isfile(o)]
    if missing:
        print("test_file_cycles: objects not built yet: %s" % " ".join(missing[:5]), file=sys.stderr)
        return 1
    # Every library source under src/ is in the list (and nothing else).
    on_disk = set()
    for d, _, names in os.walk(os.path.join(src_dir, "src")):
        for n in names:
            if n.endswith(".c"):
                on_disk.add(os.path.relpath(os.path.join(d, n), src_dir).replace(os.sep, "/"))
    lib_dirs = {module_of(f) for f in objs}
    not_listed = sorted(f for f in on_disk if module_of(f) in lib_dirs and f not in objs)
    if len(objs) < 50 or not_listed:
        print("test_file_cycles: the object list does not match src/ (%d objects; not in it: %s)"
              % (len(objs), " ".join(not_listed[:10])), file=sys.stderr)
        return 1

    defined, undefined = symbols(objs)
    edges = uses(defined, undefined)
    fails = []
    for (a, b), why in sorted(KNOWN.items()):
        if b not in edges.get(a, {}):
            fails.append("KNOWN lists %s -> %s, which no longer exists: remove it" % (a, b))
    kept = {a: {b: s for b, s in bs.items() if (a, b) not in KNOWN} for a, bs in edges.items()}
    for comp in cycles(objs.keys(), kept):
        lines = ["files of module %s call each other in a circle:" % module_of(comp[0])]
        for a in comp:
            for b in comp:
                if b in kept.get(a, {}):
                    names = sorted(kept[a][b])
                    lines.append("  %s -> %s: %s%s" % (a, b, " ".join(names[:8]),
                                                       " ..." if len(names) > 8 else ""))
        lines.append("  move what both need into the lower file or a small file of its own")
        fails.append("\n".join(lines))

    verbose = "-v" in sys.argv[1:]
    per_module = collections.Counter(module_of(f) for f in objs)
    nuses = collections.Counter()
    for a, bs in edges.items():
        nuses[module_of(a)] += len(bs)
        if verbose:
            for b, names in sorted(bs.items()):
                print("%s -> %s: %s" % (a, b, " ".join(sorted(names))))
    for m in sorted(per_module):
        print("%-10s %3d files %3d uses between them" % (m, per_module[m], nuses[m]))
    for (a, b), why in sorted(KNOWN.items()):
        print("known: %s -> %s  # %s" % (a, b, why))
    if fails:
        print("\n\n".join(fails), file=sys.stderr)
        print("test_file_cycles: %d failure(s)" % len(fails), file=sys.stderr)
        return 1
    print("test_file_cycles: OK (%d files, no circle within a module)" % len(objs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
