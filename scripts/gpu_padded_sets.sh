# One device call: the row-vector grid tier's sets with their pitch padded against bank conflicts
# (a split over a block or two more where that makes room), against LOOM_NO_PADDED_SETS=1 (the
# kernels before: the replay shows 0 changed under it), on every shape of the lists whose plan
# changed, two rounds; then the changed shapes against the float64 reference.
#   bash scripts/gpu_padded_sets.sh
set -u
tar -xJf .device.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
gbs() { env "$@" 2>&1 | grep -E "traffic" | sed 's/.*-> //; s/ GB.*//'; }
while read -r line; do
  set -- $line
  args=("$@")
  [[ $1 == *_norm* || $1 == softmax ]] || continue
  lay=(--layout x=nhwc); [[ $1 == *backward ]] && lay+=(--layout dy=nhwc)
  [[ " ${args[*]} " == *" --layout "* ]] && lay=()
  r="$*:"
  for k in 1 2; do r="$r old $(gbs LOOM_NO_PADDED_SETS=1 .device/bin/loom bench "${args[@]}" "${lay[@]}") new $(gbs .device/bin/loom bench "${args[@]}" "${lay[@]}") |"; done
  echo "$r"
  echo "${args[*]} ${lay[*]} --iters 0" >> /tmp/padded_cases.txt
done <<'LIST'
instance_norm_backward --dtype f16 --dim N=64 --dim C=256 --dim H=56 --dim W=56
instance_norm_backward --dtype f16 --dim N=64 --dim C=128 --dim H=56 --dim W=56
instance_norm_backward --dtype f16 --dim N=8 --dim C=320 --dim H=64 --dim W=64
instance_norm_backward --dtype bf16 --dim N=64 --dim C=256 --dim H=56 --dim W=56
instance_norm_backward --dtype bf16 --dim N=64 --dim C=128 --dim H=56 --dim W=56
instance_norm_backward --dtype bf16 --dim N=8 --dim C=320 --dim H=64 --dim W=64
instance_norm_backward --dtype f32 --dim N=64 --dim C=256 --dim H=56 --dim W=56
instance_norm_backward --dtype f32 --dim N=32 --dim C=128 --dim H=32 --dim W=32
instance_norm_backward --dtype f32 --dim N=64 --dim C=128 --dim H=56 --dim W=56
instance_norm_backward --dtype f32 --dim N=8 --dim C=320 --dim H=64 --dim W=64
instance_norm_backward --dtype f32 --dim N=16 --dim C=96 --dim H=56 --dim W=56
instance_norm_backward --dtype f32 --dim N=8 --dim C=640 --dim H=32 --dim W=32
instance_norm --dtype f16 --dim N=64 --dim C=256 --dim H=56 --dim W=56
instance_norm --dtype f16 --dim N=64 --dim C=128 --dim H=56 --dim W=56
instance_norm --dtype f16 --dim N=64 --dim C=64 --dim H=112 --dim W=112
instance_norm --dtype bf16 --dim N=64 --dim C=256 --dim H=56 --dim W=56
instance_norm --dtype bf16 --dim N=64 --dim C=128 --dim H=56 --dim W=56
instance_norm --dtype bf16 --dim N=64 --dim C=64 --dim H=112 --dim W=112
instance_norm --dtype f32 --dim N=8 --dim C=320 --dim H=64 --dim W=64
batch_norm --dtype f16 --dim N=64 --dim C=1024 --dim H=14 --dim W=14
batch_norm --dtype bf16 --dim N=64 --dim C=1024 --dim H=14 --dim W=14
softmax --dtype bf16 --dim N=33000 --dim D=16384 --layout x=1,0
instance_norm --dtype bf16 --dim N=128 --dim C=32 --dim H=128 --dim W=128
layer_norm --dtype f16 --dim N=4097 --dim D=12289 --layout x=1,0
layer_norm --dtype f64 --dim N=1000 --dim D=12289 --layout x=1,0
LIST
bash scripts/gpu_cases.sh /tmp/padded_cases.txt
timeout 240 .device/bin/loom_tests "[gpu]~[huge]" 2>&1 | tail -2
