#!/usr/bin/env bash
# On the GPU machine (.device.tar.xz carried and unpacked): the [gpu] tests, group norm backward in channels-last
# against the float64 reference at odd shapes, and its GB/s (plan; first kernel's time) under
# the grid tier's knobs (groups of blocks, two fill buffers, no grid tier).
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/dev_lib.sh
timeout 240 bash scripts/gpu_check.sh 2>&1 | grep -E "passed|failed|FAILED|exit status|with message" -A3 | head -30
nhwc="--layout x=nhwc --layout dy=nhwc"
for s in "2 128 61 67" "3 96 33 35" "1 64 128 128" "32 128 256 256"; do
  set -- $s
  for t in f16 bf16 f32; do check group_norm_backward --dtype $t --dim N=$1 --dim C=$2 --dim H=$3 --dim W=$4 $nhwc; done
done
# plan GB/s and the first kernel's own GB/s and ms
kern() {
  $L bench "$@" --json --iters 30 2>/dev/null | python3 -c '
import json,sys; j=json.loads(sys.stdin.read()); k=j["plan"][0]
print("%.0f %.0f %.3f" % (j["gbps"], k["gbps"], k["time_ms"]))' 2>/dev/null || echo ERR
}
printf '%-34s %-16s %s\n' workload knob "plan-GB/s k1-GB/s k1-ms"
for w in "group_norm_backward f16 N=32,C=128,H=256,W=256" "group_norm_backward bf16 N=16,C=256,H=128,W=128" \
         "group_norm_backward f32 N=8,C=64,H=224,W=224" "group_norm f16 N=32,C=128,H=256,W=256"; do
  set -- $w; a="$1 --dtype $2 $(echo $3 | sed 's/\([A-Z]*=[0-9]*\)/--dim \1/g; s/,/ /g') --layout x=nhwc"
  [[ $1 == *backward ]] && a="$a --layout dy=nhwc"
  for e in "" LOOM_TUNE_GRID_GROUPS=2 LOOM_TUNE_GRID_GROUPS=4 LOOM_TUNE_GRID_PREFETCH=1 "LOOM_TUNE_GRID_GROUPS=2 LOOM_TUNE_GRID_PREFETCH=1" LOOM_NO_GRID=1; do
    printf '%-34s %-16s %s\n' "$1 $2 $3" "${e:-default}" "$( (for v in $e; do export "$v"; done; kern $a) )"
  done
done
