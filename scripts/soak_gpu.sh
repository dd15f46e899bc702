#!/usr/bin/env bash
# On the GPU machine (.device.tar.xz carried and unpacked; bash scripts/pack_device.sh here): the GPU soak.
# First every earlier finding (tests/soak/cases.txt), then CASES random fusions (every op,
# dtype and layout, reductions to one value, two reduction patterns, gate matrices read as
# slices, sizes that do not divide) through segment, every kernel
# through ptxas, and `loom run` against the float64 reference (25 cases to a `loom run --batch`
# process, one CUDA context each; SOAK_BATCH sets it), JOBS at once; then
# compute-sanitizer memcheck and racecheck over every scheduler tier (scripts/sanitize.sh).
#   bash scripts/soak_gpu.sh [CASES=10000] [JOBS=16] [SEED=1]   (SANITIZE=0 skips the sanitizer;
#   SOAK_SYMBOLIC=1 runs every other batch under LOOM_TUNE_SYMBOLIC=1)
set -uo pipefail
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/.device/lib:${LD_LIBRARY_PATH:-}
# Every case is a new kernel: no disk cache (and so no background cubins competing for the cores).
export LOOM_DISK_CACHE=${LOOM_DISK_CACHE:-0}
cases=${1:-10000} jobs=${2:-16} seed=${3:-1}
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
echo "== earlier findings (tests/soak/cases.txt)"
.device/bin/loom run --batch tests/soak/cases.txt > "$out/soak_regressions.log" 2>&1
regress_rc=$?
grep -E "^== result|^== [0-9]+ cases" "$out/soak_regressions.log" | grep -v ": ok$"
echo "== fuzz_fusions --run: $cases cases, seed $seed, $jobs at once (budget ${SOAK_BUDGET_S:-540} s)"
python3 scripts/fuzz_fusions.py --loom .device/bin/loom --run --cases "$cases" --jobs "$jobs" --seed "$seed" --batch "${SOAK_BATCH:-25}" ${SOAK_SYMBOLIC:+--symbolic} \
  --budget-s "${SOAK_BUDGET_S:-540}" > "$out/soak_seed$seed.log" 2>&1
fuzz_rc=$?
grep -E "^[0-9]+ ok \(|^refused|^FAILED" -A1 "$out/soak_seed$seed.log" | head -40
san_rc=0
if [ "${SANITIZE:-1}" != 0 ]; then
  echo "== compute-sanitizer over every scheduler tier"
  bash scripts/sanitize.sh 2>&1 | tee "$out/sanitize.log" | tail -45
  san_rc=${PIPESTATUS[0]}
  grep -q "sanitizer failures: 0" "$out/sanitize.log" || san_rc=1
fi
echo "soak: earlier findings exit $regress_rc, fuzz exit $fuzz_rc, sanitizer exit $san_rc"
[ $regress_rc -eq 0 ] && [ $fuzz_rc -eq 0 ] && [ $san_rc -eq 0 ]
