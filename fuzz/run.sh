#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan, library instrumented
# for coverage) and runs each for a bounded time.
#
#   fuzz/run.sh [TARGET...]          default: every fuzz/fuzz_<target>.c, one
#                                    after the other: npy_header, npz, graph
#
# Environment:
#   FUZZ_SECONDS    seconds per target (default 30)
#   FUZZ_BUILD_DIR  build directory (default build-fuzz in the repository)
#   FUZZ_MERGE=1    afterwards, merge new coverage into fuzz/corpus/<target>/
#   CC              compiler (default clang; needs libFuzzer, e.g. libclang-rt-14-dev)
#
# Seeds: fuzz/corpus/<target>/ and tests/data/bad/. New inputs go to
# $FUZZ_BUILD_DIR/corpus/<target>/, crashes to $FUZZ_BUILD_DIR/artifacts/<target>/.
# Exit status: 0 if no target crashed, 1 otherwise (the crashing inputs are
# listed; replay one with `fuzz_replay <target> FILE` or the fuzzer binary).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${FUZZ_BUILD_DIR:-$root/build-fuzz}"
secs="${FUZZ_SECONDS:-30}"
cc="${CC:-clang}"

if [[ $# -gt 0 ]]; then
    targets=("$@")
else
    targets=()
    for f in "$root"/fuzz/fuzz_*.c; do
        t="$(basename "$f" .c)"
        targets+=("${t#fuzz_}")
    done
fi

# -fsanitize=fuzzer-no-link on every file gives libFuzzer coverage of the
# library, not just of the target; PC_SANITIZE adds ASan and UBSan everywhere.
cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPC_FUZZ=ON -DPC_SANITIZE=ON -DBUILD_TESTING=OFF \
    -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link" >/dev/null
bins=()
for t in "${targets[@]}"; do bins+=("fuzz_${t}_fuzzer"); done
cmake --build "$build" -j "$(nproc)" --target "${bins[@]}"

export PC_FUZZ_TMP="${PC_FUZZ_TMP:-${TMPDIR:-/tmp}}"
status=0
for t in "${targets[@]}"; do
    work="$build/corpus/$t"
    art="$build/artifacts/$t"
    mkdir -p "$work" "$art"
    seeds=("$root/tests/data/bad")
    [[ -d "$root/fuzz/corpus/$t" ]] && seeds=("$root/fuzz/corpus/$t" "${seeds[@]}")
    echo "== fuzzing $t for ${secs}s"
    if ! "$build/fuzz/fuzz_${t}_fuzzer" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -max_len=8192 -print_final_stats=1 -artifact_prefix="$art/" \
        "$work" "${seeds[@]}" 2>"$build/fuzz_$t.log"; then
        status=1
        echo "!! $t crashed; log: $build/fuzz_$t.log"
        grep -E "ERROR:|SUMMARY:|check failed|runtime error" "$build/fuzz_$t.log" | head -5 || true
        ls -1 "$art"/* 2>/dev/null || true
    else
        grep -E "^stat::(number_of_executed_units|peak_rss_mb|new_units_added)" \
            "$build/fuzz_$t.log" || true
    fi
    if [[ "${FUZZ_MERGE:-0}" == 1 && -d "$root/fuzz/corpus/$t" ]]; then
        "$build/fuzz/fuzz_${t}_fuzzer" -merge=1 -max_len=8192 "$root/fuzz/corpus/$t" "$work" \
            2>>"$build/fuzz_$t.log" || true
    fi
done
exit $status
