# One device call for the grid tier's sub-row sums and batched grid reductions: the cases of
# bench/cases/sub_rows_grid.txt against the float64 reference (new build), an A/B of the
# changed kernels' workloads (.device-old against .device, 2 rounds), the [gpu] suite, and
# group norm backward beside PyTorch (peer.py).
#   LOOM_COMMIT=<sha> bash scripts/gpu_sub_rows_grid.sh
set -u
tar -xJf .device.tar.xz && tar -xJf .device-old.tar.xz
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export LD_LIBRARY_PATH=$PWD/.device/lib
echo "== cases"
bash scripts/gpu_cases.sh bench/cases/sub_rows_grid.txt
L="--layout x=nhwc --layout dy=nhwc"
bash scripts/gpu_ab_two_builds.sh 2 \
  "group_norm_backward --dim N=32 --dim C=128 --dim H=256 --dim W=256 --dtype f16 $L" \
  "group_norm_backward --dim N=32 --dim C=128 --dim H=256 --dim W=256 --dtype bf16 $L" \
  "group_norm_backward --dim N=3 --dim C=128 --dim H=255 --dim W=257 --dtype f16 $L" \
  "group_norm_backward --dim N=256 --dim C=128 --dim H=16 --dim W=16 --dtype f16 $L" \
  "group_norm_backward --dim N=7 --dim C=128 --dim H=65 --dim W=67 --dtype f32 $L" \
  "batch_norm_backward --dim N=16 --dim C=64 --dim H=224 --dim W=224 --dtype f32" 2>&1 | grep -v "rel err"
echo "== kernels of the new plan"
.device/bin/loom bench group_norm_backward --dim N=32 --dim C=128 --dim H=256 --dim W=256 --dtype f16 $L 2>&1 | grep -E "traffic|kernel [0-9]" | cut -c1-160
timeout 240 .device/bin/loom_tests "[gpu]~[huge]" 2>&1 | tail -2
python3 bench/peer.py --workloads bench/workloads_backward.txt group_norm_backward 2>&1 | tail -3
cp /root/out/latest.md "$OUT/peers.md" 2>/dev/null || true
