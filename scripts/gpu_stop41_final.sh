# Stop 41's closing device calls on the final build. `check`: the [gpu] suite, the torch tests, a
# short soak of random fusions (exact kernels; the symbolic soak ran with scripts/gpu_reversed_walk.sh);
# `peers`: issue 22's missed targets (bench/workloads_issue22.txt) beside PyTorch eager and torch.compile (peer.py).
#   LOOM_COMMIT=<sha> bash scripts/gpu_stop41_final.sh check|peers
set -u
tar -xJf .device.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
case ${1:-check} in
  check)
    timeout 240 .device/bin/loom_tests "[gpu]~[huge]" 2>&1 | grep -E -A12 "FAILED|^test cases|^All tests" | head -40
    LOOM_LIBRARY=$PWD/.device/lib/libloom.so.0 timeout 200 bash python/run_tests.sh .device 2>&1 | tail -3
    SANITIZE=0 SOAK_BUDGET_S=90 timeout 150 bash scripts/soak_gpu.sh 1500 16 141 2>&1 | tail -4 ;;
  peers)
    timeout 560 python3 bench/peer.py --workloads bench/workloads_issue22.txt 2>&1 | tail -3
    cp /root/out/latest.md "$OUT/peers.md" 2>/dev/null || true ;;
esac
