#!/usr/bin/env bash
# Peak RSS of training and evaluation, two perfcast binaries side by side
# (issue #14: "peak RSS no higher than today"). Same synthetic data, the
# user's default flags (only --data --collection --out --time-budget),
# runs alternated; peak RSS from /usr/bin/time (max resident set, KiB).
#   bench/run_rss.sh OLD_PERFCAST NEW_PERFCAST [BUDGET_S] [SCALE]
set -euo pipefail
OLD="$1"; NEW="$2"; BUDGET="${3:-20}"; SCALE="${4:-small}"
W="$(mktemp -d)"; trap 'rm -rf "$W"' EXIT
"$NEW" synth --out "$W/d" --scale "$SCALE" --seed 3 >/dev/null
echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(date -u +%F); scale $SCALE, budget $BUDGET s"
rss() { # binary, command... -> peak KiB
  /usr/bin/time -f %M -o "$W/t" "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }
  cat "$W/t"
}
for coll in tile:xla layout:xla:random layout:xla:default; do
  for side in old new; do
    bin=$OLD; [ $side = new ] && bin=$NEW
    tr=$(rss "$bin" train --data "$W/d" --collection "$coll" --out "$W/$side.st" --time-budget "$BUDGET")
    ev=$(rss "$bin" eval --model "$W/$side.st" --data "$W/d")
    printf "%-20s %s train %7.1f MiB  eval %7.1f MiB\n" "$coll" "$side" "$(echo "$tr/1024" | bc -l)" "$(echo "$ev/1024" | bc -l)"
  done
done
