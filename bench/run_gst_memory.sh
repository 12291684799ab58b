#!/usr/bin/env bash
# Issue #4, memory: peak RSS of Graph Segment Training vs full-graph training on
# synthetic layout graphs of ~100k+ nodes with 1,000 configurations each.
#
# usage: bash bench/run_gst_memory.sh [BUILD_DIR] [WORK_DIR] [STEPS]
#
# Every training run takes STEPS (default 1) optimizer steps with K=16 configs,
# hidden 64, 3 layers, then stops (--stop-after-steps; with 2 train graphs and
# STEPS < 2 no validation pass runs, so only training is measured). Each run is
# its own process under /usr/bin/time; timed runs hold /tmp/perfcast_bench.lock.
set -u
BUILD=${1:-build}
WORK=${2:-/tmp/pcb}
STEPS=${3:-1}
PC=$BUILD/perfcast
DATA=$WORK/mem100k
LOCK=/tmp/perfcast_bench.lock
mkdir -p "$WORK"

echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(free -g | awk '/Mem:/{print $2" GiB RAM, "$7" GiB available"}')"
if [ ! -d "$DATA/npz" ]; then
    /usr/bin/time -f 'synth: %e s %M KB' "$PC" synth --out "$DATA" --seed 1 \
        --collections layout:xla:random --graphs 2 --layout-nodes 100000 --layout-configs 1000
fi
"$PC" stats "$DATA"

COMMON=(--data "$DATA" --collection layout:xla:random --stop-after-steps "$STEPS"
        --configs 16 --hidden 64 --layers 3 --progress never --seed 1)

# run NAME ARGS...: one training process, its time and peak RSS, under the lock
run() {
    local name=$1; shift
    rm -f "$WORK/m_$name.st" "$WORK/m_$name.st.state"
    echo "## $name: $*  (uptime:$(uptime | sed 's/.*load average//'))"
    flock "$LOCK" /usr/bin/time -f "RESULT $name %e s %M KB rc %x" \
        "$PC" train "${COMMON[@]}" --out "$WORK/m_$name.st" "$@" 2>&1 | grep -v '^state saved\|continue with'
    rm -f "$WORK/m_$name.st.state"
}

# 1. the up-front refusal with an estimate (a low cap, so it refuses on any machine)
run full_cap8 --max-memory 8
# 2. full graph with the default cap (the available RAM); if it refuses, fewer configs
out=$(run full_k16 2>&1); echo "$out"
if echo "$out" | grep -q 'needs about'; then
    run full_k4 --configs 4
fi
# 3. GST
run gst_c1000 --gst --seg-size 1000
run gst_c2000 --gst --seg-size 2000
run gst_metis1000 --gst --segments metis --seg-size 1000
