#!/usr/bin/env bash
# loom beside PyTorch eager and torch.compile: the one command for the GPU machine.
#   here:   bash scripts/pack_device.sh            (stripped loom into .device/)
#   there:  LOOM_COMMIT=<sha> bash bench/run.sh [--quick] [--no-compile] [FILTER]
# run from the repo root with .device carried. FILTER is a regular expression on workload names
# (bench/workloads.txt). Prints a table last; writes latest.md, results.json, bench.png and
# log.txt to $OUT (or /tmp/loom-bench-results). Keeps itself under BENCH_BUDGET_S seconds (default
# 480) of starting new workloads: what is left is listed as not run.
set -uo pipefail
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/.device/lib:${LD_LIBRARY_PATH:-}
# A fresh kernel cache: loom's first compile in each process is a real one.
export LOOM_CACHE_DIR=${LOOM_CACHE_DIR:-$(mktemp -d /tmp/loom-cache.XXXXXX)}
export PYTHONUNBUFFERED=1
out=${OUT:-/tmp/loom-bench-results}
mkdir -p "$out"

loom=.device/bin/loom
[ -x "$loom" ] || loom=build/bin/loom
if [ ! -x "$loom" ]; then
  echo "bench/run.sh: no loom CLI in .device/bin or build/bin: run scripts/pack_device.sh here and carry .device" >&2
  exit 2
fi
python=${PYTHON:-python3}
if [ -z "${LOOM_COMMIT:-}" ]; then
  LOOM_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  export LOOM_COMMIT
fi

args=()
for a in "$@"; do args+=("$a"); done
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader || true
  "$loom" bench add --dim N=16777216 || echo "note: \`loom bench add\` failed; the per-workload reasons follow"
  "$python" bench/peer.py --loom "$loom" --out "$out" --budget-s "${BENCH_BUDGET_S:-480}" "${args[@]}"
} 2>&1 | tee "$out/log.txt"
rc=${PIPESTATUS[0]}
ls -la "$out"
exit "$rc"
