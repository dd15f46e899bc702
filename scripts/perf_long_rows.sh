export LD_LIBRARY_PATH=$PWD/.device/lib
L=.device/bin/loom
for spec in "layer_norm --dim N=32768 --dim D=65536 --dtype bf16" "softmax --dim N=32768 --dim D=65536 --dtype bf16" "rms_norm --dim N=32768 --dim D=65536" "batch_norm --dim N=64 --dim C=256 --dim H=28 --dim W=28" "group_norm --dim N=16 --dim C=512 --dim H=64 --dim W=64" "layer_norm --dim N=4096 --dim D=16384"; do
  echo "$spec: $($L bench $spec --iters 40 | grep -oE '[0-9.]+ GB/s = [0-9.]+%')"
done
