#!/usr/bin/env bash
# Stop 44, second call: the retuned classes (a thread a unit for unsplit rows; column grids
# rounded to a quarter octave) against the old build, three rounds; first calls over ranges of
# sizes; the symbolic GPU tests and the torch test of __cuda_array_interface__.
#   bash scripts/gpu_stop44b.sh
set -u
tar -xJf .device.tar.xz && tar -xJf .device-old.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib LOOM_LIBRARY=$PWD/.device/lib/libloom.so.0 LOOM_CACHE_DIR=/tmp/loom-cache
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
W=("group_norm_backward --dim N=2 --dim C=64 --dim H=16 --dim W=16"
   "group_norm_backward --dim N=4 --dim C=256 --dim H=16 --dim W=16"
   "group_norm_backward --dim N=2 --dim C=512 --dim H=32 --dim W=32 --dtype bf16"
   "instance_norm_backward --dim N=4 --dim C=64 --dim H=28 --dim W=28"
   "layer_norm_2d_backward --dim N=2 --dim C=96 --dim H=56 --dim W=56"
   "layer_norm_2d_backward --dim N=4 --dim C=192 --dim H=28 --dim W=28"
   "layer_norm_backward --dim N=257 --dim D=1024"
   "layer_norm_backward --dim N=383 --dim D=1024"
   "layer_norm_backward --dim N=600 --dim D=1024"
   "rms_norm_backward --dim N=129 --dim D=4096 --dtype bf16")
echo "== A/B under LOOM_TUNE_SYMBOLIC=1: plan us (each kernel); old, new, three rounds"
for w in "${W[@]}"; do
  echo "-- $w: $(LOOM_TUNE_SYMBOLIC=1 .device/bin/loom run $w 2>&1 | grep -iE "rel|error|mismatch|ok" | head -3 | tr '\n' ' ')"
  for r in 1 2 3; do
    for b in .device-old .device; do
      echo "   $b: $(env LOOM_TUNE_SYMBOLIC=1 LD_LIBRARY_PATH=$PWD/$b/lib python3 bench/bench_us.py $b/bin/loom $w)"
    done
  done
done
echo "== first calls over a range of sizes (default executor: exact first, then runtime sizes)"
for s in "layer_norm_backward --dim D=1024 --sizes N=256:355" "layer_norm_2d_backward --dim C=96 --dim H=56 --dim W=56 --sizes N=1:32"; do
  for b in .device-old .device; do
    rm -rf /tmp/loom-sizes; echo "-- $b $s: $(LOOM_CACHE_DIR=/tmp/loom-sizes LD_LIBRARY_PATH=$PWD/$b/lib $b/bin/loom bench $s 2>&1 | tail -3 | tr '\n' ' ')"
  done
done
echo "== GPU tests [symbolic], [executor]"
timeout 200 .device/bin/loom_tests "[gpu][symbolic],[executor]" 2>&1 | tail -2
echo "== torch test"
PYTHONPATH=$PWD/python timeout 100 python3 -m pytest -q python/tests/test_gpu_torch.py -k "cuda_array_interface or errors" 2>&1 | tail -2
