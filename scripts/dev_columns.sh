#!/usr/bin/env bash
# On the GPU machine (.device.tar.xz carried and unpacked): kernels with column reductions (layer norm backward's
# dx beside dw and db in one kernel). The [gpu] tests, the backward built-ins and ln_colsum
# against the float64 reference at odd sizes, dw bitwise over repeated runs, then loom's GB/s
# for the column kernels beside the two-kernel plans (LOOM_NO_COLUMNS=1) and a few knobs.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/dev_lib.sh
timeout 240 bash scripts/gpu_check.sh 2>&1 | grep -E "passed|failed|FAILED|exit status|with expansion|REQUIRE|CHECK" | head -30
for n in layer_norm_backward rms_norm_backward; do
  for d in f16 bf16 f32; do check $n --dtype $d; done
  check $n --dim N=3 --dim D=1531; check $n --dtype bf16 --dim N=65544 --dim D=77; check $n --dim N=4096 --dim D=8192
  check $n --dtype f32 --dim N=1 --dim D=4099; check $n --dim N=7 --dim D=3
done
check examples/fusions/ln_colsum.loom --dim N=4096 --dim D=1024; check examples/fusions/ln_colsum.loom --dim N=5 --dim D=70000
check examples/fusions/ln_colstats.loom --dim N=300 --dim D=1000
for n in group_norm_backward batch_norm_backward instance_norm_backward layer_norm_2d_backward; do check $n; check $n --layout x=nhwc --layout dy=nhwc; done
printf '%-44s %8s %8s %8s\n' workload cols nocols tpr512
for w in "layer_norm_backward f16 4096 1024" "layer_norm_backward f16 4096 4096" "layer_norm_backward f16 4096 8192" \
         "layer_norm_backward f16 4096 16384" "layer_norm_backward f16 32768 1024" "layer_norm_backward f16 32768 4096" \
         "rms_norm_backward bf16 8192 4096" "rms_norm_backward bf16 32768 1024" "rms_norm_backward bf16 2048 16384"; do
  set -- $w; a="$1 --dtype $2 --dim N=$3 --dim D=$4"
  printf '%-44s %8s %8s %8s\n' "$1 $2 $3x$4" "$(gbps $a)" "$(LOOM_NO_COLUMNS=1 gbps $a)" \
    "$(LOOM_TUNE_THREADS_PER_ROW=512 gbps $a)"
done
# Beside PyTorch eager and torch.compile on the same shapes (bench/peer.py), the whole plan.
BENCH_BUDGET_S=${BENCH_BUDGET_S:-200} timeout 290 bash bench/run.sh --workloads bench/workloads_backward.txt 2>&1 \
  | tee "${OUT:-/tmp}/backward_bench.txt" | tail -16
