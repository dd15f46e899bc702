#!/usr/bin/env bash
# On the GPU machine (.device.tar.xz carried and unpacked): reductions that take their reduced
# count (the batch) at run time. 1) the GPU tests of symbolic sizes (every count against the
# float64 reference); 2) the first call of 40 batch sizes of each backward built-in whose plan
# sums over the batch, in one process (compiles, disk-cache hits, time per first call), by
# default and with every size compiled exactly; 3) GB/s of exact kernels against symbolic ones
# (LOOM_TUNE_SYMBOLIC=1: what the Executor runs from a second batch size on), ROUNDS rounds.
#   bash scripts/gpu_symbolic_reductions.sh [ROUNDS]
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.device/lib:${LD_LIBRARY_PATH:-}
L=.device/bin/loom
rounds=${1:-2}
echo "== GPU tests: [gpu][symbolic]"
.device/bin/loom_tests "[gpu][symbolic]" 2>&1 | tail -3
export LOOM_CACHE_DIR=$(mktemp -d)
first() {  # name, sizes spec, dims...
  local name=$1 spec=$2; shift 2
  "$L" bench "$name" "$@" --sizes "$spec" 2>&1 | grep -E "^[0-9]+ sizes:|^first call:| compiled " | sed "s/^ */    /"
}
echo "== first calls of 40 batch sizes (one process each; empty disk cache per line)"
while read -r name spec dims; do
  [ -z "$name" ] && continue
  for mode in default exact; do
    export LOOM_CACHE_DIR=$(mktemp -d)
    echo "-- $name $spec $dims ($mode)"
    if [ $mode = exact ]; then LOOM_NO_AUTO_SYMBOLIC=1 first "$name" "$spec" $dims; else first "$name" "$spec" $dims; fi
  done
done <<'EOF'
group_norm_backward N=33:72 --dim C=128 --dim H=32 --dim W=32
instance_norm_backward N=33:72 --dim C=64 --dim H=32 --dim W=32
layer_norm_2d_backward N=33:72 --dim C=96 --dim H=14 --dim W=14
lstm_cell_backward B=60:99 --dim H=1024
layer_norm_backward N=4093:4132 --dim D=4096
batch_norm_backward N=33:72 --dim C=64 --dim H=28 --dim W=28 --layout x=nhwc --layout dy=nhwc --dtype f32
EOF
echo "== GB/s: exact vs symbolic (LOOM_TUNE_SYMBOLIC=1), $rounds rounds"
gbs() { "$L" bench "$@" 2>&1 | grep -oE "[0-9.]+ GB/s" | head -1; }
while read -r spec; do
  [ -z "$spec" ] && continue
  line="$spec:"
  for r in $(seq "$rounds"); do
    line="$line exact $(gbs $spec | cut -d' ' -f1) sym $(LOOM_TUNE_SYMBOLIC=1 gbs $spec | cut -d' ' -f1);"
  done
  echo "$line"
done <<'EOF'
group_norm_backward --dim N=32 --dim C=128 --dim H=256 --dim W=256
group_norm_backward --dim N=32 --dim C=128 --dim H=256 --dim W=256 --layout x=nhwc --layout dy=nhwc
group_norm_backward --dim N=33 --dim C=128 --dim H=64 --dim W=64
instance_norm_backward --dim N=32 --dim C=64 --dim H=128 --dim W=128
layer_norm_2d_backward --dim N=64 --dim C=768 --dim H=14 --dim W=14
layer_norm_2d_backward --dim N=64 --dim C=768 --dim H=14 --dim W=14 --layout x=nhwc --layout dy=nhwc
batch_norm_backward --dtype f32 --dim N=64 --dim C=256 --dim H=28 --dim W=28 --layout x=nhwc --layout dy=nhwc
batch_norm_backward --dtype f32 --dim N=50 --dim C=256 --dim H=28 --dim W=28 --layout x=nhwc --layout dy=nhwc
lstm_cell_backward --dim B=256 --dim H=1024
lstm_cell_backward --dim B=200 --dim H=1024
gru_cell_backward --dim B=256 --dim H=1024
EOF
