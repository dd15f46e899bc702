#!/usr/bin/env bash
# One device call (.device.tar.xz carried and unpacked; bash scripts/pack_device.sh here), for what this tree
# changed and has not yet run on a GPU, most important first, each under its own limit; logs
# under $OUT. A second call runs the soak: bash scripts/soak_gpu.sh.
#   1. every [gpu] test but [huge] and [symbolic] (kernels loaded as PTX, cubins made in the
#      background and loaded from the disk cache by later processes)
#   2. LOOM_TUNE_SYMBOLIC: its [gpu] test, first calls over 100 sizes with and without it, speed
#   3. compile latency (measure_compile.sh), then the test past 2^32 elements
set -uo pipefail
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/.device/lib:${LD_LIBRARY_PATH:-}
export LOOM_CACHE_DIR=/tmp/loom-cache-verify
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 240 .device/bin/loom_tests "[gpu]~[huge]~[symbolic]" --durations yes > "$out/gpu_tests.log" 2>&1
echo "gpu tests rc=$? (notes: $(grep -c 'loom: note' "$out/gpu_tests.log"))"; grep -E "FAILED|test cases|assertions" "$out/gpu_tests.log" | tail -4
timeout 200 bash scripts/dev_symbolic_check.sh 2>&1 | tail -30
timeout 90 .device/bin/loom_tests "[huge]" > "$out/huge.log" 2>&1; echo "huge rc=$?"; tail -2 "$out/huge.log"
