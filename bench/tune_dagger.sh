#!/usr/bin/env bash
# Issue #15: labelling the search's own proposals (DAgger, as Ansor/TVM do).
# For one collection COLL, rounds r = 0..ROUNDS:
#   train model r (default flags, --time-budget TRAIN_S, --ensemble ENSEMBLE,
#     --seed TSEED) on the data of round r (r = 0: synth's files of the
#     TRAIN_SEEDS, train split -> train, valid split -> valid);
#   evaluate: tune every held-out graph with model r under each policy of
#     POLICIES (";"-separated tune flags; "-" = the defaults), time the
#     proposals with `perfcast simulate`;
#   collect (r < ROUNDS): tune every train and valid graph of the training data
#     with model r and COLLECT_FLAGS (round r's entry, ";"-separated; --top K),
#     and `perfcast simulate PROPOSALS --merge FILE --out FILE` into a copy of
#     round r's data: round r+1's data (each graph's configs, plus the
#     proposals it lacked, labelled by the simulator).
# Held-out graphs: all splits of EVAL_SEEDS (seeds 10 and 11, as the fifth
# pass) and the benchmark's test graphs (tune_bench.sh: seed 1's test split,
# seeds 2 and 3's valid and test splits); none is ever labelled. The oracle
# (tune --oracle, --budget-s TUNE_S, its default region) is run once per
# held-out graph. bench/tune_dagger_summary.py prints the table per round.
#   bench/tune_dagger.sh [BUILD_DIR]
# Environment: COLL (layout:xla:default), ROUNDS (2), TRAIN_SEEDS ("9"),
# TRAIN_S (60), ENSEMBLE (5), TSEED (1), TUNE_S (2), K (5), THREADS (1),
# EVAL_SEEDS ("10 11"), BENCH_SEEDS ("1:test 2:valid,test 3:valid,test"),
# POLICIES (layout: "-;--max-changes 16"; tile: "-;--tile-max-changes -1
# --tile-new-sizes"), COLLECT_FLAGS (layout: "--risk 0 --max-changes 16;--risk
# 0 --max-changes 0"; tile: "--tile-max-changes -1 --tile-new-sizes"; the last
# entry serves the later rounds), TRAIN_FLAGS (extra train flags, e.g.
# "--encode steps,rsteps"; default none), WORK (the work folder, kept; default
# /tmp/dagger_<coll>_<tseed>), SCALE (synth's scale, small; tiny for a smoke run).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
P="$(pwd)/$BUILD/perfcast"
COLL="${COLL:-layout:xla:default}"
ROUNDS="${ROUNDS:-2}"
TRAIN_SEEDS="${TRAIN_SEEDS:-9}"
TRAIN_S="${TRAIN_S:-60}"
ENSEMBLE="${ENSEMBLE:-5}"
TSEED="${TSEED:-1}"
TUNE_S="${TUNE_S:-2}"
K="${K:-5}"
SCALE="${SCALE:-small}"
THREADS="${THREADS:-1}"
TRAIN_FLAGS="${TRAIN_FLAGS:-}"
EVAL_SEEDS="${EVAL_SEEDS:-10 11}"
BENCH_SEEDS="${BENCH_SEEDS:-1:test 2:valid,test 3:valid,test}"
name="${COLL//:/_}"
sub="npz/${COLL//://}"
case "$COLL" in
tile:*)
    POLICIES="${POLICIES:--;--tile-max-changes -1 --tile-new-sizes}"
    COLLECT_FLAGS="${COLLECT_FLAGS:---tile-max-changes -1 --tile-new-sizes}" ;;
*)
    POLICIES="${POLICIES:--;--max-changes 16}"
    COLLECT_FLAGS="${COLLECT_FLAGS:---risk 0 --max-changes 16;--risk 0 --max-changes 0}" ;;
esac
WORK="${WORK:-/tmp/dagger_${name}_$TSEED}"
mkdir -p "$WORK"
held=""  # "seed:split" of every held-out graph folder
hseeds="$EVAL_SEEDS"
for s in $EVAL_SEEDS; do held="$held $s:train $s:valid $s:test"; done
for e in $BENCH_SEEDS; do
    hseeds="$hseeds ${e%%:*}"
    IFS=, read -ra sps <<<"${e#*:}"
    for sp in "${sps[@]}"; do held="$held ${e%%:*}:$sp"; done
done
for s in $TRAIN_SEEDS; do
    for t in $hseeds; do
        [ "$s" != "$t" ] || { echo "TRAIN_SEEDS must not hold held-out seed $s" >&2; exit 2; }
    done
