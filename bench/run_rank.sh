#!/usr/bin/env bash
# Ranking speed (issue #3): score all 1,000 layout configurations of a
# 10,000-node graph with a trained layout model (hidden 64, 3 layers) and
# print the ranking. Target: under 1 s on 2 cores.
#   bench/run_rank.sh [BUILD_DIR] [REPEATS]
# Environment: CONFIG_NODES (configurable nodes of the 10k-node graph,
# default 1000 = 10%), NODES (10000), CONFIGS (1000), VARIANTS (models to
# time, default "default early late prune0": default = `perfcast train`'s
# defaults; early = `--join early`, configs enter the GNN input, one GNN pass
# per config (on the layout default 1-hop pruned graph); late = `--join late`,
# one GNN pass per graph; pruneN = `--join early --prune-hops N` (0: the
# whole graph); noenc = `--encode none`, the defaults without the layout
# default's feature encodings).
#
# Untimed setup: a small synthetic dataset (layout:xla:random), a 1-epoch
# model per variant (`perfcast train`), the graph file
# (bench/make_layout_file.py, deflated .npz). Timed, each run under
# flock /tmp/perfcast_bench.lock so it never overlaps another timed
# benchmark, per variant at 2 and then 1 thread:
#  - "e2e": `perfcast rank --model M --threads T FILE.npz`, wall clock of the
#    whole process (checkpoint + graph load, scoring, sorting, printing),
#    one process per repeat; best and median;
#  - "bench_rank": build/bench/bench_rank in one process: pc_predictor_load
#    once, then per repeat pc_graph_load ("load") and pc_predictor_score
#    ("score") timed apart.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
REPS="${2:-3}"
NODES="${NODES:-10000}"
CONFIGS="${CONFIGS:-1000}"
CONFIG_NODES="${CONFIG_NODES:-1000}"
VARIANTS="${VARIANTS:-default early late prune0}"
PY=/usr/bin/python3
LOCK=/tmp/perfcast_bench.lock
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

"$BUILD/perfcast" synth --out "$WORK/data" --scale small --seed 1 \
    --collections layout:xla:random >/dev/null
flags() { case "$1" in default) ;; early) echo --join early ;; late) echo --join late ;;
          noenc) echo --encode none ;;
          prune*) echo --join early --prune-hops "${1#prune}" ;;
          *) echo "run_rank.sh: unknown variant $1" >&2; exit 2 ;; esac; }
for v in $VARIANTS; do
  # shellcheck disable=SC2046
  "$BUILD/perfcast" train --data "$WORK/data" --collection layout:xla:random --out "$WORK/$v.st" \
      --epochs 1 --threads 2 --progress never $(flags "$v") >/dev/null
done
$PY bench/make_layout_file.py "$WORK/g.npz" --nodes "$NODES" --config-nodes "$CONFIG_NODES" \
    --configs "$CONFIGS"
echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# models: layout:xla:random, 1 epoch, hidden 64, layers 3, variants: $VARIANTS; file: $NODES nodes, $CONFIG_NODES configurable nodes, $CONFIGS configs, $(stat -c %s "$WORK/g.npz") bytes (deflated)"

for v in $VARIANTS; do
for T in 2 1; do
  export OMP_NUM_THREADS=$T
  echo "## $v (flags: $(flags "$v")), threads $T"
  ts=()
  for r in $(seq "$REPS"); do
    # wall clock and peak RSS of the whole process, taken by GNU time
    flock "$LOCK" /usr/bin/time -f "%e %M %U %S" -o "$WORK/time" \
        "$BUILD/perfcast" rank --model "$WORK/$v.st" --threads "$T" --top 5 "$WORK/g.npz" \
        >"$WORK/out" 2>&1
    read -r sec kib usr sys <"$WORK/time"
    echo "e2e threads $T rep $r seconds $sec cpu_s $(awk -v u="$usr" -v s="$sys" 'BEGIN{print u + s}') peak_rss_mib $((kib / 1024)) load_after $(cut -d" " -f1 /proc/loadavg)"
    ts+=("$sec")
  done
  printf '%s\n' "${ts[@]}" | sort -g | awk -v T="$T" '{v[NR]=$1} END {
      m = NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2;
      printf "e2e threads %d reps %d best %.2f med %.2f\n", T, NR, v[1], m }'
  flock "$LOCK" "$BUILD/bench/bench_rank" "$WORK/$v.st" "$WORK/g.npz" "$T" "$REPS"
done
echo "## $v: perfcast rank output (last run, 1 thread)"
cat "$WORK/out"
done
