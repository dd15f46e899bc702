#!/usr/bin/env bash
# Stop 46's measurements on the final build: issue 22's workloads beside PyTorch (peer.py), the
# same bytes moved by a two-in one-out add (ceiling.py --add), fusions written with composite
# calls against the float64 reference, the split-sum rule against 73c25f8, the backward GPU
# tests and the torch tests. Output in $OUT/final.log, the peer table in $OUT/peer.md.
#   bash scripts/gpu_stop46_final.sh      (GPU machine; .device.tar.xz, .device-base.tar.xz carried)
set -u
tar -xJf .device.tar.xz && tar -xJf .device-base.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib LOOM_LIBRARY=$PWD/.device/lib/libloom.so.0 LOOM_CACHE_DIR=/tmp/loom-cache
export OUT=${OUT:-/tmp/out} PYTHONUNBUFFERED=1
mkdir -p "$OUT"
exec > >(tee "$OUT/final.log") 2>&1
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
L=.device/bin/loom
echo "== composite calls, against the reference"
run() {
  echo "-- $*"
  $L run "$@" >/tmp/run.txt 2>&1
  local rc=$?
  grep -vE "^\s+(kernel|plan) time" /tmp/run.txt
  echo "rc=$rc"
}
run examples/fusions/layer_norm_train.loom --dim N=4096 --dim D=4096
run examples/fusions/layer_norm_train.loom --dim N=3 --dim D=1531
run examples/fusions/layer_norm_train.loom --dim N=65544 --dim D=77
run examples/fusions/lstm_cell_train.loom --dim B=256 --dim H=1024
run examples/fusions/lstm_cell_train.loom --dim B=7 --dim H=129
for lo in "" "--layout x=nhwc --layout dy=nhwc"; do
  run examples/fusions/group_norm_backward_nhwc.loom --dim N=4 --dim C=128 --dim H=33 --dim W=35 $lo
  run examples/fusions/group_norm_backward_nhwc.loom --dim N=1 --dim C=96 --dim H=7 --dim W=9 $lo
done
echo "== A/B: split sums (base 73c25f8 vs new)"
LOOM_WORKLOADS=bench/workloads_split_sums.txt timeout 150 bash scripts/bench_ab.sh .device-base .device
echo "== peers (issue 22's workloads)"
timeout 240 python3 bench/peer.py --workloads bench/workloads_issue22.txt --out "$OUT/peer" --budget-s 220 2>&1 | tail -2
cp "$OUT/peer/latest.md" "$OUT/peer.md" 2>/dev/null
grep -E "^\| " "$OUT/peer.md" | cut -d'|' -f1-10
grep -E "^- " "$OUT/peer.md" | grep -i "runs [0-9] kernels\|rms_norm" | cut -c1-400
rm -rf "$OUT/peer"
echo "== same-byte adds (x and dy in, dx out)"
timeout 100 python3 bench/ceiling.py --add f16:16777216,f16:33554432,f16:67108864,bf16:33554432,f32:12845056,f16:268435456
echo "== backward GPU tests"
timeout 150 .device/bin/loom_tests "[gpu][backward],[gpu][segment]" 2>&1 | tail -2
echo "== torch tests"
timeout 100 bash python/run_tests.sh .device 2>&1 | tail -1
