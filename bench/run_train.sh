#!/usr/bin/env bash
# Training throughput (config samples per second): perfcast vs the PyTorch
# twin (bench/torch_train.py, sparse aggregation) on the same synthetic data,
# the same starting weights and preprocessing (read from one perfcast
# checkpoint), the same hyper-parameters, both limited to THREADS threads.
# Timed on both sides: STEPS training steps (layout: STEPS/10) after untimed warmup
# (config gather + forward + loss + backward + clip + AdamW); graph loading,
# preprocessing and validation are not timed. Each side runs in its own
# process, alternating, REPEATS times; prints raw lines.
#   bench/run_train.sh [BUILD_DIR] [STEPS] [REPEATS] [THREADS]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
STEPS="${2:-300}"   # tile; layout runs STEPS/10 (its steps are ~100x heavier)
REPS="${3:-2}"
THREADS="${4:-2}"
WARM=20
PY=/usr/bin/python3
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
export OMP_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS

"$BUILD/perfcast" synth --out "$WORK/data" --scale small --seed 1 \
    --collections tile:xla,layout:xla:random >/dev/null
echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); torch $($PY -c 'import torch; print(torch.__version__)')"
for spec in tile:xla:32 layout:xla:random:16; do
  coll="${spec%:*}"; K="${spec##*:}"
  # one epoch, untimed: only to get the fitted preprocessing and initial weights
  "$BUILD/perfcast" train --data "$WORK/data" --collection "$coll" --out "$WORK/m.st" \
      --epochs 1 --threads "$THREADS" --configs "$K" >/dev/null
  N=$STEPS; W=$WARM
  if [ "${coll%%:*}" = layout ]; then N=$(( STEPS / 10 > 5 ? STEPS / 10 : 5 )); W=3; fi
  echo "## $coll (K=$K, hidden 64, layers 3, warmup $W, steps $N)"
  for r in $(seq "$REPS"); do
    "$BUILD/bench/bench_train" "$WORK/m.st" "$WORK/data" "$coll" "$THREADS" "$K" "$W" "$N"
    $PY bench/torch_train.py "$WORK/m.st" "$WORK/data" "$coll" "$THREADS" "$K" "$W" "$N"
  done
done
