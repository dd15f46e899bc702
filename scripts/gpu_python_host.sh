#!/usr/bin/env bash
# Issue 24 on the GPU machine, one call: the package's host time per call, old vs new (old = a
# python/ tree in $1, e.g. from `git archive`), piece by piece, and timm convnext_base training
# with loom's LayerNorm2d only and with every norm swapped, beside the stock model.
#   bash scripts/gpu_python_host.sh OLD_PY_ROOT [eager|compile|both] [SWAPS]
# SWAPS: bench/torch_convnext.py's --swap (default LayerNorm2d,all).
set -uo pipefail
old=$1 modes=${2:-eager} swaps=${3:-LayerNorm2d,all}
tar -xJf .device.tar.xz && export LD_LIBRARY_PATH=$PWD/.device/lib
export LOOM_LIBRARY=$PWD/.device/lib/libloom.so.0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== GPU executor tests"
.device/bin/loom_tests "[executor]" 2>&1 | tail -2
echo "== torch tests (new package)"
timeout 240 bash python/run_tests.sh .device 2>&1 | tail -3
echo "== host us a call, old vs new, pinned to core 5, 3 processes each"
for i in 1 2 3; do
  for root in "$old" python; do taskset -c 5 python3 bench/python_overhead_ab.py "$root"; done
done
echo "== pieces, layer_norm 4x1024 (new package)"
taskset -c 5 python3 bench/python_call_host.py --shape 4,1024 --calls 2000
echo "== pieces, layer_norm 64x56x56x128 (new package)"
taskset -c 5 python3 bench/python_call_host.py --shape 64,56,56,128 --calls 400
if [ "$modes" = eager ] || [ "$modes" = both ]; then
  echo "== convnext_base eager"
  timeout 200 python3 bench/torch_convnext.py --modes eager --rounds 2 --swap "$swaps"
fi
if [ "$modes" = compile ] || [ "$modes" = both ]; then
  echo "== convnext_base torch.compile"
  timeout 330 python3 bench/torch_convnext.py --modes compile --steps 15 --swap "$swaps"
fi
