#!/usr/bin/env bash
# Stop 45's closing checks on the final build: the GPU suite, the torch tests, and the soak's
# random fusions with every other batch runtime-sized.   bash scripts/gpu_stop45_close.sh
set -u
tar -xJf .device.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib LOOM_LIBRARY=$PWD/.device/lib/libloom.so.0 LOOM_CACHE_DIR=/tmp/loom-cache
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
echo "== GPU suite"
timeout 300 .device/bin/loom_tests "[gpu]~[huge]" 2>&1 | tail -2
echo "== torch tests"
timeout 150 bash python/run_tests.sh .device 2>&1 | tail -1
echo "== soak, symbolic every other batch"
SANITIZE=0 SOAK_SYMBOLIC=1 SOAK_BUDGET_S=100 timeout 150 bash scripts/soak_gpu.sh 3000 16 45 2>&1 | tail -6
