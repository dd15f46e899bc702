#!/usr/bin/env bash
# On the GPU machine (.device.tar.xz carried and unpacked): issue 22's column kernels (layer and
# RMS norm backward) under knob settings beside the default, two rounds in turn, GB/s of
# `loom bench` (50 timed runs, L2 flushed): more threads a row (fewer values a thread), two
# blocks an SM of them, the next row's loads issued early, column partials in registers.
#   bash scripts/gpu_backward_knobs.sh
set -uo pipefail
source scripts/dev_lib.sh
settings=("" "LOOM_TUNE_THREADS_PER_ROW=512" "LOOM_TUNE_THREADS_PER_ROW=512 LOOM_TUNE_MIN_BLOCKS=2"
          "LOOM_TUNE_THREADS_PER_ROW=512 LOOM_TUNE_MIN_BLOCKS=2 LOOM_TUNE_ROW_PREFETCH=1"
          "LOOM_TUNE_ROW_PREFETCH=1" "LOOM_TUNE_COLUMN_SMEM=0" "LOOM_TUNE_MIN_BLOCKS=3")
workloads=("layer_norm_backward f16 N=4096 D=4096" "layer_norm_backward f16 N=4096 D=8192"
           "layer_norm_backward f16 N=4096 D=16384" "layer_norm_backward f16 N=32768 D=1024"
           "layer_norm_backward f16 N=32768 D=4096" "layer_norm_backward bf16 N=4096 D=4096"
           "rms_norm_backward bf16 N=2048 D=16384" "rms_norm_backward bf16 N=8192 D=4096"
           "rms_norm_backward bf16 N=32768 D=1024")
for w in "${workloads[@]}"; do
  set -- $w
  f=$1 dt=$2 n=$3 d=$4
  line="$f $dt ${n#N=}x${d#D=}:"
  for round in 1 2; do
    for s in "${settings[@]}"; do
      line+=" $(env $s bash -c "source scripts/dev_lib.sh; gbps $f --dtype $dt --dim $n --dim $d")"
    done
    line+=" |"
  done
  echo "$line"
done
for i in "${!settings[@]}"; do echo "column $i: ${settings[$i]:-default}"; done
