#!/usr/bin/env bash
# Stop 46's closing checks on the final build: the GPU suite, fusions written with composite calls
# and a sum of a fill against the float64 reference, and issue 22's reductions and LSTM cell
# forward beside PyTorch (the rows the peer table of gpu_stop46_final.sh does not hold).
#   bash scripts/gpu_stop46_close.sh      (GPU machine; .device.tar.xz carried)
set -u
tar -xJf .device.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib LOOM_LIBRARY=$PWD/.device/lib/libloom.so.0 LOOM_CACHE_DIR=/tmp/loom-cache
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1
mkdir -p "$OUT"
exec > >(tee "$OUT/close.log") 2>&1
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
L=.device/bin/loom
run() {
  echo "-- $*"
  $L run "$@" >/tmp/run.txt 2>&1
  local rc=$?
  grep -E "kernel [0-9]/|-> |error" /tmp/run.txt
  echo "rc=$rc"
}
echo "== fusions in composite calls; a sum of a fill"
run examples/fusions/lstm_cell_train.loom --dim B=256 --dim H=1024
run examples/fusions/lstm_cell_train.loom --dim B=7 --dim H=129
run bench/cases/sum_of_fill.loom --dim N=64 --dim D=100
run bench/cases/sum_of_fill.loom --dim N=3000 --dim D=70001
echo "== issue 22's reductions and the LSTM cell forward (loom bench GB/s)"
gb() { echo "$* : $($L bench "$@" --json 2>/dev/null | grep -oE '"gbps": [0-9.]+' | head -1)"; }
gb examples/fusions/sum_all.loom --dim N=67108864
gb examples/fusions/column_sum.loom --dim M=65536 --dim D=1024
gb examples/fusions/column_sum.loom --dim M=1024 --dim D=65536
gb lstm_cell --dim B=256 --dim H=1024 --dtype f16
timeout 120 python3 bench/reduce_peers.py
echo "== GPU suite"
timeout 330 .device/bin/loom_tests "[gpu]~[huge]" 2>&1 | tail -3
