#!/usr/bin/env bash
# On the GPU machine (.device.tar.xz carried and unpacked): the reduction scheduler's loads in
# flight capped at the units a thread has (new) against 4 always (LOOM_TUNE_RED_UNROLL=4, the
# kernels before: replay shows 0 kernels changed under it), on the workloads whose kernels
# changed, ROUNDS rounds alternating; then the same workloads' symbolic kernels
# (LOOM_TUNE_SYMBOLIC=1). Every line GB/s from `loom bench` (L2 flushed, median).
#   bash scripts/gpu_reduction_unroll.sh [ROUNDS]
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.device/lib:${LD_LIBRARY_PATH:-}
L=.device/bin/loom
rounds=${1:-3}
gbs() { "$L" bench "$@" 2>&1 | grep -oE "[0-9.]+ GB/s" | head -1 | cut -d' ' -f1; }
while read -r spec; do
  [ -z "$spec" ] && continue
  line="$spec |"
  for r in $(seq "$rounds"); do
    line="$line $(LOOM_TUNE_RED_UNROLL=4 gbs $spec)/$(gbs $spec)"
  done
  line="$line | sym $(LOOM_TUNE_SYMBOLIC=1 gbs $spec) $(LOOM_TUNE_SYMBOLIC=1 gbs $spec)"
  echo "$line"
done <<'EOF'
batch_norm_backward --dtype bf16 --layout x=nhwc --layout dy=nhwc
batch_norm_backward --dtype bf16 --dim N=64 --dim C=256 --dim H=28 --dim W=28 --layout x=nhwc --layout dy=nhwc
group_norm_backward --dtype f16 --layout x=nhwc --layout dy=nhwc
group_norm_backward --dtype bf16 --dim N=3 --dim C=128 --dim H=255 --dim W=257 --layout x=nhwc --layout dy=nhwc
instance_norm_backward --dtype f16 --dim N=64 --dim C=512 --dim H=28 --dim W=28 --layout x=nhwc --layout dy=nhwc
layer_norm_2d_backward --dtype f16 --dim N=32 --dim C=768 --dim H=14 --dim W=14
lstm_cell_backward --dtype f16 --dim B=256 --dim H=1024
lstm_cell_backward --dtype f32 --dim B=256 --dim H=1024
gru_cell_backward --dtype f16 --dim B=256 --dim H=1024
gru_cell_backward --dtype bf16 --dim B=200 --dim H=1024
EOF
