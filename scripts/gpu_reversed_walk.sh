#!/usr/bin/env bash
# On the GPU machine (.device.tar.xz carried and unpacked): reduction kernels of the outer layout
# walking their elements from the last (new) against from the first (LOOM_NO_REVERSED_WALK=1, the
# kernels before: replay shows 0 kernels changed under it), alternating, ROUNDS rounds, GB/s of
# the whole plan (`loom bench`, L2 flushed before each launch, median); then a soak of random
# fusions with kernels taking sizes at run time (LOOM_TUNE_SYMBOLIC=1) against the float64
# reference.
#   bash scripts/gpu_reversed_walk.sh [ROUNDS] [SOAK_CASES]
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.device/lib:${LD_LIBRARY_PATH:-}
L=.device/bin/loom
rounds=${1:-3} soak=${2:-2000}
gbs() { "$L" bench "$@" 2>&1 | grep -oE "[0-9.]+ GB/s" | head -1 | cut -d' ' -f1; }
echo "workload | forward/reversed GB/s per round"
while read -r spec; do
  [ -z "$spec" ] && continue
  line="$spec |"
  for r in $(seq "$rounds"); do line="$line $(LOOM_NO_REVERSED_WALK=1 gbs $spec)/$(gbs $spec)"; done
  echo "$line"
done <<'SPECS'
batch_norm_backward --dtype f32 --dim N=64 --dim C=256 --dim H=28 --dim W=28 --layout x=nhwc --layout dy=nhwc
batch_norm_backward --dtype bf16 --dim N=64 --dim C=256 --dim H=28 --dim W=28 --layout x=nhwc --layout dy=nhwc
batch_norm_backward --dtype f16 --dim N=64 --dim C=128 --dim H=56 --dim W=56 --layout x=nhwc --layout dy=nhwc
batch_norm_backward --dtype f16 --dim N=64 --dim C=64 --dim H=112 --dim W=112 --layout x=nhwc --layout dy=nhwc
batch_norm_backward --dtype f32 --dim N=128 --dim C=512 --dim H=7 --dim W=7 --layout x=nhwc --layout dy=nhwc
lstm_cell_backward --dim B=4096 --dim H=1024
lstm_cell_backward --dim B=256 --dim H=1024
gru_cell_backward --dim B=4096 --dim H=1024
layer_norm_2d_backward --dim N=64 --dim C=768 --dim H=14 --dim W=14 --layout x=nhwc --layout dy=nhwc
group_norm_backward --dim N=32 --dim C=128 --dim H=256 --dim W=256 --layout x=nhwc --layout dy=nhwc
examples/fusions/column_sum.loom --dim M=65536 --dim D=1024
examples/fusions/column_sum.loom --dim M=8192 --dim D=8192
examples/fusions/ln_colsum.loom --dim N=32768 --dim D=4096
SPECS
echo "== soak: $soak random fusions, LOOM_TUNE_SYMBOLIC=1"
LOOM_TUNE_SYMBOLIC=1 SANITIZE=0 SOAK_BUDGET_S=150 bash scripts/soak_gpu.sh "$soak" 16 41 2>&1 | tail -8
