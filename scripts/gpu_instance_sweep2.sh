# One device call: every channels-last instance norm shape of a list whose default is the grid
# tier (sets split over 2 to 15 blocks), against LOOM_NO_GRID=1 (vectors of rows in a large
# block, up to the opt-in limit, a set a block), two rounds each.
#   bash scripts/gpu_instance_sweep2.sh
set -u
tar -xJf .device.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
gbs() { env "$@" 2>&1 | grep -E "traffic" | sed 's/.*-> //; s/ GB.*//'; }
while read -r f dt n c h w; do
  args=(--dim N=$n --dim C=$c --dim H=$h --dim W=$w --dtype $dt --layout x=nhwc)
  [ "$f" = instance_norm_backward ] && args+=(--layout dy=nhwc)
  split=$(.device/bin/loom dump $f --stage schedule "${args[@]}" 2>&1 | head -1 | grep -o "split over [0-9]* blocks")
  line="$f $dt ${n}x${c}x${h}x${w} ($split):"
  for r in 1 2; do
    line="$line default $(gbs .device/bin/loom bench $f "${args[@]}") nogrid $(gbs LOOM_NO_GRID=1 .device/bin/loom bench $f "${args[@]}") |"
  done
  echo "$line"
done <<'LIST'
instance_norm_backward f16 64 512 28 28
instance_norm_backward f16 32 256 28 28
instance_norm_backward f16 16 512 28 28
instance_norm_backward f16 64 384 28 28
instance_norm_backward f16 128 512 28 28
instance_norm_backward f16 32 128 32 32
instance_norm_backward f16 64 128 56 56
instance_norm_backward f32 64 512 28 28
instance_norm_backward f32 32 256 28 28
instance_norm_backward f32 16 512 28 28
instance_norm_backward f32 64 384 28 28
instance_norm_backward f32 128 512 28 28
instance_norm_backward f32 32 128 32 32
instance_norm_backward f32 8 256 32 32
instance_norm f16 64 256 56 56
instance_norm f16 64 128 56 56
instance_norm f32 64 128 56 56
LIST
