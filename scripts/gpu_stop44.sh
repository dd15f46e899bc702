#!/usr/bin/env bash
# Stop 44 on one GPU: kernels that serve many batch sizes where they compiled one a size (weight
# gradients over few images: one block a channel looping to the count; row-and-column kernels
# over fewer rows than a full grid: the grid from the row sets' power of two), old build against
# new in turn (kernel times, checked against the reference), compiles over a range of sizes,
# then the GPU suite and the torch tests.     bash scripts/gpu_stop44.sh
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
   "layer_norm_backward --dim N=300 --dim D=4096"
   "rms_norm_backward --dim N=300 --dim D=4096")
echo "== A/B under LOOM_TUNE_SYMBOLIC=1: plan us (each kernel), old then new, two rounds"
for w in "${W[@]}"; do
  echo "-- $w: $(LOOM_TUNE_SYMBOLIC=1 .device/bin/loom run $w --iters 0 2>&1 | grep -E "^(result|FAIL)|mismatch|error" | head -2 | tr '\n' ' ')"
  for r in 1 2; do
    for v in old new new:RED_BLOCK=128 new:RED_BLOCK=256 new:RED_BLOCK=512; do
      b=.device; [ "$v" = old ] && b=.device-old
      knob=""; case $v in *=*) knob="LOOM_TUNE_${v#new:}";; esac
      echo "   $v: $(env LOOM_TUNE_SYMBOLIC=1 $knob LD_LIBRARY_PATH=$PWD/$b/lib python3 bench/bench_us.py $b/bin/loom $w)"
    done
  done
done
echo "== first calls over a range of sizes (default executor: exact first, then runtime sizes)"
for s in "group_norm_backward --dim C=64 --dim H=16 --dim W=16 --sizes N=2:41" "layer_norm_backward --dim D=1024 --sizes N=256:355" "instance_norm_backward --dim C=64 --dim H=28 --dim W=28 --sizes N=1:24"; do
  for b in .device-old .device; do
    rm -rf /tmp/loom-sizes; echo "-- $b $s: $(LOOM_CACHE_DIR=/tmp/loom-sizes LD_LIBRARY_PATH=$PWD/$b/lib $b/bin/loom bench $s 2>&1 | tail -3 | tr '\n' ' ')"
  done
done
echo "== GPU suite"
timeout 300 .device/bin/loom_tests "[gpu]~[huge]" 2>&1 | tail -2
echo "== torch tests"
timeout 200 bash python/run_tests.sh .device 2>&1 | tail -2
