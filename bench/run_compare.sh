#!/usr/bin/env bash
# Side by side: training and ranking speed of two perfcast binaries (a
# refactor must not regress them; issue #13). Same data, same flags, runs
# alternated, best of REPEATS each, 1 thread (the least noisy on a shared VM).
#   bench/run_compare.sh OLD_PERFCAST NEW_PERFCAST [REPEATS]
# Prints seconds per command for each binary and new/old ratios, and checks
# that both binaries wrote the same checkpoint bytes.
set -euo pipefail
OLD="$1"; NEW="$2"; REPS="${3:-3}"
W="$(mktemp -d)"; trap 'rm -rf "$W"' EXIT
export OMP_WAIT_POLICY=passive
"$NEW" synth --out "$W/d" --scale small --seed 5 >/dev/null
best() { # binary, command...
  local b=999999 bin="$1"; shift
  for _ in $(seq "$REPS"); do
    local t0 t1
    t0=$(date +%s.%N); "$bin" "$@" >/dev/null 2>&1; t1=$(date +%s.%N)
    b=$(echo "if ($t1 - $t0 < $b) $t1 - $t0 else $b" | bc -l)
  done
  echo "$b"
}
row() { # label, command (with BIN and OUT placeholders)...
  local label="$1"; shift
  local o n
  o=$(best "$OLD" "${@//OUT/$W/old}"); n=$(best "$NEW" "${@//OUT/$W/new}")
  printf "%-34s old %8.3f s  new %8.3f s  new/old %5.2f\n" "$label" "$o" "$n" "$(echo "$n / $o" | bc -l)"
}
echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(date -u +%F)"
row "train tile:xla 10 epochs" train --data "$W/d" --collection tile:xla --out OUT.tile \
  --epochs 10 --patience 100 --threads 1 --seed 1
row "train layout:xla:random 4 epochs" train --data "$W/d" --collection layout:xla:random \
  --out OUT.layout --epochs 4 --patience 100 --threads 1 --seed 1
cmp "$W/old.tile" "$W/new.tile" && cmp "$W/old.layout" "$W/new.layout" \
  && echo "checkpoints: byte-identical"
f=$(ls "$W"/d/npz/layout/xla/random/valid/*.npz | head -n 1)
row "rank one layout graph" rank --model "$W/new.layout" "$f" --threads 1 --top 5
row "eval tile valid split" eval --model "$W/new.tile" --data "$W/d" --threads 1
