#!/usr/bin/env bash
# Installs what perfcast needs on Debian 12 (if missing) and builds it.
#   scripts/setup.sh [BUILD_DIR] [extra cmake args...]
# Idempotent: a second run only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

# Build and library packages; clang is for scripts/test.sh's clang build (and
# fuzz/run.sh), python3-numpy for tests and benchmarks only,
# python3-pip and python3-setuptools to install the Python package (python/).
PKGS=(build-essential clang cmake pkg-config libzip-dev zlib1g-dev libdeflate-dev libcjson-dev
      libopenmpi-dev openmpi-bin
      libcmocka-dev libopenblas-dev libmetis-dev libprotobuf-c-dev protobuf-c-compiler
      python3-numpy python3-scipy python3-torch python3-pip python3-setuptools)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

BUILD_DIR="${1:-build}"
shift || true
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"
