#!/usr/bin/env bash
# The main job on built-in data: set up, generate a small synthetic TpuGraphs
# dataset, summarise and validate it, and inspect one file.
#   scripts/demo.sh [OUT_DIR]   (default: demo/)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh build
PC=./build/perfcast
OUT="${1:-demo}"

echo "== perfcast synth: small synthetic dataset (seed 1) -> $OUT"
"$PC" synth --out "$OUT" --scale small --seed 1
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
