#!/usr/bin/env bash
# On the GPU machine: compute-sanitizer (memcheck over every run, racecheck on a subset) over loom
# runs that reach every scheduler tier. The normalization scheduler: registers, shared memory
# filled by the first pass, cp.async into shared memory, clusters, several channels-last groups
# per block, the cooperative grid (three groups of blocks too), vectors of rows (rows strided
# along their reduction), short rows held in shared memory by their own threads (thread fill),
# vectors of rows split over the grid, and row and column reductions in one kernel (backward
# passes). The pointwise scheduler (grid-stride, slices of gate matrices, concat outputs), and the
# reduction scheduler (reductions to one value and column sums, split over blocks).
#   bash scripts/sanitize.sh
set -uo pipefail
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/.device/lib:${LD_LIBRARY_PATH:-}
export LOOM_DISK_CACHE=0
L=.device/bin/loom
CS=${CS:-compute-sanitizer}
command -v "$CS" >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
runs=(
  "layer_norm --dtype bf16 --dim N=3 --dim D=1531"
  "layer_norm --dtype f16 --dim N=3 --dim D=65544"
  "rms_norm --dtype f32 --dim N=2 --dim D=262144"
  "softmax --dtype bf16 --dim N=2 --dim D=100000"
  "instance_norm --dtype f16 --dim N=2 --dim C=64 --dim H=160 --dim W=160 --layout x=nhwc"
  "group_norm --dtype f16 --dim N=2 --dim C=64 --dim H=160 --dim W=160 --layout x=nhwc"
  "group_norm --dtype f32 --dim N=2 --dim C=256 --dim H=64 --dim W=60 --layout x=nhwc"
  "group_norm --dtype f16 --dim N=1 --dim C=128 --dim H=256 --dim W=256"
  "batch_norm --dtype f32 --dim N=8 --dim C=32 --dim H=64 --dim W=64"
  "layer_norm --dtype f32 --dim N=3 --dim D=1048584"
  "batch_norm --dtype f32 --dim N=64 --dim C=3 --dim H=128 --dim W=128"
  "layer_norm_2d --dtype f16 --dim N=3 --dim C=5 --dim H=6 --dim W=10"
  "instance_norm --dtype f32 --dim N=3 --dim C=96 --dim H=13 --dim W=8 --layout x=nhwc"
  "layer_norm --dtype bf16 --dim N=9001 --dim D=256"
  "group_norm --dtype f16 --dim N=4 --dim C=128 --dim H=128 --dim W=128 --layout x=nhwc"
  "instance_norm --dtype f16 --dim N=5 --dim C=64 --dim H=61 --dim W=61 --layout x=nhwc"
  "batch_norm --dtype f32 --dim N=16 --dim C=96 --dim H=40 --dim W=40 --layout x=nhwc"
  "layer_norm_backward --dtype f16 --dim N=1531 --dim D=1000"
  "rms_norm_backward --dtype bf16 --dim N=65544 --dim D=77"
  "lstm_cell_backward --dtype f16 --dim B=33 --dim H=1531"
  "gru_cell_backward --dtype bf16 --dim B=7 --dim H=100"
  "group_norm_backward --dtype f16 --dim N=2 --dim C=64 --dim H=33 --dim W=17 --layout x=nhwc"
  "add --dim N=1048579"
  "lstm_cell --dtype f16 --dim B=37 --dim H=1000"
  "examples/fusions/sum_all.loom --dim N=16777259"
  "examples/fusions/column_sum.loom --dim M=65544 --dim D=77"
  "examples/fusions/column_sum.loom --dim M=3 --dim D=65544"
)
# Each run under the sanitizer in the background, SANITIZE_JOBS at once (the GPU has room for
# all of them); the lines print in the order above.
jobs=${SANITIZE_JOBS:-8}
tmp=$(mktemp -d)
check() {  # tool, limit, index, run
  local out rc
  out=$(timeout "$2" $CS --tool "$1" --error-exitcode 9 $L run $4 --iters 1 2>&1); rc=$?
  printf '%s\n%s\n' "$rc" "$(echo "$out" | grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|MISMATCH|error' | head -2 | tr '\n' ' ')" > "$tmp/$1.$3"
}
k=0
for r in "${runs[@]}"; do
  check memcheck "${MEMCHECK_S:-240}" $k "$r" &
  k=$((k + 1)); while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 0.2; done
done
race=(1 5 6 11 13 14 15 16 17 20 24 26)
for i in "${race[@]}"; do
  check racecheck "${RACECHECK_S:-240}" "$i" "${runs[$i]}" &
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 0.2; done
done
wait
fails=0 late=0
report() {  # tool, index
  local rc why
  rc=$(sed -n 1p "$tmp/$1.$2"); why=$(sed -n 2p "$tmp/$1.$2")
  printf '%-90s %s rc=%d %s\n' "${runs[$2]}" "$1" "$rc" "$why"
  if [ "$rc" -eq 124 ]; then echo "  ($1 ran past its limit: not a failure, not a pass)"; late=$((late + 1)); elif [ "$rc" -ne 0 ]; then fails=$((fails + 1)); fi
}
for k in "${!runs[@]}"; do report memcheck "$k"; done
for i in "${race[@]}"; do report racecheck "$i"; done
rm -rf "$tmp"
echo "sanitizer failures: $fails ($late of ${#runs[@]} + ${#race[@]} runs past their limit)"
