#!/usr/bin/env bash
# Stop 45's closing checks on one GPU: first calls of compiled classes against the build before
# the class memo (scripts/gpu_stop45.sh, one round), the GPU suite and the torch tests.
#   bash scripts/gpu_stop45_final.sh
set -u
tar -xJf .device.tar.xz && tar -xJf .device-old.tar.xz
export LOOM_LIBRARY=$PWD/.device/lib/libloom.so.0
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
S=("layer_norm --dim D=4096 --sizes N=4093:4192"
   "layer_norm_backward --dim D=4096 --sizes N=4093:4192"
   "layer_norm_backward --dim D=1024 --sizes N=256:355"
   "rms_norm_backward --dtype bf16 --dim D=4096 --sizes N=4093:4192"
   "group_norm_backward --dim C=256 --dim H=32 --dim W=32 --sizes N=2:51"
   "instance_norm_backward --dtype f32 --dim C=64 --dim H=56 --dim W=56 --sizes N=2:41"
   "lstm_cell_backward --dim H=1024 --sizes B=200:299"
   "softmax_backward --dim D=4096 --sizes N=4093:4192"
   "layer_norm_2d_backward --dim C=96 --dim H=56 --dim W=56 --sizes N=1:32")
for s in "${S[@]}"; do
  for b in .device-old .device; do
    rm -rf /tmp/loom-sizes
    echo "-- $b $s"
    LOOM_CACHE_DIR=/tmp/loom-sizes LD_LIBRARY_PATH=$PWD/$b/lib timeout 120 $b/bin/loom bench $s 2>&1 | tail -3
  done
done
export LD_LIBRARY_PATH=$PWD/.device/lib LOOM_CACHE_DIR=/tmp/loom-cache
echo "== GPU suite"
timeout 300 .device/bin/loom_tests "[gpu]~[huge]" 2>&1 | tail -2
echo "== torch tests"
timeout 200 bash python/run_tests.sh .device 2>&1 | tail -2
