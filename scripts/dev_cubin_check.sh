#!/usr/bin/env bash
# One device call (.device.tar.xz carried and unpacked): the [gpu] tests with kernels loaded as cubins, compile
# latency cubin vs PTX (measure_compile.sh), first calls over 20 sizes, a short soak sample, and
# the test past 2^32 elements; logs under $OUT, most important first.
set -uo pipefail
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/.device/lib:${LD_LIBRARY_PATH:-}
export LOOM_CACHE_DIR=/tmp/loom-cache
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ls /usr/local/cuda/lib64/libnvJitLink* 2>&1 | head -2
timeout 110 .device/bin/loom_tests "[gpu]~[huge]" --durations yes > "$out/gpu_tests.log" 2>&1
echo "gpu tests rc=$? notes: $(grep -c 'loom: note' "$out/gpu_tests.log")"; grep -m3 "loom: note" "$out/gpu_tests.log"
tail -3 "$out/gpu_tests.log"
timeout 45 bash scripts/measure_compile.sh > "$out/compile.txt" 2>&1; cat "$out/compile.txt"
timeout 20 .device/bin/loom bench layer_norm --dim D=4096 --sizes N=4093:4112 > "$out/sizes.txt" 2>&1; tail -3 "$out/sizes.txt"
SANITIZE=0 SOAK_BUDGET_S=25 timeout 40 bash scripts/soak_gpu.sh 3000 16 7 > "$out/soak.txt" 2>&1; tail -6 "$out/soak.txt"
timeout 60 .device/bin/loom_tests "[huge]" > "$out/huge.log" 2>&1; echo "huge rc=$?"; tail -2 "$out/huge.log"
