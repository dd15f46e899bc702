#!/usr/bin/env bash
# Stop 46: the reduction scheduler's knobs on issue 22's column sums (H100), two rounds each,
# beside PyTorch (bench/reduce_peers.py) in the same call.   bash scripts/gpu_stop46_colsum_sweep.sh
set -u
tar -xJf .device.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib LOOM_CACHE_DIR=/tmp/loom-cache
L=.device/bin/loom
gb() { $L bench "$@" --json 2>/dev/null | grep -oE '"gbps": [0-9.]+' | head -1 | grep -oE '[0-9]+' | head -1; }
for shape in "M=1024 D=65536" "M=65536 D=1024" "M=4096 D=16384" "M=16384 D=4096"; do
  set -- $shape
  line="$shape:"
  for knob in "" LOOM_TUNE_RED_BX=4 LOOM_TUNE_RED_BX=16 LOOM_TUNE_RED_UNROLL=8 LOOM_TUNE_RED_UNROLL=16 \
              LOOM_TUNE_RED_BLOCK=512 LOOM_TUNE_RED_BLOCK=128 LOOM_TUNE_RED_SPLIT=2; do
    a=$(env $knob $L bench examples/fusions/column_sum.loom --dim $1 --dim $2 --json 2>/dev/null | grep -oE '"gbps": [0-9]+' | grep -oE '[0-9]+$')
    b=$(env $knob $L bench examples/fusions/column_sum.loom --dim $1 --dim $2 --json 2>/dev/null | grep -oE '"gbps": [0-9]+' | grep -oE '[0-9]+$')
    line+=" ${knob:-default} $a/$b;"
  done
  echo "$line"
done
timeout 100 python3 bench/reduce_peers.py
