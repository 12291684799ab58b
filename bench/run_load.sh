#!/usr/bin/env bash
# Load benchmark: perfcast vs numpy.load on the same realistic layout file,
# side by side in one run. Each measurement runs in its own process, so peak
# RSS is per mode. Prints a table; copy it into bench/RESULTS.md.
#   bench/run_load.sh [BUILD_DIR] [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
BENCH="$BUILD/bench/bench_load"
REPS="${2:-5}"
PY=/usr/bin/python3
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

$PY bench/make_layout_file.py "$WORK/layout_c.npz"
$PY bench/make_layout_file.py "$WORK/layout_s.npz" --stored
"$BENCH" build "$WORK/layout_c.npz" "$WORK/layout.pcc" >/dev/null
ls -l "$WORK"/layout_c.npz "$WORK"/layout_s.npz | awk '{print "# " $5 " bytes " $9}'
echo "# machine: $(nproc) cores, $(awk '/MemTotal/{print $2/1048576 " GiB"}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "# mode best_s peak_rss_mib checksum [load+touch_s] [numpy baseline rss]"
for f in c s; do
  echo "## file: layout_$f.npz ($([ $f = c ] && echo deflated || echo stored))"
  $PY bench/numpy_load.py npz "$WORK/layout_$f.npz" "$REPS"
  "$BENCH" npz "$WORK/layout_$f.npz" 1 "$REPS"
  "$BENCH" npz "$WORK/layout_$f.npz" 2 "$REPS"
  "$BENCH" graph "$WORK/layout_$f.npz" "$REPS"
done
echo "## cache: layout.pcc (uncompressed .npy, memory-mapped)"
$PY bench/numpy_load.py mmap "$WORK/layout.pcc" "$REPS"
"$BENCH" cache "$WORK/layout.pcc" "$REPS"
