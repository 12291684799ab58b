#!/usr/bin/env python3
"""Installs this build into a temporary prefix and uses it as an outside project would.

`cmake --install BUILD --prefix TMP/prefix`, then:
 - the installed files: CLI, headers, library, perfcast.pc, the CMake package;
 - the library exports exactly the PC_API functions of the installed headers (a
   shared library nothing else; a static one defines them all);
 - tests/install/consumer.c and consumer.cpp (every public header; pc_version, a
   built-in chip, a model preset, a run parsed from JSON predicted with the
   built-in calibration) built with -Wall -Wextra -Werror -pedantic and run, through
   pkg-config (`--static` for a static library) and through
   find_package(perfcast CONFIG) in a C project and a C++-only project: all four
   print the same line;
 - the installed CLI runs and prints what the build's CLI prints.
Exit 77 (skipped) when no C++ compiler is found.

Environment (tests/CMakeLists.txt): PC_BUILD_DIR, PC_SOURCE_DIR, PC_CMAKE, PC_CC,
PC_SANITIZE, PC_TEST_TMP, PERFCAST. Python stdlib only.
"""
import glob
import os
import re
import shutil
import subprocess
import sys

BUILD = os.environ["PC_BUILD_DIR"]
SRC = os.environ["PC_SOURCE_DIR"]
CMAKE = os.environ.get("PC_CMAKE", "cmake")
CC = os.environ.get("PC_CC") or "cc"
SANITIZE = os.environ.get("PC_SANITIZE", "OFF").upper() in ("1", "ON", "TRUE", "YES")
CLI = os.environ["PERFCAST"]
TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_install")
CONSUMER = os.path.join(SRC, "tests", "install")
FAILS = []


def sh(cmd, env=None, what=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d\n$ %s\n%s%s" % (what or cmd[0], p.returncode,
                                                      " ".join(cmd), p.stdout[-3000:],
                                                      p.stderr[-3000:]))
    return p.stdout


def cxx_for(cc):
    """The C++ compiler of the C compiler's family (the library's OpenMP runtime
    must be the one the C++ side links: libgomp for gcc, libomp for clang)."""
    base = os.path.basename(cc)
    for c, cxx in (("clang", "clang++"), ("gcc", "g++"), ("cc", "c++")):
        if c in base:
            name = base.replace(c, cxx, 1)
            path = os.path.join(os.path.dirname(cc), name) if os.path.dirname(cc) else name
            found = shutil.which(path)
            if found:
                return found
    return os.environ.get("CXX") and shutil.which(os.environ["CXX"])


def public_functions(incdir):
    names = set()
    for h in glob.glob(os.path.join(incdir, "perfcast", "*.h")):
        for line in open(h, encoding="utf-8"):
            m = re.match(r"PC_API\b[^(]*?\b(pc_\w+)\s*\(", line)
            if m:
                names.add(m.group(1))
    return names


def defined_symbols(lib, dynamic):
    out = sh(["nm", "-D" if dynamic else "-g", "--defined-only", lib], what="nm")
    return {f[-1] for f in (l.split() for l in out.splitlines()) if len(f) >= 3}


