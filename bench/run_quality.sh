#!/usr/bin/env bash
# Ranking quality on synthetic data (issue #3): for every collection and seed,
# perfcast's GNN vs the PyTorch twin trained for the same wall-clock budget vs
# random ranking vs the best single-feature heuristic (fitted on train).
#   bench/run_quality.sh [BUILD_DIR] [BUDGET_SEC] [SEEDS]
# Seeds 1..SEEDS; per seed:
#   data:     perfcast synth --scale small --seed S (all five collections);
#   holdout:  perfcast synth --scale small --seed 1000+S, its TRAIN split (40 tile
#             kernels, 10 programs per layout collection), never trained or
#             selected on; a larger, unbiased second evaluation set;
#   baselines: bench/quality_baselines.py (random: mean over 100 random
#             rankings per graph; heuristic: best (config feature, sign) on train);
#   init:     perfcast train --epochs 1 --time-budget 0.000001 stops before its
#             first step and writes the UNTRAINED initial weights + fitted
#             preprocessing of seed S (the twin starts from them);
#   perfcast: perfcast train --time-budget BUDGET --seed S --threads 2
#             --epochs 1000 --patience 1000, then perfcast eval (valid, holdout);
#   torch:    bench/torch_quality.py, same budget, same loop (per-epoch valid
#             metric, best-model selection), writes its best weights into a
#             perfcast checkpoint, scored by the same perfcast eval.
# Timed runs hold /tmp/perfcast_bench.lock (flock) so timed benchmarks never overlap;
# perfcast and torch alternate which goes first from seed to seed.
# PC_EXTRA_FLAGS="--encode all": also a perfcast run with those flags per layout
# collection (method perfcast_x), not matched by the twin.
# Results: $WORK/results.jsonl (WORK = $QUALITY_WORK or a new temp dir, kept; the
# datasets in it are deleted), then the tables of bench/quality_table.py.
# Time: about 10 x BUDGET + 120 s per seed on an idle 2-core VM (28 min at the defaults;
# much longer when other work competes for the cores or holds the lock).
# The perfcast binary is copied into WORK first, so a rebuild during the run cannot
# break it or mix versions.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
BUDGET="${2:-45}"
SEEDS="${3:-3}"
THREADS=2
PY=/usr/bin/python3
LOCK=/tmp/perfcast_bench.lock
WORK="${QUALITY_WORK:-$(mktemp -d)}"
mkdir -p "$WORK"
PC="$WORK/perfcast"
for i in $(seq 30); do  # the build may be relinking right now
  if "$BUILD/perfcast" --version >/dev/null 2>&1 && cp "$BUILD/perfcast" "$PC" \
      && "$PC" --version >/dev/null 2>&1; then break; fi
  sleep 10
done
"$PC" --version >/dev/null
RES="$WORK/results.jsonl"
: >"$RES"
export OMP_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS
COLLS="${QUALITY_COLLS:-tile:xla layout:xla:random layout:xla:default layout:nlp:random layout:nlp:default}"

load1() { cut -d' ' -f1 /proc/loadavg; }
# row SEED COLL METHOD SPLIT EXTRA_JSON EVAL_JSON
row() { echo "{\"seed\": $1, \"collection\": \"$2\", \"method\": \"$3\", \"split\": \"$4\", $5, \"eval\": $6}" >>"$RES"; }

# evals SEED COLL METHOD EXTRA_JSON MODEL: perfcast eval on valid and on the holdout
evals() {
  local v h
  v=$("$PC" eval --model "$5" --data "$WORK/d$1" --split valid --threads $THREADS --json)
  h=$("$PC" eval --model "$5" --data "$WORK/h$1" --split train --threads $THREADS --json)
  row "$1" "$2" "$3" valid "$4" "$v"
  row "$1" "$2" "$3" holdout "$4" "$h"
}

run_perfcast() { # seed coll [method extra-flags...]
  local s=$1 c=$2 meth=${3:-perfcast} log="$WORK/log_${3:-pc}_s$1_${2//:/_}.txt" la
  shift 2; shift $(( $# > 0 ? 1 : 0 ))
  flock "$LOCK" "$PC" train --data "$WORK/d$s" --collection "$c" --out "$WORK/pc.st" \
      --time-budget "$BUDGET" --seed "$s" --threads $THREADS --epochs 1000 --patience 1000 \
      "$@" >"$log" 2>&1
  la=$(load1)  # 1-min load average at the end of the run: other work during it
  local be er
  be=$(grep -o 'best epoch [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || echo null)
  er=$(grep -cE '^epoch [0-9]+ loss' "$log" || true)
  local x="\"best_epoch\": ${be:-null}, \"epochs_run\": ${er:-null}, \"load\": $la"
  evals "$s" "$c" "$meth" "$x" "$WORK/pc.st"
  echo "  [$(( $(date +%s) - T0 )) s] $meth $c: $(tail -1 "$log")"
}

run_torch() { # seed coll
  local s=$1 c=$2 la out
  out=$(flock "$LOCK" $PY bench/torch_quality.py "$WORK/init.st" "$WORK/d$s" "$c" "$BUDGET" "$s" \
      $THREADS "$WORK/tw.st" 1000 1000)
  la=$(load1)
  local x
  x="$(echo "$out" | $PY -c 'import json,sys; d=json.loads(sys.stdin.read()); print(", ".join(f"\"{k}\": {json.dumps(v)}" for k,v in d.items()))'), \"load\": $la"
  evals "$s" "$c" torch "$x" "$WORK/tw.st"
  echo "  [$(( $(date +%s) - T0 )) s] torch    $c: $out"
}

echo "# $("$PC" --version); machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); torch $($PY -c 'import torch; print(torch.__version__)'); budget ${BUDGET}s; seeds 1..$SEEDS; work $WORK"
T0=$(date +%s)
for s in $(seq "$SEEDS"); do
  rm -rf "$WORK/d$s" "$WORK/h$s"
  "$PC" synth --out "$WORK/d$s" --scale small --seed "$s" >/dev/null
  "$PC" synth --out "$WORK/h$s" --scale small --seed $((1000 + s)) >/dev/null
  echo "## seed $s ($(( $(date +%s) - T0 )) s)"
  $PY bench/quality_baselines.py "$WORK/d$s" "$s" "$WORK/h$s" >>"$RES"
  for c in $COLLS; do
    flock "$LOCK" "$PC" train --data "$WORK/d$s" --collection "$c" --out "$WORK/init.st" \
        --epochs 1 --time-budget 0.000001 --seed "$s" --threads $THREADS >/dev/null
    if [ $((s % 2)) -eq 1 ]; then run_perfcast "$s" "$c"; run_torch "$s" "$c"
    else run_torch "$s" "$c"; run_perfcast "$s" "$c"; fi
    # PC_EXTRA_FLAGS: one more perfcast run per layout collection with these flags
    # (method perfcast_x; e.g. "--encode all", which the torch twin does not implement)
    if [ -n "${PC_EXTRA_FLAGS:-}" ] && [ "$c" != tile:xla ]; then
      # shellcheck disable=SC2086
      run_perfcast "$s" "$c" perfcast_x $PC_EXTRA_FLAGS
    fi
  done
  rm -rf "$WORK/d$s" "$WORK/h$s"
done
echo "# total $(( $(date +%s) - T0 )) s; results $RES"
$PY bench/quality_table.py "$RES"
