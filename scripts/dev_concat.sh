#!/usr/bin/env bash
# On the GPU machine (.device.tar.xz carried and unpacked): the [gpu] tests (concat outputs among them), the
# fuzzer's random fusions against the float64 reference (seed 3: concat outputs, column
# reductions), the recurrent cells' backward built-ins against the reference at odd sizes, and
# lstm_cell_backward's time at B=256 H=1024 (issue 22: one kernel, at most 12 us).
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/dev_lib.sh
timeout 200 bash scripts/gpu_check.sh 2>&1 | grep -E "passed|failed|FAILED|exit status|with message" -A3 | head -30
timeout 170 python3 scripts/fuzz_fusions.py --loom $L --seed 3 --cases 400 --budget-s 150 --run 2>&1 | grep -E "^[0-9]+ ok|FAIL" | head -8
for n in lstm_cell_backward gru_cell_backward; do
  for d in f16 bf16 f32; do check $n --dtype $d; done
  check $n --dim B=1 --dim H=1; check $n --dim B=7 --dim H=3; check $n --dim B=256 --dim H=1024; check $n --dim B=33 --dim H=1531
done
for n in lstm_cell_backward gru_cell_backward lstm_cell gru_cell; do
  $L bench $n --dim B=256 --dim H=1024 --iters 200 2>&1 | grep -E "kernel:|time:|traffic:" | sed "s/^/$n /"
done
