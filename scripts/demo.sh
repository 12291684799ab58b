#!/usr/bin/env bash
# The main job on built-in data: set up, generate a small synthetic TpuGraphs
# dataset, summarise and validate it, inspect one file, then train tile and
# layout cost models for about a minute and a half, evaluate them, rank the
# configurations of a held-out kernel, tune the test kernels and time the proposals
# on the simulator, write a competition-format CSV, then
# plan LLaMA-3-70B training and serving with the analytic model.
#   scripts/demo.sh [OUT_DIR]   (default: demo/)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh build
PC=./build/perfcast
OUT="${1:-demo}"

echo "== perfcast synth: small synthetic dataset (seed 1) -> $OUT"
"$PC" synth --out "$OUT" --scale small --seed 1 --force
echo
echo "== perfcast stats"
"$PC" stats "$OUT"
echo
echo "== perfcast check"
"$PC" check --quiet "$OUT"
echo
first_layout=$(ls "$OUT"/npz/layout/xla/random/train/*.npz | head -n 1)
echo "== perfcast info $first_layout"
"$PC" info "$first_layout"
echo
echo "== perfcast train: tile:xla (30 s budget), then layout:xla:random (60 s budget)"
# the defaults: the budget sets the run's length, schedule and patience
"$PC" train --data "$OUT" --collection tile:xla --out "$OUT/tile_xla.model" --time-budget 30 \
  --seed 1 --progress never | tail -n 3
"$PC" train --data "$OUT" --collection layout:xla:random --out "$OUT/layout_xla_random.model" \
  --time-budget 60 --seed 1 --progress never | tail -n 3
echo
echo "== perfcast eval on the valid split"
"$PC" eval --model "$OUT/tile_xla.model" --data "$OUT" --split valid
"$PC" eval --model "$OUT/layout_xla_random.model" --data "$OUT" --split valid
echo
held_out=$(ls "$OUT"/npz/tile/xla/valid/*.npz | head -n 1)
echo "== perfcast rank: best tile configurations of a held-out kernel ($held_out)"
"$PC" rank --model "$OUT/tile_xla.model" "$held_out" --top 5
echo
echo "== perfcast tune: search every test kernel for faster tilings, then time the first"
echo "   proposal on synth's simulated TPU (perfcast simulate) against the compiler default"
rm -rf "$OUT/tuned"
"$PC" tune --model "$OUT/tile_xla.model" --data "$OUT" --split test --out "$OUT/tuned" \
  --budget-s 2 | tail -n 1
for f in "$OUT"/tuned/*.npz; do
  "$PC" simulate "$f" --seed 1 --scale small | awk '$2 == "0" { print $5 }'
done | awk '{ s += log($1); n++ } END { if (n) printf "first proposal / compiler default, geometric mean over %d kernels: %.3f\n", n, exp(s / n) }'
echo
echo "== perfcast predict: competition CSV for the test split -> $OUT/submission.csv"
"$PC" predict --model "$OUT/tile_xla.model" --model "$OUT/layout_xla_random.model" \
  --data "$OUT" --split test --out "$OUT/submission.csv"
head -n 3 "$OUT/submission.csv" | cut -c1-120
echo
echo "== bring your own program: examples/mlp_block.hlo (XLA HLO text): import, rank its layouts, roofline"
"$PC" import examples/mlp_block.hlo --out "$OUT/imported"
"$PC" rank --model "$OUT/layout_xla_random.model" examples/mlp_block.hlo --top 5
"$PC" roofline --chip v5e --hlo examples/mlp_block.hlo
echo
echo "== perfcast plan train: LLaMA-3-70B on a TPU v5p pod (analytic model, 4M-token batches, 15T tokens)"
"$PC" plan train --preset llama3-70b --chip v5p --chips 8960 --batch-tokens 4Mi --tokens 15T \
  --efficiency 0.4 --attention none --top 3
echo
echo "== perfcast plan serve: LLaMA-3-70B int8 on 8 TPU v5e, 8k context"
"$PC" plan serve --preset llama3-70b --chip v5e --chips 8 --context 8192 --weight-dtype int8
echo
echo "== perfcast validate: the analytic model against published measured training runs"
"$PC" validate data/calibration/training_runs.json | tail -n 13
echo "   (leave one source out: each source predicted by a calibration fitted without it)"
"$PC" validate data/calibration/training_runs.json --loso | grep -A6 '^absolute error'
