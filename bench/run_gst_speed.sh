#!/usr/bin/env bash
# Issue #4, speed to quality: wall-clock time for full-graph training and for
# Graph Segment Training to first reach a fixed validation Kendall tau on large
# synthetic layout graphs (~30k nodes).
#
# usage: bash bench/run_gst_speed.sh [BUILD_DIR] [WORK_DIR] [BUDGET_S] [NODES] [CONFIGS]
#
# Both runs: same data, seed, K=16, hidden 64, 3 layers, --time-budget BUDGET_S
# (default 300), no early stop. The per-epoch log lines
# "epoch E loss L valid V best B (Ts)" give (T, V); the target tau is 0.9 x the
# best tau full-graph training reaches (override with TARGET=x). Elapsed times
# include validation after every epoch (same valid graphs for both).
# Environment: SEEDS (training seeds, default "1"; the data is always synth seed 2),
# FLAGS (model flags of both runs, default "--prune-hops 0 --join early --encode none":
# the whole graph through the GNN per config, the case GST exists for; the layout
# defaults prune to 1 hop and join late, which leaves GST little to do).
set -u
BUILD=${1:-build}
WORK=${2:-/tmp/pcb}
BUDGET=${3:-300}
NODES=${4:-30000}
CONFIGS=${5:-100}
PC=$BUILD/perfcast
DATA=$WORK/speed${NODES}_c$CONFIGS
LOCK=/tmp/perfcast_bench.lock
mkdir -p "$WORK"

echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
if [ ! -d "$DATA/npz" ]; then
    "$PC" synth --out "$DATA" --seed 2 --collections layout:xla:random --graphs 5 \
        --layout-nodes "$NODES" --layout-configs "$CONFIGS" | tail -1
fi
"$PC" stats "$DATA"

FLAGS=${FLAGS:---prune-hops 0 --join early --encode none}
# shellcheck disable=SC2206
COMMON=(--data "$DATA" --collection layout:xla:random --time-budget "$BUDGET" --epochs 10000
        --patience 10000 --configs 16 --hidden 64 --layers 3 --progress never --threads 2 $FLAGS)

run() {
    local name=$1; shift
    rm -f "$WORK/s_$name.st" "$WORK/s_$name.st.state"
    echo "## $name: $*  (uptime:$(uptime | sed 's/.*load average//'))"
    flock "$LOCK" /usr/bin/time -f "RESULT $name %e s %M KB rc %x" \
        "$PC" train "${COMMON[@]}" --out "$WORK/s_$name.st" "$@" 2>&1 | tee "$WORK/s_$name.log"
}

# time to target: first epoch whose valid tau >= TARGET
report() {
awk -v target="${TARGET:-}" -v seed="$1" '
    FNR == 1 { name = FILENAME; sub(/.*s_/, "", name); sub(/_[0-9]+\.log$/, "", name); names[++n] = name }
    /^epoch [0-9]+ loss/ {
        t = $NF; gsub(/[()s]/, "", t); v = $6
        k = ++cnt[name]; T[name, k] = t; V[name, k] = v
        if (!(name in best) || v > best[name]) best[name] = v
    }
    END {
        if (target == "") target = 0.9 * best["full"]
        printf "seed %s: target tau %.4f (%s)\n", seed, target, ENVIRON["TARGET"] == "" ? "0.9 x full best" : "given"
        for (i = 1; i <= n; i++) {
            nm = names[i]; hit[nm] = -1
            for (k = 1; k <= cnt[nm]; k++) if (V[nm, k] >= target) { hit[nm] = T[nm, k]; hitk[nm] = k; break }
            printf "seed %s %s: epochs %d, best tau %.4f, last epoch at %.1f s, reaches target %s\n", seed, nm,
                cnt[nm], best[nm], T[nm, cnt[nm]],
                hit[nm] < 0 ? "never" : sprintf("at %.1f s (epoch %d)", hit[nm], hitk[nm])
        }
        if (hit["full"] > 0 && hit["gst"] > 0)
            printf "seed %s speedup (full time / gst time to target): %.2fx\n", seed, hit["full"] / hit["gst"]
    }' "$WORK/s_full_$1.log" "$WORK/s_gst_$1.log"
}

for seed in ${SEEDS:-1}; do
    run "full_$seed" --seed "$seed"
    run "gst_$seed" --seed "$seed" --gst --seg-size 1000
done
for seed in ${SEEDS:-1}; do report "$seed"; done
