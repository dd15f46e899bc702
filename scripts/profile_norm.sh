#!/usr/bin/env bash
# On the GPU machine (repo root, .device carried): Nsight Compute on loom's kernel for the
# workloads of bench/workloads.txt matching a regular expression. Prints, per workload, the
# numbers the speed table asks for when a target is missed: duration, DRAM throughput, bytes
# moved, achieved occupancy, registers, and the top warp stall reasons. Full reports go to
# $OUT/ncu-NAME.txt.   bash scripts/profile_norm.sh 'group_norm.*nhwc|softmax_32768x65536'
# SASS=1 also samples warp stalls per instruction (a second ncu pass) into $OUT/sass-NAME.csv
# and prints where the samples fall (scripts/sass_hotspots.py): the share of each phase.
# COUNT=K profiles the first K launches (a plan of K kernels: each of its kernels once).
#   bash scripts/profile_norm.sh [WORKLOAD_REGEX]   (SASS=1: per-instruction stall samples too)
set -uo pipefail
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/.device/lib:${LD_LIBRARY_PATH:-}
export LOOM_CACHE_DIR=${LOOM_CACHE_DIR:-/tmp/loom-cache}
L=.device/bin/loom
NCU=${NCU:-ncu}
command -v "$NCU" >/dev/null || NCU=/usr/local/cuda/bin/ncu
out=${OUT:-/tmp}
filter=${1:-.}
stalls=$(printf 'smsp__average_warps_issue_stalled_%s_per_issue_active.ratio,' barrier long_scoreboard \
  short_scoreboard membar mio_throttle lg_throttle wait sleeping math_pipe_throttle not_selected drain)
stalls=${stalls%,}
# Pipe utilization: the transcendental unit (exp), FMA, load/store, shared memory wavefronts.
pipes=sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed
source scripts/workloads.sh
one() {
  local name=$1
  shift
  # The first launch(es) of a kernel whose name starts with loom_ (the bench's warm-up).
  timeout 300 "$NCU" --clock-control none -k regex:^loom -c "${COUNT:-1}" \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats \
    --section Occupancy --section WarpStateStats --section SchedulerStats \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,$pipes,$stalls \
    "$L" bench "$@" --iters 1 >"$out/ncu-$name.txt" 2>&1
  echo "== $name ($*)"
  grep -E "^\s+(loom_[A-Za-z0-9_]+ \(|Duration|DRAM Throughput|Memory Throughput|L2 Cache Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per Thread|Block Size|Grid Size|Dynamic Shared Memory Per Block|Static Shared Memory Per Block|Warp Cycles Per Issued Instruction|Issued Warp Per Scheduler|No Eligible|Active Warps Per Scheduler|Eligible Warps Per Scheduler)\b" \
    "$out/ncu-$name.txt" | sed 's/  */ /g'
  grep -E "dram__bytes|issue_stalled|pipe_|wavefronts" "$out/ncu-$name.txt" | sed 's/  */ /g;s/smsp__average_warps_issue_stalled_//;s/_per_issue_active.ratio//'
  if [ "${SASS:-0}" = 1 ]; then
    timeout 300 "$NCU" --clock-control none -k regex:^loom -c 1 --section WarpStateStats --section SourceCounters \
      --import-source no --page source --print-source sass --csv "$L" bench "$@" --iters 1 >"$out/sass-$name.csv" 2>&1
    python3 scripts/sass_hotspots.py "$out/sass-$name.csv" --min 1
  fi
}
for_each_workload "$filter" one
