#!/usr/bin/env bash
# GEMM share and GFLOP/s (issue #3): how much of training (and ranking) time
# is OpenBLAS SGEMM, and how fast those GEMMs run against OpenBLAS's own
# SGEMM peak on this machine.
#   bench/run_gemm.sh [BUILD_DIR] [TRIALS]
#
# Untimed setup: synthetic data (tile:xla, layout:xla:random, small, seed 1),
# one 1-epoch model per collection (as run_train.sh), a 10k-node layout file
# for the ranking profile, and the GEMM FLOPs per epoch counted from the
# model's shapes (bench/gemm_flops.py). Timed, each under
# flock /tmp/perfcast_bench.lock:
#  1. OpenBLAS peak: one 2048^3 SGEMM, OpenBLAS with 1 and 2 of its threads
#     (the kernels it picks itself, then forced to SkylakeX/AVX-512 ones);
#  2. the model's GEMMs (fwd, dX, dW of the GNN layer, 3H=192 -> H=64, and
#     of the input projection 84 -> 64) at the row counts of a tile step, a
#     layout step and a ranking chunk, through a copy of src/nn/ops.c's
#     gemm() wrapper (OpenBLAS single-threaded, row/column blocks over
#     OpenMP), at 1 and 2 OpenMP threads;
#  3. perf record (cpu-clock, 999 Hz) of build/bench/bench_train at 2
#     threads for both collections (whole process: load, warmup and timed
#     steps) and of `perfcast rank` on the 10k-node graph (200 configs);
#     shares by group and top symbols (bench/perf_share.py), and achieved
#     GEMM GFLOP/s = GEMM flops of all steps / (CPU-s x OpenBLAS share).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
TRIALS="${2:-5}"
PY=/usr/bin/python3
LOCK=/tmp/perfcast_bench.lock
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=1

"$BUILD/perfcast" synth --out "$WORK/data" --scale small --seed 1 \
    --collections tile:xla,layout:xla:random >/dev/null
"$BUILD/perfcast" train --data "$WORK/data" --collection tile:xla --out "$WORK/tile.st" \
    --epochs 1 --threads 2 --configs 32 >/dev/null
"$BUILD/perfcast" train --data "$WORK/data" --collection layout:xla:random \
    --out "$WORK/layout.st" --epochs 1 --threads 2 --configs 16 >/dev/null
$PY bench/make_layout_file.py "$WORK/g.npz" --nodes 10000 --config-nodes 1000 --configs 200
$PY bench/gemm_flops.py "$WORK/tile.st" "$WORK/data" tile:xla 32 | tee "$WORK/f_tile"
$PY bench/gemm_flops.py "$WORK/layout.st" "$WORK/data" layout:xla:random 16 | tee "$WORK/f_layout"
field() { awk -v k="$2" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}' "$1"; }
echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') (family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')), load average $(cut -d' ' -f1-3 /proc/loadavg)"

echo "## 1. OpenBLAS SGEMM peak, 2048^3"
for bt in 1 2; do
  flock "$LOCK" "$BUILD/bench/bench_gemm" peak 2048 "$bt" "$TRIALS"
done
for bt in 1 2; do
  OPENBLAS_CORETYPE=SkylakeX flock "$LOCK" "$BUILD/bench/bench_gemm" peak 2048 "$bt" "$TRIALS"
done

echo "# load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "## 2. model GEMM shapes through the ops.c wrapper (rows: tile step, layout step, rank chunk 4 x 10k)"
rt=$(field "$WORK/f_tile" mean_gnn_rows); rl=$(field "$WORK/f_layout" mean_gnn_rows)
for T in 1 2; do
  for rows in "$rt" "$rl" 40000; do
    flock "$LOCK" "$BUILD/bench/bench_gemm" model "$rows" 192 64 "$T" "$TRIALS"
  done
  flock "$LOCK" "$BUILD/bench/bench_gemm" model 2000 84 64 "$T" "$TRIALS"
done

echo "# load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "## 3. perf profiles, 2 threads"
for spec in tile:xla:32:40:400:tile layout:xla:random:16:10:30:layout; do
  IFS=: read -r -a a <<<"$spec"
  n=${#a[@]}; tag=${a[n-1]}; S=${a[n-2]}; W=${a[n-3]}; K=${a[n-4]}
  coll=$(IFS=:; echo "${a[*]:0:n-4}")
  echo "### bench_train $coll K=$K warmup $W steps $S (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  flock "$LOCK" perf record -q -F 999 -o "$WORK/$tag.perf" -- \
      "$BUILD/bench/bench_train" "$WORK/$tag.st" "$WORK/data" "$coll" 2 "$K" "$W" "$S" \
      | tee "$WORK/t_$tag"
  $PY bench/perf_share.py "$WORK/$tag.perf" 14 | tee "$WORK/s_$tag"
  graphs=$(field "$WORK/f_$tag" graphs); fpe=$(field "$WORK/f_$tag" flops_per_epoch)
  secs=$(field "$WORK/t_$tag" seconds)
  cpu=$(awk '/^# profile/{for (i = 1; i < NF; i++) if ($(i + 1) == "CPU-s") print $i}' "$WORK/s_$tag")
  share=$(awk '/^group.*OPENBLAS TOTAL/{sub("%", "", $2); print $2 / 100}' "$WORK/s_$tag")
  awk -v g="$graphs" -v f="$fpe" -v W="$W" -v S="$S" -v t="$secs" -v cpu="$cpu" -v sh="$share" \
      'BEGIN { all = f * (W + S) / g; timed = f * S / g;
        printf "gemm %s flops_all_steps %.4g flops_timed %.4g openblas_share %.3f cpu_s %.2f ", \
               "'"$coll"'", all, timed, sh, cpu;
        printf "per_core_gemm_gflops %.1f wall_gemm_gflops %.1f overall_gflops %.1f\n", \
               all / (cpu * sh) / 1e9, timed / (t * sh) / 1e9, timed / t / 1e9 }'
done
echo "### perfcast rank, layout, 10k nodes, 1000 configurable nodes, 200 configs"
flock "$LOCK" perf record -q -F 999 -o "$WORK/rank.perf" -- \
    /usr/bin/time -f "rank wall_s %e" "$BUILD/perfcast" rank --model "$WORK/layout.st" \
    --threads 2 --top 1 "$WORK/g.npz" >/dev/null
$PY bench/perf_share.py "$WORK/rank.perf" 14
