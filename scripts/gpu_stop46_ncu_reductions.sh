#!/usr/bin/env bash
# Stop 46: Nsight Compute on issue 22's reductions and the LSTM cell forward (the kernel's own time
# and DRAM throughput for the targets they miss).   bash scripts/gpu_stop46_ncu_reductions.sh
set -u
tar -xJf .device.tar.xz
LOOM_WORKLOADS=bench/workloads_reductions.txt timeout 200 bash scripts/profile_norm.sh . 2>&1 | tee "${OUT:-/tmp}/ncu-reductions.log" | grep -E "^==|Duration|DRAM Throughput|Achieved Occupancy|Registers|Grid Size|Block Size|dram__bytes|long_scoreboard"
