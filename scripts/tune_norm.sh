#!/usr/bin/env bash
# On the GPU machine: sweep threads per row for a few normalization shapes (tuning aid).
#   bash scripts/tune_norm.sh
export LD_LIBRARY_PATH=$PWD/.device/lib:${LD_LIBRARY_PATH:-}
export LOOM_DISK_CACHE=0
L=.device/bin/loom
for spec in "layer_norm --dim N=4096 --dim D=1024" "layer_norm --dim N=4096 --dim D=4096" \
            "softmax --dim N=4096 --dim D=2048" "rms_norm --dim N=32768 --dim D=256" \
            "layer_norm --dim N=32768 --dim D=1024 --dtype bf16" "softmax --dim N=32768 --dim D=65536 --dtype bf16"; do
  line="$spec:"
  for t in default 4 8 16 32 64 128 256 512 1024; do
    if [ $t = default ]; then r=$($L bench $spec --iters 50 2>&1 | grep -oE "[0-9.]+ GB/s = " | head -1);
    else r=$(LOOM_TUNE_THREADS_PER_ROW=$t $L bench $spec --iters 50 2>&1 | grep -oE "[0-9.]+ GB/s = " | head -1); fi
    line="$line $t:${r% GB/s = }"
  done
  echo "$line"
done
