#!/usr/bin/env bash
# One device call (.device.tar.xz carried and unpacked): LOOM_TUNE_SYMBOLIC on the GPU (its [gpu] test, first calls
# over 100 sizes with and without it), then compile latency with cubins made in the background
# (measure_compile.sh). Logs under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/.device/lib:${LD_LIBRARY_PATH:-}
export LOOM_CACHE_DIR=/tmp/loom-cache-symbolic
out=${OUT:-/tmp}
timeout 120 .device/bin/loom_tests "[symbolic]" > "$out/symbolic_tests.log" 2>&1
echo "symbolic tests rc=$?"; tail -3 "$out/symbolic_tests.log"
for knob in 0 1; do
  echo "== bench --sizes, LOOM_TUNE_SYMBOLIC=$knob"
  if [ $knob = 1 ]; then export LOOM_TUNE_SYMBOLIC=1; else unset LOOM_TUNE_SYMBOLIC; fi
  timeout 60 .device/bin/loom bench bias_gelu --dim D=1024 --sizes N=4093:4192 > "$out/sizes_$knob.txt" 2>&1
  tail -2 "$out/sizes_$knob.txt"
  timeout 90 .device/bin/loom bench layer_norm --dim D=4096 --sizes N=4093:4192 > "$out/ln_sizes_$knob.txt" 2>&1
  tail -2 "$out/ln_sizes_$knob.txt"
  timeout 30 .device/bin/loom bench layer_norm --dim N=4093 --dim D=4096 | grep -E "traffic|host"
  timeout 30 .device/bin/loom bench bias_gelu --dim N=4096 --dim D=4096 | grep -E "traffic|host"
done
unset LOOM_TUNE_SYMBOLIC
timeout 90 bash scripts/measure_compile.sh