def main():
    cxx = cxx_for(CC)
    if not cxx or not shutil.which(CC):
        print("SKIP: no C++ compiler next to %s (set CXX)" % CC)
        return 77
    if not shutil.which("pkg-config"):
        print("SKIP: no pkg-config")
        return 77

    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    prefix = os.path.join(TMP, "prefix")
    sh([CMAKE, "--install", BUILD, "--prefix", prefix], what="cmake --install")

    # The installed files.
    libs = glob.glob(os.path.join(prefix, "lib*", "**", "libperfcast.*"), recursive=True)
    shared = [l for l in libs if ".so" in os.path.basename(l)]
    static = [l for l in libs if l.endswith(".a")]
    pcs = glob.glob(os.path.join(prefix, "lib*", "**", "pkgconfig", "perfcast.pc"), recursive=True)
    configs = glob.glob(os.path.join(prefix, "lib*", "**", "perfcastConfig*.cmake"), recursive=True)
    incdir = os.path.join(prefix, "include")
    for what, ok in (("bin/perfcast", os.access(os.path.join(prefix, "bin", "perfcast"), os.X_OK)),
                     ("include/perfcast/perfcast.h",
                      os.path.isfile(os.path.join(incdir, "perfcast", "perfcast.h"))),
                     ("libperfcast (exactly one of .a / .so)", bool(shared) != bool(static)),
                     ("lib/pkgconfig/perfcast.pc", len(pcs) == 1),
                     ("perfcastConfig.cmake and perfcastConfigVersion.cmake", len(configs) == 2)):
        if not ok:
            FAILS.append("not installed: " + what)
    if FAILS:
        return 1
    libdir = os.path.dirname(shared[0] if shared else static[0])

    # Exports: every PC_API function, and from a shared library nothing else.
    api = public_functions(incdir)
    if len(api) < 200:
        FAILS.append("only %d PC_API functions found in the installed headers" % len(api))
    if shutil.which("nm"):
        lib = (shared or static)[0]
        syms = defined_symbols(lib, bool(shared))
        missing = sorted(api - syms)
        if missing:
            FAILS.append("%s does not define %d public functions: %s"
                         % (os.path.basename(lib), len(missing), " ".join(missing[:20])))
        if shared:
            extra = sorted(s for s in syms - api if not s.startswith("_"))
            if extra:
                FAILS.append("libperfcast.so exports %d symbols that are not PC_API: %s"
                             % (len(extra), " ".join(extra[:20])))

    env = dict(os.environ)
    env["PKG_CONFIG_PATH"] = os.path.dirname(pcs[0]) + (
        ":" + env["PKG_CONFIG_PATH"] if env.get("PKG_CONFIG_PATH") else "")
    if shared:
        env["LD_LIBRARY_PATH"] = libdir + (
            ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    san = ["-fsanitize=address,undefined"] if SANITIZE else []
    warn = ["-Wall", "-Wextra", "-Werror", "-pedantic"]

    outputs = {}
    # 1. pkg-config. A static library needs --static (Libs.private, Requires.private).
    pc = ["pkg-config", "--cflags", "--libs"] + ([] if shared else ["--static"]) + ["perfcast"]
    flags = sh(pc, env=env, what="pkg-config").split()
    for lang, comp, std, src in (("c", CC, "-std=c11", "consumer.c"),
                                 ("c++", cxx, "-std=c++11", "consumer.cpp")):
        exe = os.path.join(TMP, "pkgconfig_" + lang.replace("+", "x"))
        try:
            sh([comp, std] + warn + san + ["-I", CONSUMER, os.path.join(CONSUMER, src),
                                           "-o", exe] + flags,
               env=env, what="pkg-config build of " + src)
            outputs["pkg-config " + lang] = sh([exe], env=env, what=exe)
        except RuntimeError as e:
            FAILS.append(str(e))

    # 2. find_package(perfcast CONFIG): a C project and a C++-only project.
    for lang in ("C", "CXX"):
        bdir = os.path.join(TMP, "cmake_" + lang)
        cfg = [CMAKE, "-S", CONSUMER, "-B", bdir, "-DCONSUMER_LANG=" + lang,
               "-DCMAKE_PREFIX_PATH=" + prefix, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
               "-DCMAKE_C_COMPILER=" + CC, "-DCMAKE_CXX_COMPILER=" + cxx]
        if SANITIZE:
            cfg += ["-DCMAKE_%s_FLAGS=%s" % (lang, san[0]),
                    "-DCMAKE_EXE_LINKER_FLAGS=" + san[0]]
        try:
            sh(cfg, env=env, what="find_package configure (%s)" % lang)
            sh([CMAKE, "--build", bdir], env=env, what="find_package build (%s)" % lang)
            outputs["find_package " + lang] = sh([os.path.join(bdir, "consumer")], env=env,
                                                 what="consumer (find_package %s)" % lang)
        except RuntimeError as e:
            FAILS.append(str(e))

    lines = set(outputs.values())
    if len(lines) > 1:
        FAILS.append("the consumers disagree:\n" +
                     "".join("  %s: %s" % (k, v) for k, v in sorted(outputs.items())))
    for k, v in sorted(outputs.items()):
        print("%-16s %s" % (k, v.strip()))
    if outputs and not all(re.match(r"perfcast \S+ chip h100 .* predicted [0-9.e+-]+ s", v)
                           for v in outputs.values()):
        FAILS.append("unexpected consumer output")

    # 3. The installed CLI (RPATH to the installed library when shared).
    try:
        args = ["chips", "--json"]
        mine = sh([os.path.join(prefix, "bin", "perfcast")] + args, what="installed perfcast")
        theirs = sh([CLI] + args, what="build's perfcast")
        if mine != theirs:
            FAILS.append("installed `perfcast chips --json` differs from the build's")
    except RuntimeError as e:
        FAILS.append(str(e))

    if FAILS:
        print("\n\n".join(FAILS), file=sys.stderr)
        print("test_install: %d failure(s)" % len(FAILS), file=sys.stderr)
        return 1
    print("test_install: OK (%s library, %d public functions, %d consumers)"
          % ("shared" if shared else "static", len(api), len(outputs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
