# One device call: the reduction scheduler's blocks a tile (half the SM's threads) against the
# build before (.device-old), 2 rounds, on the column reductions and the plans that hold them.
#   bash scripts/gpu_column_split.sh
set -u
L="--layout x=nhwc --layout dy=nhwc"
bash scripts/gpu_ab_two_builds.sh 2 \
  "batch_norm_backward --dim N=64 --dim C=64 --dim H=112 --dim W=112 --dtype f16 $L" \
  "batch_norm_backward --dim N=64 --dim C=64 --dim H=112 --dim W=112 --dtype f32 $L" \
  "batch_norm_backward --dim N=32 --dim C=64 --dim H=112 --dim W=112 --dtype f16 $L" \
  "batch_norm_backward --dim N=64 --dim C=256 --dim H=56 --dim W=56 --dtype f16 $L" \
  "batch_norm_backward --dim N=64 --dim C=256 --dim H=28 --dim W=28 --dtype f32 $L" \
  "batch_norm_backward --dim N=64 --dim C=128 --dim H=56 --dim W=56 --dtype bf16 $L" \
  "examples/fusions/column_sum.loom --dim M=65536 --dim D=1024" \
  "examples/fusions/column_sum.loom --dim M=1024 --dim D=65536" \
  "examples/fusions/column_sum.loom --dim M=8192 --dim D=8192" \
  "examples/fusions/column_sum.loom --dim M=1048576 --dim D=64" \
  "examples/fusions/column_sum.loom --dim M=8192 --dim D=1024" \
  "lstm_cell_backward --dim B=256 --dim H=1024" \
  "lstm_cell_backward --dim B=4096 --dim H=1024" \
  "gru_cell_backward --dim B=4096 --dim H=1024" \
  "instance_norm_backward --dim N=32 --dim C=64 --dim H=128 --dim W=128 --dtype f16" 2>&1 | grep -v "rel err"
export LD_LIBRARY_PATH=$PWD/.device/lib
for w in "lstm_cell_backward --dim B=256 --dim H=1024"; do .device/bin/loom bench $w 2>&1 | grep -E "kernel 1|^  kernel" | head -2 | cut -c1-120; done
timeout 240 .device/bin/loom_tests "[gpu]~[huge]" 2>&1 | tail -2
