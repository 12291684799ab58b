#!/usr/bin/env bash
# Issue #4, pruning: speed and quality of --prune-hops K [--collapse-chains] on
# standard synthetic layout data (--scale small, xla random and default), and
# the node/edge reduction (bench/prune_stats.py, numpy).
#
# usage: bash bench/run_prune.sh [BUILD_DIR] [WORK_DIR] [EPOCHS] [SEED]
#
# Each run: same seed, defaults (K=16, hidden 64, 3 layers, early join),
# EPOCHS epochs (default 3), no early stop. Per-epoch time = elapsed
# at the last epoch line / epochs (includes the validation pass, which pruning
# also speeds up); valid = best validation Kendall tau.
set -u
BUILD=${1:-build}
WORK=${2:-/tmp/pcb}
EPOCHS=${3:-3}
SEED=${4:-1}
PC=$BUILD/perfcast
DATA=$WORK/small$SEED
LOCK=/tmp/perfcast_bench.lock
# env COLLS, VARIANTS: subsets. NOLOCK=1: skip the lock (when another session holds it for long; note it)
[ "${NOLOCK:-0}" = 1 ] && LOCK=/dev/null
mkdir -p "$WORK"
[ -d "$DATA/npz" ] || "$PC" synth --out "$DATA" --scale small --seed "$SEED" \
    --collections layout:xla:random,layout:xla:default | tail -1

echo "# node/edge reduction (train+valid+test, both collections share the graphs; random shown)"
/usr/bin/python3 "$(dirname "$0")/prune_stats.py" "$DATA/npz/layout/xla/random"

printf '%-20s %-22s %7s %9s %9s %s\n' collection variant epochs s/epoch best_tau uptime
for coll in ${COLLS:-layout:xla:random layout:xla:default}; do
    for variant in ${VARIANTS:-none hops1 hops2 hops1+collapse hops2+collapse}; do
        case $variant in
            none) args=() ;;
            hops1) args=(--prune-hops 1) ;;
            hops2) args=(--prune-hops 2) ;;
            hops1+collapse) args=(--prune-hops 1 --collapse-chains) ;;
            hops2+collapse) args=(--prune-hops 2 --collapse-chains) ;;
        esac
        out=$WORK/p_${coll//:/_}_$variant
        rm -f "$out.st" "$out.st.state"
        up=$(uptime | sed 's/.*load average: //; s/,//g')
        flock "$LOCK" "$PC" train --data "$DATA" --collection "$coll" --out "$out.st" \
            --epochs "$EPOCHS" --patience 10000 --seed "$SEED" --threads 2 \
            --progress never "${args[@]}" > "$out.log" 2>&1
        awk -v c="$coll" -v v="$variant" -v up="$up" '
            /^epoch [0-9]+ loss/ { e = $2; t = $NF; gsub(/[()s]/, "", t); if ($6 > b || e == 1) b = $6 }
            END { printf "%-20s %-22s %7d %9.2f %9.4f %s\n", c, v, e, (e ? t / e : 0), b, up }' "$out.log"
    done
done
