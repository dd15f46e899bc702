#!/usr/bin/env bash
# On the GPU machine (from the repo root, with .device/ carried): runs the [gpu] tests and
# checked runs of the built-ins, then prints a short table. Developers and reviewers use this.
#   here:   bash scripts/pack_device.sh
#   there:  bash scripts/gpu_check.sh [catch2 test filter, default "[gpu]"]
set -uo pipefail
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/.device/lib:${LD_LIBRARY_PATH:-}
export LOOM_CACHE_DIR=${LOOM_CACHE_DIR:-/tmp/loom-cache}
loom=.device/bin/loom
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
filter=${1:-[gpu]}
out=${OUT:-/tmp}
.device/bin/loom_tests "$filter" --durations yes 2>&1 | tee "$out/gpu_tests.log" | tail -40
tests_rc=${PIPESTATUS[0]}
printf '\n%-16s %-8s %s\n' fusion result "detail"
for f in add bias_gelu lstm_cell gru_cell; do
  if r=$($loom run "$f" 2>&1); then status=ok; else status=FAIL; fi
  detail=$(echo "$r" | grep -E "rel err|kernel time|error" | tr -s ' ' | paste -sd';' | cut -c1-150)
  printf '%-16s %-8s %s\n' "$f" "$status" "$detail"
done
echo "gpu tests exit status: $tests_rc"
exit $tests_rc
