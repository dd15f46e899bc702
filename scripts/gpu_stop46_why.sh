#!/usr/bin/env bash
# Stop 46, issue 22's missed targets explained: for each missed workload, Nsight Compute on every
# kernel of its plan (the kernel's own time, DRAM throughput and bytes, occupancy, stalls), the
# plan beside PyTorch eager and torch.compile (bench/peer.py), and the ceiling of the same bytes:
# a two-in one-out add of the same tensors (bench/ceiling.py --add), timed the same way.
#   bash scripts/gpu_stop46_why.sh      (GPU machine, .device.tar.xz carried)
set -u
tar -xJf .device.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib LOOM_LIBRARY=$PWD/.device/lib/libloom.so.0 LOOM_CACHE_DIR=/tmp/loom-cache
export OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
echo "== peers (issue 22's workloads)"
timeout 330 python3 bench/peer.py --workloads bench/workloads_issue22.txt --out "$OUT/peer" --budget-s 300 2>&1 | tail -3
cat "$OUT/peer/latest.md" 2>/dev/null | grep -E "^\| (workload|[a-z])" | cut -d'|' -f1-9
echo "== same-byte adds (x and dy in, dx out)"
timeout 150 python3 bench/ceiling.py --add f16:16777216,f16:33554432,f16:67108864,bf16:33554432,f32:12845056,f16:268435456
echo "== ncu"
export LOOM_WORKLOADS=bench/workloads_issue22.txt
COUNT=1 timeout 200 bash scripts/profile_norm.sh 'layer_norm_backward_4096x|rms_norm_backward_2048'
COUNT=3 timeout 120 bash scripts/profile_norm.sh 'group_norm_backward'
COUNT=2 timeout 60 bash scripts/profile_norm.sh 'batch_norm_backward_64x256x28x28_nhwc'
