#!/usr/bin/env bash
# Issue #14 ablation: what a user gets from `train --data --collection --out
# --time-budget B` (the defaults), against each technique on/off, the previous
# defaults, and an XGBoost pairwise ranker on the same data and budget.
#
# usage: bash bench/run_ablation14.sh [BUILD_DIR] [WORK_DIR] [BUDGET_S] [SEEDS] [SCALE]
#
# Per seed s: data = `synth --scale SCALE --seed s`; holdout = `synth --seed 1000+s`, its
# TRAIN split (never trained or selected on). Every variant trains with
# `--time-budget BUDGET_S --seed s --threads 2` plus the variant's flags and is scored
# by `perfcast eval` on valid and on the holdout. "old_defaults" adds
# `--epochs 20 --patience 5` (what the budget-only command did before issue #14).
# XGBoost: bench/xgb_baseline.py, same budget, 2 threads.
# env COLLS, VARIANTS: subsets; RES: the results file; APPEND=1 adds to it. Results: WORK/abl14.jsonl, then the table
# (mean ± std over seeds and a 95% t-interval of the mean) of bench/ablation14_table.py.
set -u
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
BUILD=${1:-build}
WORK=${2:-/tmp/abl14}
B=${3:-30}
SEEDS=${4:-3}
SCALE=${5:-small}
PY=/usr/bin/python3
mkdir -p "$WORK"
PC=$WORK/perfcast
cp "$BUILD/perfcast" "$PC"
RES=${RES:-$WORK/abl14.jsonl}
[ -n "${APPEND:-}" ] || : >"$RES"
cd "$(dirname "$0")/.."
echo "# $("$PC" --version); $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); budget ${B}s; seeds 1..$SEEDS; scale $SCALE; $(date -u +%FT%TZ)"
COLLS=${COLLS:-tile:xla layout:xla:random layout:xla:default}
T0=$(date +%s)

flags() { # variant -> extra training flags
    case $1 in
        defaults) ;;
        old_defaults) echo "--epochs 20 --patience 5" ;;
        margin) echo "--loss margin:1" ;;
        listmle_margin) echo "--loss listmle:1,margin:1" ;;
        attention) echo "--cfg-attention 2" ;;
        no_attention) echo "--cfg-attention 0" ;;
        fast) echo "--sampling fast" ;;
        uniform) echo "--sampling uniform" ;;
        dedup) echo "--dedup" ;;
        ensemble3) echo "--ensemble 3" ;;
        ensemble1) echo "--ensemble 1" ;;
        roofline) echo "--encode all,roofline" ;;
        mismatch) echo "--encode all,mismatch" ;;
        tile_roofline) echo "--encode roofline" ;;
        *) echo "unknown variant $1" >&2; return 1 ;;
    esac
}

for s in $(seq "$SEEDS"); do
    [ -d "$WORK/d$s/npz" ] || "$PC" synth --out "$WORK/d$s" --scale "$SCALE" --seed "$s" \
        --collections tile:xla,layout:xla:random,layout:xla:default >/dev/null
    [ -d "$WORK/h$s/npz" ] || "$PC" synth --out "$WORK/h$s" --scale "$SCALE" --seed $((1000 + s)) \
        --collections tile:xla,layout:xla:random,layout:xla:default >/dev/null
done

for coll in $COLLS; do
    if [ "$coll" = tile:xla ]; then def="defaults old_defaults margin listmle_margin fast dedup ensemble3 tile_roofline"
    else def="defaults old_defaults margin listmle_margin attention fast dedup ensemble3 roofline mismatch"; fi
    for v in ${VARIANTS:-$def}; do
        [ "$v" = xgboost ] && continue
        f=$(flags "$v") || continue
        for s in $(seq "$SEEDS"); do
            m=$WORK/m.st log=$WORK/log_${v}_${coll//:/_}_s$s.txt
            rm -f "$m" "$m.state"
            t0=$(date +%s.%N)
            # shellcheck disable=SC2086
            "$PC" train --data "$WORK/d$s" --collection "$coll" --out "$m" --time-budget "$B" \
                --seed "$s" --threads 2 $f >"$log" 2>&1
            rc=$?
            t1=$(date +%s.%N)
            if [ $rc -ne 0 ] || [ ! -f "$m" ]; then
                echo "  $coll $v s$s: train failed (rc $rc): $(tail -1 "$log")"
                continue
            fi
            for split in valid holdout; do
                if [ $split = valid ]; then e=$("$PC" eval --model "$m" --data "$WORK/d$s" --split valid --threads 2 --json)
                else e=$("$PC" eval --model "$m" --data "$WORK/h$s" --split train --threads 2 --json); fi
                echo "{\"seed\": $s, \"collection\": \"$coll\", \"method\": \"$v\", \"split\": \"$split\", \"train_s\": $(printf "%.1f" "$(echo "$t1 - $t0" | bc)"), \"eval\": $e}" >>"$RES"
            done
            echo "  [$(( $(date +%s) - T0 )) s] $coll $v s$s: $(tail -1 "$log")"
        done
    done
    if [ -z "${VARIANTS:-}" ] || [[ " ${VARIANTS} " == *" xgboost "* ]]; then
        for s in $(seq "$SEEDS"); do
            $PY bench/xgb_baseline.py "$WORK/d$s" "$s" "$B" "$WORK/h$s" "$coll" >>"$RES"
            echo "  [$(( $(date +%s) - T0 )) s] $coll xgboost s$s"
        done
    fi
done
echo "# total $(( $(date +%s) - T0 )) s; results $RES"
$PY bench/ablation14_table.py "$RES"
