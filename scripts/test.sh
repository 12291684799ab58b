#!/usr/bin/env bash
# Sets up and runs the whole test suite twice: a normal optimised build and
# an AddressSanitizer + UndefinedBehaviorSanitizer build. Ends with CTest's
# own summary line.
#   scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="$(nproc)"

bash scripts/setup.sh build
echo "== tests: optimised build"
(cd build && ctest --output-on-failure -j"$JOBS")

bash scripts/setup.sh build-asan -DPC_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
echo "== tests: ASan + UBSan build"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan && ctest --output-on-failure -j"$JOBS")
