#!/usr/bin/env bash
# Stop 43's closing checks on a machine with two GPUs (nvidia-h100-x2): the GPU suite (CUDA graph
# captures, another GPU refused), loom on GPU 1 from the CLI, the torch tests (a process on the
# last GPU, training steps in a CUDA graph, double backward refused), the CUDA graph scenarios
# and data-parallel training over both GPUs.   bash scripts/gpu_stop43_verify.sh
set -u
tar -xJf .device.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib LOOM_LIBRARY=$PWD/.device/lib/libloom.so.0 LOOM_CACHE_DIR=/tmp/loom-cache
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
git log --oneline -1 | cut -c1-60
timeout 240 .device/bin/loom_tests "[gpu]~[huge]" 2>&1 | tail -2
.device/bin/loom run layer_norm_backward --device 1 --iters 0 2>&1 | grep -E "on GPU|rel err|error" | head -4
.device/bin/loom run group_norm --device 2 2>&1 | tail -1
timeout 150 bash python/run_tests.sh .device 2>&1 | tail -2
timeout 150 python3 bench/torch_cuda_graphs.py 2>&1 | tail -9
echo "== data-parallel training, 2 processes"
timeout 100 torchrun --nproc_per_node=2 bench/torch_ddp.py --steps 12 2>&1 | grep -E "^rank|images/s|largest|Error" | tail -5
