#!/usr/bin/env bash
# Issue #5 item 4: how a tile model trained on SYNTHETIC data ranks the tile-size
# configurations of 15 REAL TPU kernels (shared/fixtures/tpugraphs_raw/
# op_tuning_data.pb: 754 measured runs, 752 kept by `perfcast import`).
#
# For each seed S (1..SEEDS): `perfcast synth --scale full --seed S` (tile:xla
# only), `perfcast train` a tile:xla model on it for BUDGET (training
# seed S, 2 threads, default architecture and loss, model selection on the
# synthetic valid split), then on the imported kernels:
#   - `perfcast eval --split test --json` on all 15 kernels (one dataset tree
#     WORK/real/tile/xla/test/*.npz) and on each kernel alone (WORK/per/<kernel>/
#     tile/xla/test/<kernel>.npz, a symlink), i.e. perfcast's own per-kernel numbers;
#   - `perfcast rank --json --top 100000` on each kernel: every config's score.
# bench/real_kernels_table.py then prints the tables (per kernel: configs,
# Kendall tau-b(score, runtime), top-1/top-5 slowdown as best runtime among the
# predicted top K / true best; baselines: random order (exact expected values),
# "largest output tile first", the best single config feature fitted on the
# synthetic train split, the compiler's default config), cross-checks its
# numbers against perfcast eval's, and compares feature ranges synthetic vs real.
#
# usage: bash bench/run_real_kernels.sh [BUILD_DIR] [BUDGET] [SEEDS] [WORK_DIR]
#        (defaults: build e36 3 /tmp/pc_real_kernels)
# BUDGET: eN = a fixed N epochs (deterministic: same seed and threads, same model,
# whatever the machine's load; 36 epochs of --scale full tile data take about 90 s
# on 2 idle EPYC cores), or N = a --time-budget of N seconds (load-dependent: on a
# busy machine the run may stop after one slow epoch).
# env PC_SHARED_DIR: folder holding fixtures/tpugraphs_raw (default ../shared beside
# the checkout). Timed training holds /tmp/perfcast_bench.lock like the other benches.
set -eu
BUILD=${1:-build}
BUDGET=${2:-e36}
SEEDS=${3:-3}
WORK=${4:-/tmp/pc_real_kernels}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
PC=$(cd "$BUILD" && pwd)/perfcast
SHARED=${PC_SHARED_DIR:-$ROOT/../shared}
PB=$SHARED/fixtures/tpugraphs_raw/op_tuning_data.pb
PY=${PC_PYTHON:-/usr/bin/python3}
LOCK=/tmp/perfcast_bench.lock
[ -x "$PC" ] || { echo "no perfcast binary in $BUILD" >&2; exit 1; }
[ -f "$PB" ] || { echo "fixture not found: $PB" >&2; exit 1; }

rm -rf "$WORK"
mkdir -p "$WORK"
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1)," \
     "load $(uptime | sed 's/.*load average: //')"
echo "perfcast: $("$PC" --version)"

# the real kernels, in the dataset layout eval reads (test split: runtimes present)
"$PC" import "$PB" --out "$WORK/imported" | tail -3
mkdir -p "$WORK/real/tile/xla/test"
for f in "$WORK"/imported/*.npz; do
    k=$(basename "$f" .npz)
    ln -s "$f" "$WORK/real/tile/xla/test/$k.npz"
    mkdir -p "$WORK/per/$k/tile/xla/test"
    ln -s "$f" "$WORK/per/$k/tile/xla/test/$k.npz"
done
"$PC" check "$WORK/real" | tail -1

for seed in $(seq 1 "$SEEDS"); do
    d=$WORK/seed$seed
    mkdir -p "$d/rank" "$d/eval"
    "$PC" synth --out "$d/syn" --scale full --seed "$seed" --threads 2 \
        --collections tile:xla | tail -1
    case $BUDGET in
        e*) stop=(--epochs "${BUDGET#e}"); lock=(); what="${BUDGET#e} epochs" ;;
        *) stop=(--time-budget "$BUDGET" --epochs 10000); lock=(flock "$LOCK")
           what="${BUDGET}s" ;;
    esac
    echo "seed $seed: training for $what ..."
    start=$(date +%s)
    "${lock[@]}" nice -n 19 "$PC" train --data "$d/syn" --collection tile:xla \
        --out "$d/model.st" --seed "$seed" --threads 2 "${stop[@]}" --patience 10000 \
        --progress never > "$d/train.log"
    echo "seed $seed: trained in $(( $(date +%s) - start ))s wall," \
         "$(grep -c '^epoch ' "$d/train.log") epochs"
    tail -1 "$d/train.log"
    rm -f "$d/model.st.state"
    "$PC" eval --model "$d/model.st" --data "$d/syn" --split valid --json --threads 2 \
        > "$d/eval_synth_valid.json"
    "$PC" eval --model "$d/model.st" --data "$WORK/real" --split test --json --threads 2 \
        > "$d/eval_real.json"
    for f in "$WORK"/imported/*.npz; do
        k=$(basename "$f" .npz)
        "$PC" eval --model "$d/model.st" --data "$WORK/per/$k" --split test --json \
            --threads 2 > "$d/eval/$k.json"
        "$PC" rank --model "$d/model.st" "$f" --top 100000 --json --threads 2 \
            > "$d/rank/$k.json"
    done
    echo "seed $seed: synthetic valid $(cat "$d/eval_synth_valid.json")"
    echo "seed $seed: real kernels    $(cat "$d/eval_real.json")"
done

"$PY" "$HERE/real_kernels_table.py" "$WORK" "$SEEDS"
