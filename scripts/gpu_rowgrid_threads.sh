# One device call: every shape of a list of channels-last instance and batch norm (forward and
# backward, f16/bf16/f32) whose default is the row-vector grid tier (blocks of 512 threads,
# 512 / R threads a row), against LOOM_TUNE_THREADS_PER_ROW=4 (blocks of 4 R threads); the
# default twice, for the spread. GB/s.
#   bash scripts/gpu_rowgrid_threads.sh
set -u
tar -xJf .device.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib
gbs() { env "$@" 2>&1 | grep -E "traffic" | sed 's/.*-> //; s/ GB.*//'; }
while read -r f dt n c h w; do
  args=(--dim N=$n --dim C=$c --dim H=$h --dim W=$w --dtype $dt --layout x=nhwc)
  [[ $f == *backward ]] && args+=(--layout dy=nhwc)
  echo "$f $dt ${n}x${c}x${h}x${w}: default $(gbs .device/bin/loom bench $f "${args[@]}") t4 $(gbs LOOM_TUNE_THREADS_PER_ROW=4 .device/bin/loom bench $f "${args[@]}") default $(gbs .device/bin/loom bench $f "${args[@]}")"
done <<'LIST'
instance_norm_backward f16 64 256 56 56
instance_norm_backward f16 32 128 32 32
instance_norm_backward f16 64 128 56 56
instance_norm_backward f16 8 320 64 64
instance_norm_backward f16 16 96 56 56
instance_norm_backward f16 8 640 32 32
instance_norm_backward f16 64 64 112 112
instance_norm_backward bf16 64 256 56 56
instance_norm_backward bf16 32 128 32 32
instance_norm_backward bf16 64 128 56 56
instance_norm_backward bf16 8 320 64 64
instance_norm_backward bf16 16 96 56 56
instance_norm_backward bf16 8 640 32 32
instance_norm_backward bf16 64 64 112 112
instance_norm_backward f32 64 256 56 56
instance_norm_backward f32 32 128 32 32
instance_norm_backward f32 64 128 56 56
instance_norm_backward f32 8 320 64 64
instance_norm_backward f32 16 96 56 56
instance_norm_backward f32 8 640 32 32
instance_norm_backward f32 64 512 28 28
instance_norm_backward f32 32 256 28 28
instance_norm_backward f32 64 64 112 112
instance_norm_backward f32 16 512 28 28
instance_norm_backward f32 64 384 28 28
instance_norm f16 64 256 56 56
instance_norm f16 64 128 56 56
instance_norm f16 8 320 64 64
instance_norm f16 16 96 56 56
instance_norm f16 64 64 112 112
instance_norm bf16 64 256 56 56
instance_norm bf16 64 128 56 56
instance_norm bf16 8 320 64 64
instance_norm bf16 16 96 56 56
instance_norm bf16 64 64 112 112
instance_norm f32 64 256 56 56
instance_norm f32 64 128 56 56
instance_norm f32 8 320 64 64
instance_norm f32 16 96 56 56
instance_norm f32 64 64 112 112
batch_norm_backward f16 32 128 32 32
batch_norm_backward f16 16 96 56 56
batch_norm_backward f16 8 640 32 32
batch_norm_backward bf16 32 128 32 32
batch_norm_backward bf16 16 96 56 56
batch_norm_backward bf16 8 640 32 32
batch_norm f16 64 256 56 56
batch_norm f16 32 128 32 32
batch_norm f16 64 128 56 56
batch_norm f16 8 320 64 64
batch_norm f16 16 96 56 56
batch_norm f16 8 640 32 32
batch_norm f16 64 512 28 28
batch_norm f16 32 256 28 28
batch_norm f16 64 64 112 112
batch_norm f16 64 1024 14 14
batch_norm f16 16 512 28 28
batch_norm f16 64 384 28 28
batch_norm bf16 64 256 56 56
batch_norm bf16 32 128 32 32
batch_norm bf16 64 128 56 56
batch_norm bf16 8 320 64 64
batch_norm bf16 16 96 56 56
batch_norm bf16 8 640 32 32
batch_norm bf16 64 512 28 28
batch_norm bf16 32 256 28 28
batch_norm bf16 64 64 112 112
batch_norm bf16 64 1024 14 14
batch_norm bf16 16 512 28 28
batch_norm bf16 64 384 28 28
batch_norm f32 64 256 56 56
batch_norm f32 32 128 32 32
batch_norm f32 64 128 56 56
batch_norm f32 8 320 64 64
batch_norm f32 16 96 56 56
batch_norm f32 8 640 32 32
batch_norm f32 64 512 28 28
batch_norm f32 32 256 28 28
batch_norm f32 64 64 112 112
batch_norm f32 64 1024 14 14
batch_norm f32 16 512 28 28
batch_norm f32 64 384 28 28
LIST
