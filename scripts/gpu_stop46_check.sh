#!/usr/bin/env bash
# Stop 46, first checks of the new build: the GPU suite (with the backward built-ins at odd
# shapes in every dtype and layout, and the parameter gradients' determinism), fusions written
# with composite calls run against the float64 reference, and group/instance norm backward
# (split sums now one second kernel) against the build before (.device-base, 73c25f8).
#   bash scripts/gpu_stop46_check.sh      (GPU machine; .device.tar.xz, .device-base.tar.xz carried)
set -u
tar -xJf .device.tar.xz && tar -xJf .device-base.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib LOOM_LIBRARY=$PWD/.device/lib/libloom.so.0 LOOM_CACHE_DIR=/tmp/loom-cache
export OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
exec > >(tee "$OUT/check.log") 2>&1
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
L=.device/bin/loom
echo "== composite calls, against the reference"
$L run examples/fusions/layer_norm_train.loom --dim N=4096 --dim D=4096 2>&1 | tail -1
$L run examples/fusions/layer_norm_train.loom --dim N=3 --dim D=1531 2>&1 | tail -1
$L run examples/fusions/layer_norm_train.loom --dim N=65544 --dim D=77 2>&1 | tail -1
$L run examples/fusions/lstm_cell_train.loom --dim B=256 --dim H=1024 2>&1 | tail -1
$L run examples/fusions/lstm_cell_train.loom --dim B=7 --dim H=129 2>&1 | tail -1
for lo in "" "--layout x=nhwc --layout dy=nhwc"; do
  $L run examples/fusions/group_norm_backward_nhwc.loom --dim N=4 --dim C=128 --dim H=33 --dim W=35 $lo 2>&1 | tail -1
  $L run examples/fusions/group_norm_backward_nhwc.loom --dim N=1 --dim C=96 --dim H=7 --dim W=9 $lo 2>&1 | tail -1
done
echo "== A/B: split sums (base 73c25f8 vs new)"
LOOM_WORKLOADS=bench/workloads_split_sums.txt timeout 200 bash scripts/bench_ab.sh .device-base .device
echo "== GPU suite"
timeout 330 .device/bin/loom_tests "[gpu]~[huge]" 2>&1 | tail -4
