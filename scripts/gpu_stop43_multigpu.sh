#!/usr/bin/env bash
# Stop 43 on a machine with two GPUs (nvidia-h100-x2): loom on GPU 1. The executor tests (another
# GPU refused once loom runs on one), the CLI on --device 1, the torch tests (a fresh process on
# the last GPU), and data-parallel training over both GPUs with loom's norms (bench/torch_ddp.py).
#   bash scripts/gpu_stop43_multigpu.sh
set -u
tar -xJf .device.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib LOOM_LIBRARY=$PWD/.device/lib/libloom.so.0 LOOM_CACHE_DIR=/tmp/loom-cache
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
.device/bin/loom_tests "[executor]" 2>&1 | tail -2
for dev in 1 0; do
  .device/bin/loom run layer_norm_backward --device $dev --iters 0 2>&1 | grep -E "on GPU|rel err|error" | head -4
done
.device/bin/loom run group_norm --device 2 2>&1 | tail -1
.device/bin/loom bench layer_norm --device 1 --iters 20 2>&1 | grep -E "GPU|GB/s" | head -3
timeout 240 bash python/run_tests.sh .device 2>&1 | tail -2
echo "== data-parallel training, 2 processes"
timeout 300 torchrun --nproc_per_node=2 bench/torch_ddp.py --steps 12 2>&1 | grep -v "^W\|OMP_NUM_THREADS\|^\*\*\*" | tail -8
