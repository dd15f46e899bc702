#!/usr/bin/env bash
# CPU side of the GPU soak's findings (tests/soak/cases.txt): each case still segments, compiles
# to PTX and evaluates on the float64 reference with its error bounds, without a crash or an
# internal error. The GPU runs them in scripts/soak_gpu.sh. ctest: soak_cases_cpu.
#   bash scripts/soak_cases_cpu.sh [LOOM=build/bin/loom]
set -uo pipefail
cd "$(dirname "$0")/.."
L=${1:-build/bin/loom}
fails=0 n=0
while read -r file rest; do
  [[ -z "$file" || "$file" == \#* ]] && continue
  n=$((n + 1))
  args=${rest//--iters 0 /}
  sizes=$(sed -E 's/--seed [0-9]+ ?//' <<<"$args")
  for cmd in "segment $file $sizes" "dump $file $sizes --stage ptx" "eval $file $args --bounds"; do
    if ! out=$($L $cmd 2>&1); then
      echo "FAILED: loom $cmd"; echo "$out" | tail -3; fails=$((fails + 1))
    fi
  done
done < tests/soak/cases.txt
echo "$n soak cases on the CPU, $fails failures"
[ "$fails" -eq 0 ]
