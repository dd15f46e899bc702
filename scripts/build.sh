#!/usr/bin/env bash
# Configures (once) and builds loom into ${LOOM_BUILD_DIR:-build}.
#   bash scripts/build.sh [ninja targets...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
dir=${LOOM_BUILD_DIR:-build}
extra=()
[ -n "${LOOM_CUDA_ROOT:-}" ] && extra+=("-DLOOM_CUDA_ROOT=$LOOM_CUDA_ROOT")
if [ ! -f "$dir/build.ninja" ]; then
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${extra[@]}" >/dev/null
fi
ninja -C "$dir" "$@"
