#!/usr/bin/env bash
# On the GPU machine (.device.tar.xz carried and unpacked): the [gpu] tests, the fuzzer's random fusions run against
# the float64 reference (seeds 1 and 2: among them kernels with column reductions), and loom's
# GB/s for the column kernels under a few knobs (blocks per SM, threads per row).
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/dev_lib.sh
timeout 200 bash scripts/gpu_check.sh 2>&1 | grep -E "passed|failed|FAILED|exit status|with message" -A3 | head -30
for s in 1 2; do
  timeout 150 python3 scripts/fuzz_fusions.py --loom $L --seed $s --cases 300 --budget-s 120 --run 2>&1 | grep -E "^[0-9]+ ok|FAIL" | head -8
done
printf '%-40s %7s %7s %7s %7s %7s\n' workload default mb1 mb3 tpr128 tpr512
for w in "layer_norm_backward f16 4096 1024" "layer_norm_backward f16 4096 4096" "layer_norm_backward f16 4096 8192" \
         "layer_norm_backward f16 32768 1024" "layer_norm_backward f16 32768 4096" "rms_norm_backward bf16 8192 4096" \
         "rms_norm_backward bf16 32768 1024"; do
  set -- $w; a="$1 --dtype $2 --dim N=$3 --dim D=$4"
  printf '%-40s %7s %7s %7s %7s %7s\n' "$1 $2 $3x$4" "$(gbps $a)" "$(LOOM_TUNE_MIN_BLOCKS=1 gbps $a)" \
    "$(LOOM_TUNE_MIN_BLOCKS=3 gbps $a)" "$(LOOM_TUNE_THREADS_PER_ROW=128 gbps $a)" "$(LOOM_TUNE_THREADS_PER_ROW=512 gbps $a)"
done
