#!/usr/bin/env bash
# Replays the committed fuzz corpora and the must-fail files through every
# fuzz target with fuzz_replay (plain build, no libFuzzer), so a crash found
# once stays fixed. Targets come from `fuzz_replay --list` (npy_header, npz,
# graph); each must have its corpus in fuzz/corpus/<target>/. Bounded: each
# replay runs under `timeout`.
# Environment (set by tests/CMakeLists.txt): PC_FUZZ_REPLAY, PC_TEST_TMP.
set -u
root="$(cd "$(dirname "$0")/../.." && pwd)"
replay="${PC_FUZZ_REPLAY:-}"
if [[ -z "$replay" || ! -x "$replay" ]]; then
    echo "FAIL: PC_FUZZ_REPLAY ('$replay') is not an executable; run through ctest"
    exit 1
fi
tmp="${PC_TEST_TMP:-/tmp/pc_test_fuzz_replay}"
mkdir -p "$tmp"
export PC_FUZZ_TMP="$tmp"   # scratch files of the npz and graph targets

status=0
for target in $("$replay" --list); do
    if [[ ! -d "$root/fuzz/corpus/$target" ]]; then
        echo "FAIL: $target: no corpus in fuzz/corpus/$target/"
        status=1
        continue
    fi
    dirs=("$root/fuzz/corpus/$target" "$root/tests/data/bad")
    start=$(date +%s%N)
    out=$(timeout 300 "$replay" -v "$target" "${dirs[@]}" 2>"$tmp/$target.log")
    rc=$?
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    if [[ $rc -ne 0 ]]; then
        echo "FAIL: $target: exit $rc; output:"
        tail -n 30 "$tmp/$target.log"
        status=1
        # list every failing input, one process each
        while IFS= read -r -d '' f; do
            if ! timeout 60 "$replay" "$target" "$f" >/dev/null 2>"$tmp/one.log"; then
                echo "  crashes: $f"
                grep -E "check failed|ERROR: AddressSanitizer|runtime error|SUMMARY" \
                    "$tmp/one.log" | head -2 | sed 's/^/    /'
            fi
        done < <(find "${dirs[@]}" -type f ! -name '.*' -print0 | sort -z)
    else
        echo "$out ($ms ms)"
    fi
done
if [[ $status -eq 0 ]]; then
    rm -rf "$tmp"
fi
exit $status
