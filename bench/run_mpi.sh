#!/usr/bin/env bash
# Data-parallel training over MPI: 2 ranks x 1 thread against 1 process x 2
# threads on the same data and the same global batch (2 graphs per step:
# --batch-graphs 2 for the single process), STEPS optimizer steps each
# (--stop-after-steps), wall clock of the whole run including loading, and the
# training part alone from the log (time of the first epoch line is not used:
# steps are timed by the difference of two runs, STEPS and 2*STEPS).
#   bench/run_mpi.sh [BUILD_DIR] [STEPS] [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
STEPS="${2:-20}"
REPS="${3:-2}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
P="$BUILD/perfcast"
"$P" synth --out "$WORK/data" --scale small --seed 1 --collections layout:xla:random >/dev/null
MPI=(mpirun --allow-run-as-root --oversubscribe -np 2)
common=(--data "$WORK/data" --collection layout:xla:random --epochs 1000 --patience 1000)
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }
echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# layout:xla:random, hidden 64, 3 layers, K=16; global batch 2 graphs per step"
for r in $(seq "$REPS"); do
  for n in "$STEPS" $((2 * STEPS)); do
    a=$(secs "$P" train "${common[@]}" --out "$WORK/a.st" --threads 2 --batch-graphs 2 --stop-after-steps "$n")
    b=$(secs "${MPI[@]}" "$P" train "${common[@]}" --out "$WORK/b.st" --threads 1 --stop-after-steps "$n")
    echo "steps $n one_process_2_threads_s $a two_ranks_1_thread_s $b"
  done
done
