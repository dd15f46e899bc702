#!/usr/bin/env bash
# Stop 45: issue 23's "GB/s of runtime-sized kernels within 2% of exact ones" on the bench
# workloads: this build exact (.device) against itself under LOOM_TUNE_SYMBOLIC=1 (.device-sym,
# a wrapper), mirrored order, two runs each (scripts/bench_ab.sh).
#   bash scripts/gpu_stop45_symbolic_ab.sh [FILTER]
set -u
tar -xJf .device.tar.xz
mkdir -p .device-sym/bin && ln -sfn ../.device/lib .device-sym/lib
printf '#!/bin/sh\nLOOM_TUNE_SYMBOLIC=1 exec %s/.device/bin/loom "$@"\n' "$PWD" > .device-sym/bin/loom
chmod +x .device-sym/bin/loom
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
bash scripts/bench_ab.sh .device .device-sym "${1:-.}"
