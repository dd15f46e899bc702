#!/usr/bin/env bash
# Stop 42's closing device call on the final package (issue 24): the executor's GPU tests (a
# launch from a thread with no current context), the torch tests, and timm convnext_base
# training beside the stock model with loom's LayerNorm2d only and with every norm swapped,
# eager (2 rounds) and torch.compile (LayerNorm2d only).
#   bash scripts/gpu_stop42_final.sh
set -u
tar -xJf .device.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib LOOM_LIBRARY=$PWD/.device/lib/libloom.so.0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
.device/bin/loom_tests "[executor]" 2>&1 | tail -2
timeout 150 bash python/run_tests.sh .device 2>&1 | tail -2
echo "== convnext_base eager"
timeout 170 python3 bench/torch_convnext.py --modes eager --rounds 2 --swap LayerNorm2d,all
echo "== convnext_base torch.compile"
timeout 330 python3 bench/torch_convnext.py --modes compile --steps 15 --swap LayerNorm2d
