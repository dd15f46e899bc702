# One device call: channels-last batch norm backward whose vectors of rows over the grid hold
# two loads of 24 MiB or more in groups of blocks taking turns, now two kernels: the cases of
# bench/cases/two_pass_groups.txt against the float64 reference, and an A/B of every shape whose
# plan changed (.device-old against .device, 2 rounds).
#   bash scripts/gpu_two_pass_groups.sh
set -u
tar -xJf .device.tar.xz && tar -xJf .device-old.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib
bash scripts/gpu_cases.sh bench/cases/two_pass_groups.txt
L="--layout x=nhwc --layout dy=nhwc"
args=()
for s in "64 512 28 28 f16" "64 512 28 28 bf16" "64 1024 14 14 f16" "64 1024 14 14 bf16" "64 1024 14 14 f32" "64 2048 7 7 f16" \
         "64 2048 7 7 bf16" "64 2048 7 7 f32" "8 320 64 64 f16" "8 320 64 64 bf16" "8 640 32 32 f32" "16 96 56 56 f32" \
         "32 768 14 14 f32" "32 512 14 14 f32"; do
  set -- $s; args+=("batch_norm_backward --dim N=$1 --dim C=$2 --dim H=$3 --dim W=$4 --dtype $5 $L")
done
bash scripts/gpu_ab_two_builds.sh 2 "${args[@]}" 2>&1 | grep -v "rel err"
