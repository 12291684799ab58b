#!/usr/bin/env bash
# Issue #4, ablation: each technique on/off against the defaults, on synthetic
# layout (xla random and default) and tile data, SEEDS seeds each (the synth
# data seed = the training seed), fixed --time-budget; mean and std of the
# best validation metric (layout: Kendall tau; tile: tile score).
#
# usage: bash bench/run_ablation.sh [BUILD_DIR] [WORK_DIR] [LAYOUT_BUDGET_S] [TILE_BUDGET_S] [SEEDS]
#
# A budget written eN (e.g. e3) means a fixed N epochs instead of a time budget:
# deterministic, independent of the machine's load, so those runs skip the lock.
# env COLLS: subset of collections; VARIANTS: subset of variants (e.g. to rerun
# runs that a busy machine starved: the raw file is overwritten, keep a copy); LAYOUT_CONFIGS=N: synth --layout-configs N
# (fewer configs per valid graph make the all-configs validation pass cheaper).
set -u
# Passive OpenMP waits: with libgomp's spinning default, any third runnable
# process on this 2-core VM made some 2-thread runs collapse (1 epoch in 40 s
# instead of ~90), which a time budget turns into a quality number. Same
# policy for every variant; set OMP_WAIT_POLICY=active to measure the default.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
BUILD=${1:-build}
WORK=${2:-/tmp/pcb}
LB=${3:-40}
TB=${4:-20}
SEEDS=${5:-3}
PC=$BUILD/perfcast
LOCK=/tmp/perfcast_bench.lock
mkdir -p "$WORK"
RAW=$WORK/ablation_raw.txt
: > "$RAW"

for seed in $(seq 1 "$SEEDS"); do
    d=$WORK/abl$seed
    [ -d "$d/npz" ] || "$PC" synth --out "$d" --scale small --seed "$seed" \
        ${LAYOUT_CONFIGS:+--layout-configs "$LAYOUT_CONFIGS"} \
        --collections tile:xla,layout:xla:random,layout:xla:default | tail -1
done

for coll in ${COLLS:-layout:xla:random layout:xla:default tile:xla}; do
    if [ "$coll" = tile:xla ]; then
        budget=$TB
        variants="baseline encode_all sampling_fast join_late loss_hinge cfg_attention dedup"
    else
        budget=$LB
        variants="baseline prune_off encode_none sampling_fast join_early gst loss_listmle cfg_attention dedup"
    fi
    for v in ${VARIANTS:-$variants}; do
        case $v in
            baseline) args=() ;;
            prune_off) args=(--prune-hops 0) ;;  # the layout default is 1
            encode_all) args=(--encode all) ;;
            encode_none) args=(--encode none) ;;  # the layout default is all
            sampling_fast) args=(--sampling fast) ;;
            join_late) args=(--join late) ;;
            join_early) args=(--join early) ;;  # the layout default is late
            gst) args=(--gst) ;;
            loss_listmle) args=(--loss listmle:1) ;;
            loss_hinge) args=(--loss hinge:1) ;;
            cfg_attention) args=(--cfg-attention 2) ;;
            dedup) args=(--dedup) ;;
        esac
        for seed in $(seq 1 "$SEEDS"); do
            out=$WORK/a_${coll//:/_}_${v}_$seed
            rm -f "$out.st" "$out.st.state"
            up=$(uptime | sed 's/.*load average: //; s/,//g')
            case $budget in
                e*) stop=(--epochs "${budget#e}"); lock=() ;;
                *) stop=(--time-budget "$budget" --epochs 10000); lock=(flock "$LOCK") ;;
            esac
            "${lock[@]}" "$PC" train --data "$WORK/abl$seed" --collection "$coll" --out "$out.st" \
                "${stop[@]}" --patience 10000 --seed "$seed" \
                --threads 2 --progress never "${args[@]}" > "$out.log" 2>&1
            rc=$?
            awk -v c="$coll" -v v="$v" -v s="$seed" -v up="$up" -v rc=$rc '
                /^epoch [0-9]+ loss/ { e = $2; if (e == 1 || $6 > b) b = $6 }
                END { printf "%s %s %s %s %d %s rc=%s\n", c, v, s, (e ? b : "nan"), e, up, rc }' \
                "$out.log" | tee -a "$RAW"
        done
    done
done

echo
echo "| collection | variant | mean | std | n | epochs (mean) |"
echo "|---|---|---|---|---|---|"
awk '$4 != "nan" { k = $1 " " $2; if (!(k in n)) ord[++no] = k; n[k]++; s[k] += $4; q[k] += $4 * $4; ep[k] += $5 }
     END { for (i = 1; i <= no; i++) { k = ord[i]; m = s[k] / n[k]; sd = n[k] > 1 ? sqrt((q[k] - n[k] * m * m) / (n[k] - 1)) : 0
           split(k, a, " "); printf "| %s | %s | %.4f | %.4f | %d | %.1f |\n", a[1], a[2], m, sd, n[k], ep[k] / n[k] } }' "$RAW"
