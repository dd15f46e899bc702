# One device call for the two-kernel plan of rows strided along their reduction that no
# row-vector tier holds (channels-last batch norm backward of few channels): the cases of
# bench/cases/strided_two_pass.txt against the float64 reference (new build), and an A/B
# (.device-old against .device, 2 rounds) with each plan's kernels.
#   bash scripts/gpu_strided_two_pass.sh
set -u
tar -xJf .device.tar.xz && tar -xJf .device-old.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib
bash scripts/gpu_cases.sh bench/cases/strided_two_pass.txt
L="--layout x=nhwc --layout dy=nhwc"
bash scripts/gpu_ab_two_builds.sh 2 \
  "batch_norm_backward --dim N=64 --dim C=64 --dim H=112 --dim W=112 --dtype f16 $L" \
  "batch_norm_backward --dim N=16 --dim C=64 --dim H=112 --dim W=112 --dtype f32 $L" \
  "batch_norm_backward --dim N=8 --dim C=3 --dim H=331 --dim W=313 --dtype bf16 $L" \
  "batch_norm_backward --dim N=5 --dim C=3 --dim H=200 --dim W=201 --dtype f32 $L" \
  "batch_norm_backward --dim N=2 --dim C=3 --dim H=256 --dim W=256 --dtype f16 $L" 2>&1 | grep -v "rel err"
for b in .device-old .device; do echo "== $b"; LD_LIBRARY_PATH=$PWD/$b/lib $b/bin/loom bench batch_norm_backward --dim N=64 --dim C=64 --dim H=112 --dim W=112 --dtype f16 $L 2>&1 | grep -E "kernel [0-9]" | cut -c1-150; done
timeout 240 .device/bin/loom_tests "[gpu]~[huge]" 2>&1 | tail -2
