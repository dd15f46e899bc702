#!/usr/bin/env bash
# On the GPU machine (.device.tar.xz carried and unpacked): normalization kernels whose blocks'
# whole rows fill the row count exactly, without the row guard (new) against with it
# (LOOM_NO_UNGUARDED_ROWS=1: the kernels before, replay 0 changed), and the same kernels taking
# their row count at run time (LOOM_TUNE_SYMBOLIC=1), mirrored order, on the workloads whose
# kernels changed (a cross-section).
#   bash scripts/gpu_unguarded_rows.sh [FILTER]
set -uo pipefail
for v in guard:LOOM_NO_UNGUARDED_ROWS sym:LOOM_TUNE_SYMBOLIC; do
  d=.device-${v%%:*}
  mkdir -p $d/bin && ln -sfn ../.device/lib $d/lib
  printf '#!/bin/sh\n%s=1 exec %s/.device/bin/loom "$@"\n' "${v#*:}" "$PWD" > $d/bin/loom && chmod +x $d/bin/loom
done
filter=${1:-'^(layer_norm|rms_norm|softmax)_4096x(1024|4096|16384)_f16 |^(layer_norm|rms_norm|softmax)_32768x(256|1024|4096)_bf16 |^group_norm_32x128x256x256_nchw |^group_norm_16x512x64x64_nhwc |^layer_norm_2d_64x128x56x56_nhwc |^batch_norm_64x256x28x28_f32 |^instance_norm_8x64x256x256_nchw '}
bash scripts/bench_ab.sh .device-guard .device .device-sym "$filter"
