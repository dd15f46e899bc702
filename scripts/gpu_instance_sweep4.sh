# One device call: channels-last instance_norm_backward after the padded pitches (c69a54d) under
# the row-vector tiers' knobs, where torch.compile stays ahead (GB/s, one round).
#   bash scripts/gpu_instance_sweep4.sh
set -u
tar -xJf .device.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib
configs=("" "LOOM_TUNE_THREADS_PER_ROW=4" "LOOM_TUNE_THREADS_PER_ROW=16" "LOOM_TUNE_ROWS_PER_BLOCK=32"
         "LOOM_TUNE_GRID_PREFETCH=1" "LOOM_TUNE_STORE_UNROLL=1" "LOOM_TUNE_ROWVEC_STATS=0")
while read -r dt n c h w; do
  args=(--dim N=$n --dim C=$c --dim H=$h --dim W=$w --dtype $dt --layout x=nhwc --layout dy=nhwc)
  line="instance_norm_backward $dt ${n}x${c}x${h}x${w}:"
  for cf in "${configs[@]}"; do
    line="$line | ${cf:-default} $(env $cf .device/bin/loom bench instance_norm_backward "${args[@]}" 2>&1 | grep -E "traffic" | sed 's/.*-> //; s/ GB.*//')"
  done
  echo "$line"
done <<'LIST'
f16 64 256 56 56
f16 64 128 56 56
f16 8 320 64 64
f16 64 512 28 28
f32 64 512 28 28
f32 64 256 56 56
f16 64 320 28 28
LIST
