#!/usr/bin/env bash
# On the GPU machine (repo root, .device carried): loom alone, GB/s on the normalization shapes
# of the speed table (no PyTorch: `bench/run.sh` is the comparison). Optional: a workload-name
# regular expression. One line per workload: name, GB/s, % of copy, kernel µs.
#   bash scripts/perf_norm.sh [WORKLOAD_REGEX]
set -uo pipefail
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/.device/lib:${LD_LIBRARY_PATH:-}
export LOOM_CACHE_DIR=${LOOM_CACHE_DIR:-/tmp/loom-cache}
L=.device/bin/loom
source scripts/workloads.sh
one() {
  local name=$1
  shift
  j=$($L bench "$@" --json 2>&1)
  python3 - "$name" "$j" <<'PY'
import json, sys
name, text = sys.argv[1], sys.argv[2]
try:
    r = json.loads(next(l for l in text.splitlines() if l.startswith("{")))
    print(f"{name:36s} {r['gbps']:8.0f} GB/s {100 * r['fraction_of_copy']:5.0f}% copy "
          f"{1000 * r['time_ms']:9.1f} us  {r['kernels']} kernel(s), grid {r['kernel']['grid']} block {r['kernel']['block']}")
except Exception as e:
    print(f"{name:36s} FAILED: {text[-300:]}")
PY
}
for_each_workload "${1:-.}" one
