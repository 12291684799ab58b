#!/usr/bin/env bash
# Sets up and runs the whole test suite: a normal optimised build (CTest), a
# gcc Release (-O3) build of the shared library (-DBUILD_SHARED_LIBS=ON: it
# catches the warnings -O3 finds, and test_install proves the shared library,
# hidden visibility and the export macro link from C and C++), a clang build
# (compile only: its warnings), then an AddressSanitizer +
# UndefinedBehaviorSanitizer build (CTest). Warnings are errors in every build
# (PC_WERROR, on by default), and a warning printed anyway (the linker's,
# CMake's) fails the run too. Ends with CTest's own summary line.
#   scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="$(nproc)"

# build DIR [cmake args...]: scripts/setup.sh, failing on any warning it prints.
build() {
  local log status=0
  log="$(mktemp)"
  bash scripts/setup.sh "$@" 2>&1 | tee "$log" || status=$?
  if [ "$status" -eq 0 ] && grep -E "warning:|CMake Warning" "$log" >/dev/null; then
    echo "test.sh: warnings in the $1 build:" >&2
    grep -E "warning:|CMake Warning" "$log" >&2
    status=1
  fi
  rm -f "$log"
  return "$status"
}

build build
echo "== tests: optimised build"
(cd build && ctest --output-on-failure -j"$JOBS")

echo "== gcc Release (-O3) build, shared library: compile, then install and link against it"
build build-release -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON
(cd build-release && ctest --output-on-failure -R '^script\.test_(install|python)$')
echo "== clang build: compile only"
build build-clang -DCMAKE_C_COMPILER=clang

build build-asan -DPC_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
echo "== tests: ASan + UBSan build"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan && ctest --output-on-failure -j"$JOBS")
