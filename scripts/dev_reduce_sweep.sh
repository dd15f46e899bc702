#!/usr/bin/env bash
# On the GPU machine (.device.tar.xz carried and unpacked): the reduction and multi-kernel [gpu] tests, ln_colsum run
# and benched as a plan of two kernels, a sweep of the reduction scheduler's knobs on column sums
# (LOOM_TUNE_RED_BX, _BLOCK, _UNROLL) and full sums, then bench/workloads_multi.txt beside PyTorch.
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/.device/lib LOOM_CACHE_DIR=/tmp/loom-cache; L=.device/bin/loom
timeout 200 .device/bin/loom_tests "[gpu][bench],[reduction]" 2>&1 | tail -3
$L run examples/fusions/ln_colsum.loom --dim N=4096 --dim D=1024 2>&1 | tail -6
$L bench examples/fusions/ln_colsum.loom --dim N=4096 --dim D=1024 2>&1 | tail -6
b() { $L bench "$@" 2>&1 | grep -E "traffic" | sed 's/.*-> //; s/ of copy.*//'; }
for s in "M=65536 --dim D=1024" "M=1024 --dim D=65536" "M=8192 --dim D=8192"; do for bx in 4 8; do for blk in 256 512; do for u in 4 8; do echo "colsum $s bx=$bx block=$blk unroll=$u: $(LOOM_TUNE_RED_BX=$bx LOOM_TUNE_RED_BLOCK=$blk LOOM_TUNE_RED_UNROLL=$u b examples/fusions/column_sum.loom --dim $s)"; done; done; done; done
for u in 2 4 8; do echo "sum_all unroll=$u: $(LOOM_TUNE_RED_UNROLL=$u b examples/fusions/sum_all.loom --dim N=67108864)"; done
BENCH_BUDGET_S=200 timeout 280 bash bench/run.sh --workloads bench/workloads_multi.txt 2>&1 | tail -12