done
for s in $TRAIN_SEEDS $hseeds; do
    [ -d "$WORK/data$s" ] || "$P" synth --out "$WORK/data$s" --scale "$SCALE" --seed "$s" \
        --threads "$THREADS" --collections "$COLL" >/dev/null
done
# round 0's data: the training seeds' files (named s<seed>_<stem>.npz; simulate finds the
# graph by the stem of the proposals' file, not of the merged one)
D0="$WORK/r0/data"
if [ ! -d "$D0" ]; then
    for s in $TRAIN_SEEDS; do for split in train valid; do
        mkdir -p "$D0/$sub/$split"
        for f in "$WORK/data$s/$sub/$split"/*.npz; do
            cp "$f" "$D0/$sub/$split/s${s}_$(basename "$f")"
        done
    done; done
fi

IFS=';' read -ra pols <<<"$POLICIES"
IFS=';' read -ra cols <<<"$COLLECT_FLAGS"
# the oracle, once per held-out graph
for h in $held; do
    s="${h%%:*}" split="${h#*:}"
    for f in "$WORK/data$s/$sub/$split"/*.npz; do
        stem="$(basename "$f" .npz)" tag="$s-$split-$stem"
        o="$WORK/oracle/$tag/$stem.npz"
        [ -f "$WORK/oracle/$tag.sim.json" ] && continue
        mkdir -p "$(dirname "$o")"
        "$P" tune --oracle --synth-seed "$s" --synth-scale "$SCALE" "$f" --out "$o" \
            --budget-s "$TUNE_S" --seed 1 --threads "$THREADS" --json >/dev/null
        "$P" simulate "$o" --seed "$s" --scale "$SCALE" --json > "$WORK/oracle/$tag.sim.json"
        "$P" simulate "$f" --seed "$s" --scale "$SCALE" --json > "$WORK/oracle/$tag.src.json"
    done
done
for ((r = 0; r <= ROUNDS; r++)); do
    R="$WORK/r$r"
    M="$R/model.st"
    # shellcheck disable=SC2086
    [ -f "$M" ] || "$P" train --data "$R/data" --collection "$COLL" --out "$M" \
        --time-budget "$TRAIN_S" --ensemble "$ENSEMBLE" --seed "$TSEED" --threads "$THREADS" \
        $TRAIN_FLAGS > "$R/train.log" 2>&1
    for pi in "${!pols[@]}"; do
        flags="${pols[$pi]}"
        [ "$flags" = "-" ] && flags=""
        for h in $held; do
            s="${h%%:*}" split="${h#*:}"
            for f in "$WORK/data$s/$sub/$split"/*.npz; do
                stem="$(basename "$f" .npz)" tag="$s-$split-$stem"
                out="$R/eval/p$pi/$tag/$stem.npz"
                [ -f "$R/eval/p$pi/$tag.sim.json" ] && continue
                mkdir -p "$(dirname "$out")"
                # shellcheck disable=SC2086
                "$P" tune --model "$M" "$f" --out "$out" --budget-s "$TUNE_S" --seed 1 \
                    --threads "$THREADS" --json $flags > "$R/eval/p$pi/$tag.json"
                "$P" simulate "$out" --seed "$s" --scale "$SCALE" --json \
                    > "$R/eval/p$pi/$tag.sim.json"
            done
        done
    done
    [ "$r" -lt "$ROUNDS" ] || break
    N="$WORK/r$((r + 1))"
    [ -d "$N/data" ] && continue
    cf="${cols[$r]:-${cols[${#cols[@]} - 1]}}"
    rm -rf "$N.tmp" && mkdir -p "$N.tmp" && cp -r "$R/data" "$N.tmp/data"
    for s in $TRAIN_SEEDS; do for split in train valid; do
        for f in "$WORK/data$s/$sub/$split"/*.npz; do
            stem="$(basename "$f" .npz)"
            prop="$N.tmp/prop/$s-$split/$stem.npz"
            base="$N.tmp/data/$sub/$split/s${s}_$stem.npz"
            mkdir -p "$(dirname "$prop")"
            # shellcheck disable=SC2086
            "$P" tune --model "$M" "$f" --out "$prop" --top "$K" --budget-s "$TUNE_S" \
                --seed "$((r + 1))" --threads "$THREADS" $cf >/dev/null
            "$P" simulate "$prop" --seed "$s" --scale "$SCALE" --merge "$base" --out "$base" \
                --json > "$prop.sim.json"
        done
    done; done
    echo "round $((r + 1)) data: $cf" > "$N.tmp/collect.txt"
    mv "$N.tmp" "$N"
done
BENCH_SEEDS="$BENCH_SEEDS" /usr/bin/python3 bench/tune_dagger_summary.py "$WORK" "$ROUNDS" "$POLICIES"
