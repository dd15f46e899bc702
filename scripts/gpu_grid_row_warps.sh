set -u
L="--layout x=nhwc --layout dy=nhwc"
export LD_LIBRARY_PATH=$PWD/.device/lib
bash scripts/gpu_ab_two_builds.sh 2 \
  "group_norm_backward --dim N=32 --dim C=128 --dim H=256 --dim W=256 --dtype f16 $L" \
  "group_norm_backward --dim N=32 --dim C=128 --dim H=256 --dim W=256 --dtype bf16 $L" \
  "batch_norm_backward --dim N=16 --dim C=64 --dim H=224 --dim W=224 --dtype f32" 2>&1 | grep -v "rel err"
for e in LOOM_NONE=1 LOOM_NO_SUB_ROWS=1; do echo "== $e"; env $e .device/bin/loom bench group_norm_backward --dim N=32 --dim C=128 --dim H=256 --dim W=256 --dtype f16 $L 2>&1 | grep -E "traffic|kernel [0-9]" | cut -c1-140; done
bash scripts/gpu_cases.sh bench/cases/sub_rows_grid.txt
LOOM_WORKLOADS=bench/workloads_backward.txt SASS=1 bash scripts/profile_norm.sh 'group_norm_backward_32x128x256x256_nhwc' 2>&1 | tail -40
