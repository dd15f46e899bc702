# One device call: row reductions of 1024-2047 vectors a row that fill the GPU one block a row,
# now the reduction scheduler's (one pass in registers) rather than the normalization
# scheduler's shared memory: the cases of bench/cases/reduction_mid_rows.txt against the float64
# reference, and an A/B of every shape of the scan grid whose plan changed (2 rounds).
#   bash scripts/gpu_reduction_mid_rows.sh
set -u
tar -xJf .device.tar.xz && tar -xJf .device-old.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib
bash scripts/gpu_cases.sh bench/cases/reduction_mid_rows.txt
args=()
for w in "layer_norm_2d_backward 32 768 14 14 f16" "layer_norm_2d_backward 32 768 14 14 f32" "layer_norm_2d_backward 32 512 14 14 f16" \
         "layer_norm_2d_backward 32 512 14 14 f32" "layer_norm_2d_backward 8 256 28 28 f16" "layer_norm_2d_backward 8 256 28 28 f32" \
         "instance_norm_backward 32 512 14 14 f16" "instance_norm_backward 8 256 28 28 f32" "group_norm_backward 8 640 32 32 f16" \
         "group_norm_backward 32 768 14 14 f16" "group_norm_backward 32 768 14 14 f32" "group_norm_backward 32 512 14 14 f16" \
         "group_norm_backward 32 512 14 14 f32" "group_norm_backward 8 256 28 28 f32"; do
  set -- $w; args+=("$1 --dim N=$2 --dim C=$3 --dim H=$4 --dim W=$5 --dtype $6")
done
bash scripts/gpu_ab_two_builds.sh 2 "${args[@]}" 2>&1 | grep -v "rel err"
