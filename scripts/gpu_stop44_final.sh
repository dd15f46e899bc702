#!/usr/bin/env bash
# Stop 44's closing checks on one GPU: the GPU suite, the torch tests, and the soak's random
# fusions with every other batch under LOOM_TUNE_SYMBOLIC=1 (kernels taking their leading size
# at run time, where this stop widened what takes it).     bash scripts/gpu_stop44_final.sh
set -u
tar -xJf .device.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib LOOM_LIBRARY=$PWD/.device/lib/libloom.so.0 LOOM_CACHE_DIR=/tmp/loom-cache
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
echo "== GPU suite"
timeout 300 .device/bin/loom_tests "[gpu]~[huge]" 2>&1 | tail -2
echo "== torch tests"
timeout 200 bash python/run_tests.sh .device 2>&1 | tail -2
echo "== soak, symbolic every other batch"
SANITIZE=0 SOAK_SYMBOLIC=1 SOAK_BUDGET_S=200 timeout 280 bash scripts/soak_gpu.sh 6000 16 44 2>&1 | tail -12
