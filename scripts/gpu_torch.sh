#!/usr/bin/env bash
# loom.torch on the GPU machine, one call (carry .device.tar.xz from scripts/pack_device.sh):
# the compiled extension built from an empty cache, the torch tests, loom at a size of 0, and
# with BENCH=1 (BENCH_CTYPES=1) the host time a call of each module on the extension's (ctypes)
# path (bench/torch_host.py), then with MODELS=... the
# training benches of bench/torch_train.py (e.g. MODELS="resnet50_gn:eager,graphs:nhwc llama:eager:-",
# TRAIN_ARGS="--profile" added to each). SKIP_TESTS=1 skips the tests (a bench-only call).
#   bash scripts/gpu_torch.sh [pytest -k expression]
set -uo pipefail
tar -xJf .device.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib LOOM_LIBRARY=$PWD/.device/lib/libloom.so.0
# An empty cache unless LOOM_CACHE_DIR names one to keep (a later call on the same machine).
if [ -z "${LOOM_CACHE_DIR:-}" ]; then
  export LOOM_CACHE_DIR=/tmp/loom-cache-$$
  rm -rf "$LOOM_CACHE_DIR"
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch; print('torch', torch.__version__, 'cxx11 abi', torch._C._GLIBCXX_USE_CXX11_ABI)"
echo "== the extension, from an empty cache"
t0=$(date +%s.%N)
PYTHONPATH=$PWD/python python3 -c "
import loom.torch.ops as o
print('extension:', o.EXTENSION is not None, o.WHY or '')
"
echo "build + import: $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s"
log=$(ls "$LOOM_CACHE_DIR"/torch-extension/*/build-error.log 2>/dev/null | head -1)
[ -n "$log" ] && grep -E "error|Error" "$log" | head -40
echo "== a second import (cached)"
t0=$(date +%s.%N)
PYTHONPATH=$PWD/python python3 -c "import loom.torch.ops as o; assert o.EXTENSION is not None"
echo "import: $(python3 -c "print(round($(date +%s.%N) - $t0, 2))") s"
k=${1:-}
out=${OUT:-/tmp}
if [ "${SKIP_TESTS:-0}" != 1 ]; then
echo "== torch tests"
PYTHONUNBUFFERED=1 timeout 400 bash python/run_tests.sh .device -q ${k:+-k "$k"} >"$out/pytest-extension.txt" 2>&1
echo "pytest exit: $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$out/pytest-extension.txt" | tail -30
echo "== the ctypes path's tests"
LOOM_TORCH_EXTENSION=0 PYTHONUNBUFFERED=1 timeout 200 bash python/run_tests.sh .device tests/test_gpu_torch_modules.py -q ${k:+-k "$k"} >"$out/pytest-ctypes.txt" 2>&1
grep -E "^(FAILED|ERROR)|passed|failed" "$out/pytest-ctypes.txt" | tail -15
echo "== loom at a size of 0 (C++ Executor, CLI)"
.device/bin/loom_tests "[empty]" 2>&1 | tail -2
.device/bin/loom run layer_norm --dim N=0 2>&1 | tail -3
.device/bin/loom run group_norm_backward --dim N=0 2>&1 | tail -4
fi
if [ "${BENCH:-0}" = 1 ]; then
  echo "== host us a call (extension)"
  PYTHONPATH=$PWD/python taskset -c 5 python3 bench/torch_host.py --python-function --calls 1000 --rounds 7
fi
if [ "${BENCH_CTYPES:-0}" = 1 ]; then
  echo "== host us a call (ctypes)"
  LOOM_TORCH_EXTENSION=0 PYTHONPATH=$PWD/python taskset -c 5 python3 bench/torch_host.py --calls 1000 --rounds 3
fi
for spec in ${MODELS:-}; do
  IFS=: read -r model modes layouts <<<"$spec"
  echo "== $model $modes $layouts"
  timeout "${TRAIN_TIMEOUT:-300}" python3 bench/torch_train.py --model "$model" --modes "$modes" --layouts "$layouts" \
    --steps 15 ${TRAIN_ARGS:-}
done
