# Stop 40's closing device call on the final build: the row-vector grid tier's two-group cases
# (their blocks once did not fit the SMs together) against the float64 reference, the [gpu] suite, the torch tests, a short
# soak of random fusions (odd sizes included: peeled rows, pointwise tails), and the instance
# norm workloads beside PyTorch (peer.py).
#   LOOM_COMMIT=<sha> bash scripts/gpu_stop40_final.sh
set -u
tar -xJf .device.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
bash scripts/gpu_cases.sh bench/cases/row_grid_two_groups.txt
timeout 240 .device/bin/loom_tests "[gpu]~[huge]" 2>&1 | tail -2
LOOM_LIBRARY=$PWD/.device/lib/libloom.so.0 timeout 300 bash python/run_tests.sh .device 2>&1 | tail -3
SANITIZE=0 SOAK_BUDGET_S=90 timeout 150 bash scripts/soak_gpu.sh 1500 16 40 2>&1 | tail -4
timeout 200 python3 bench/peer.py --workloads bench/workloads_instance.txt 2>&1 | tail -3
cp /root/out/latest.md "$OUT/peers.md" 2>/dev/null || true
