#!/usr/bin/env bash
# Issue #15, ninth pass: round 0 of bench/tune_dagger.sh (no DAgger rounds) for
# several training seeds and encodings, trained for a FIXED number of epochs
# (--epochs EPOCHS --patience EPOCHS, no --time-budget), so that the load of the
# machine does not change the training. Reuses a tune_dagger.sh work folder SRC
# (its synth data data<seed>/, the oracle runs oracle/ and round 0's data
# r0/data) by symlinks; each arm gets WORK=OUT/<enc>_s<seed>.
#   bench/tune_epochs_seeds.sh [BUILD_DIR]
# Environment: SRC (/tmp/dg26/A), OUT (/tmp/rs9), EPOCHS (60), SEEDS ("1 6 11":
# ensemble seeds S..S+4, disjoint members), ENCODINGS ("steps steps,rsteps"),
# COLL (tile:xla), POLICIES ("-;--tile-max-changes 2 --tile-new-sizes"),
# JOBS (2 arms at a time), TUNE_S (1).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
P="$(pwd)/$BUILD/perfcast"
SRC="${SRC:-/tmp/dg26/A}"
OUT="${OUT:-/tmp/rs9}"
EPOCHS="${EPOCHS:-60}"
SEEDS="${SEEDS:-1 6 11}"
ENCODINGS="${ENCODINGS:-steps steps,rsteps}"
COLL="${COLL:-tile:xla}"
POLICIES="${POLICIES:--;--tile-max-changes 2 --tile-new-sizes}"
JOBS="${JOBS:-2}"
TUNE_S="${TUNE_S:-1}"
arm() {
    local enc="$1" seed="$2" W="$OUT/${1//,/_}_s$2"
    mkdir -p "$W/r0"
    for d in "$SRC"/data* "$SRC/oracle"; do
        [ -e "$W/$(basename "$d")" ] || ln -s "$d" "$W/$(basename "$d")"
    done
    [ -e "$W/r0/data" ] || ln -s "$SRC/r0/data" "$W/r0/data"
    if [ ! -f "$W/r0/model.st" ]; then
        local t0=$SECONDS
        "$P" train --data "$W/r0/data" --collection "$COLL" --out "$W/r0/model.st" \
            --epochs "$EPOCHS" --patience "$EPOCHS" --ensemble 5 --seed "$seed" \
            --threads 1 --encode "$enc" > "$W/r0/train.log" 2>&1
        echo "train_s $((SECONDS - t0))" >> "$W/r0/train.log"
    fi
    COLL="$COLL" ROUNDS=0 TRAIN_SEEDS="9 12" TUNE_S="$TUNE_S" EVAL_SEEDS="10 11" \
        POLICIES="$POLICIES" WORK="$W" bash bench/tune_dagger.sh "$BUILD" > "$W/summary.md" 2>&1
    echo "done $W"
}
n=0
for seed in $SEEDS; do for enc in $ENCODINGS; do
    arm "$enc" "$seed" &
    n=$((n + 1))
    [ $((n % JOBS)) -ne 0 ] || wait
done; done
wait
for seed in $SEEDS; do for enc in $ENCODINGS; do
    W="$OUT/${enc//,/_}_s$seed"
    echo "== $enc seed $seed ($(grep -c '^epoch' "$W/r0/train.log") epochs logged, $(tail -1 "$W/r0/train.log"))"
    /usr/bin/python3 bench/tune_dagger_sets.py "$W" 0
done; done
