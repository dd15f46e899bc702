#!/usr/bin/env bash
# On the GPU machine (.device.tar.xz carried and unpacked): every [gpu] test, every backward built-in run against
# the float64 reference (both memory orders, odd sizes), then the backward workloads beside
# PyTorch. Writes the peer table to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/dev_lib.sh
timeout 240 bash scripts/gpu_check.sh 2>&1 | grep -E "passed|failed|FAILED|exit status" | tail -4
for n in layer_norm_backward rms_norm_backward softmax_backward log_softmax_backward lstm_cell_backward gru_cell_backward; do check $n; done
for n in group_norm_backward batch_norm_backward instance_norm_backward layer_norm_2d_backward; do check $n; check $n --layout x=nhwc --layout dy=nhwc; done
check layer_norm_backward --dim N=3 --dim D=1531; check layer_norm_backward --dtype bf16 --dim N=65544 --dim D=77
check rms_norm_backward --dtype f32 --dim N=1 --dim D=4099; check group_norm_backward --dim N=1 --dim C=96 --dim H=7 --dim W=9
check batch_norm_backward --dtype f16 --dim N=1 --dim C=3 --dim H=5 --dim W=3 --layout x=nhwc --layout dy=nhwc
BENCH_BUDGET_S=${BENCH_BUDGET_S:-200} timeout 300 bash bench/run.sh --workloads bench/workloads_backward.txt 2>&1 | tail -16
