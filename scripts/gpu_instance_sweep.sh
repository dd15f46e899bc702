# One device call: channels-last instance norm (forward and backward) under the row-vector
# tiers' knobs, to find why the scan put them at 20-50% of copy: the default against no grid
# tier (blocks of vectors of rows up to the opt-in limit) and fixed rows a block.
#   bash scripts/gpu_instance_sweep.sh
set -u
tar -xJf .device.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
configs=("" "LOOM_NO_GRID=1" "LOOM_NO_GRID=1 LOOM_TUNE_ROWS_PER_BLOCK=16" "LOOM_NO_GRID=1 LOOM_TUNE_ROWS_PER_BLOCK=32"
         "LOOM_TUNE_ROWS_PER_BLOCK=16" "LOOM_TUNE_ROWS_PER_BLOCK=8")
for f in instance_norm_backward instance_norm; do
  for s in "64 512 28 28" "64 256 56 56" "16 96 56 56" "8 640 32 32" "8 320 64 64" "32 768 14 14"; do
    set -- $s
    args=(--dim N=$1 --dim C=$2 --dim H=$3 --dim W=$4 --dtype f16 --layout x=nhwc)
    [ "$f" = instance_norm_backward ] && args+=(--layout dy=nhwc)
    line="$f $1x$2x$3x$4:"
    for c in "${configs[@]}"; do line="$line | ${c:-default} $(env $c .device/bin/loom bench $f "${args[@]}" 2>&1 | grep -E "traffic" | sed 's/.*-> //; s/ GB.*//')"; done
    echo "$line"
  done
done
