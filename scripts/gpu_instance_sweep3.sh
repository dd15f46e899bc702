# One device call: channels-last instance_norm_backward shapes the grid tier keeps (sets over 4
# to 15 blocks) under the row-vector grid tier's knobs (GB/s, one round).
#   bash scripts/gpu_instance_sweep3.sh
set -u
tar -xJf .device.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib
configs=("" "LOOM_TUNE_THREADS_PER_ROW=4" "LOOM_TUNE_THREADS_PER_ROW=8" "LOOM_TUNE_THREADS_PER_ROW=32"
         "LOOM_TUNE_GRID_GROUPS=1" "LOOM_TUNE_GRID_GROUPS=4" "LOOM_TUNE_GRID_PREFETCH=1" "LOOM_TUNE_ROWVEC_STATS=1"
         "LOOM_TUNE_ROWS_TOGETHER=16" "LOOM_TUNE_ROWS_TOGETHER=32")
while read -r dt n c h w; do
  args=(--dim N=$n --dim C=$c --dim H=$h --dim W=$w --dtype $dt --layout x=nhwc --layout dy=nhwc)
  line="instance_norm_backward $dt ${n}x${c}x${h}x${w}:"
  for cf in "${configs[@]}"; do
    line="$line | ${cf:-default} $(env $cf .device/bin/loom bench instance_norm_backward "${args[@]}" 2>&1 | grep -E "traffic" | sed 's/.*-> //; s/ GB.*//')"
  done
  echo "$line"
done <<'LIST'
f16 64 256 56 56
f16 8 320 64 64
f16 16 96 56 56
f16 8 640 32 32
f16 64 128 56 56
f32 32 128 32 32
LIST
