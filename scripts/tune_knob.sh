#!/usr/bin/env bash
# On the GPU machine: one tuning knob swept over workloads (a tuning aid; the knobs are `loom env`'s
# LOOM_TUNE_* and LOOM_NO_* switches). For each workload and each value prints the whole plan's
# GB/s and each kernel's grid and GB/s, so a rule can be read off the curve.
#   bash scripts/tune_knob.sh KNOB "VALUES" [WORKLOADS_FILE] [FILTER]
#   e.g. LOOM_TUNE_TWO_PASS=1 bash scripts/tune_knob.sh LOOM_TUNE_RED_SPLIT "default 33 66 132 264" \
#          bench/workloads_statistics.txt '_nhwc$'
# `default` runs without the knob set.
set -uo pipefail
cd "$(dirname "$0")/.."
knob=${1:?usage: tune_knob.sh KNOB \"VALUES\" [WORKLOADS_FILE] [FILTER]}
values=${2:?usage: tune_knob.sh KNOB \"VALUES\" [WORKLOADS_FILE] [FILTER]}
export LOOM_WORKLOADS=${3:-bench/workloads.txt}
filter=${4:-.}
export LD_LIBRARY_PATH=$PWD/.device/lib:${LD_LIBRARY_PATH:-}
export LOOM_DISK_CACHE=0
L=${LOOM_BIN:-.device/bin/loom}
. scripts/workloads.sh

summary() {  # a bench --json on stdin -> "whole [grid:GB/s ...]"
  python3 -c '
import json, sys
try:
    r = json.loads(sys.stdin.read())
except ValueError:
    print("FAIL"); sys.exit()
if not r.get("ok"):
    print("FAIL (%s)" % r.get("error", "?")); sys.exit()
ks = " ".join("%d:%.0f" % (k["grid"], k["gbps"]) for k in r["plan"])
print("%.0f [%s]" % (r["gbps"], ks))'
}

one() {
  local name=$1; shift
  local line v out
  line=$(printf '%-36s' "$name")
  for v in $values; do
    if [ "$v" = default ]; then out=$(env -u "$knob" "$L" bench "$@" --json 2>/dev/null | summary)
    else out=$(env "$knob=$v" "$L" bench "$@" --json 2>/dev/null | summary); fi
    line+=" | $v: $out"
  done
  echo "$line"
}

echo "# $knob over $values (${LOOM_WORKLOADS}, filter '$filter'); GB/s: whole [grid:GB/s a kernel]"
for_each_workload "$filter" one
