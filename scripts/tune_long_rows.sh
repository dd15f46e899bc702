#!/usr/bin/env bash
# On the GPU machine: the shared-memory tier of long rows, swept over the shared memory a block
# holds (which sets the cluster size) and the threads per block (tuning aid; loom alone).
export LD_LIBRARY_PATH=$PWD/.device/lib:${LD_LIBRARY_PATH:-}
export LOOM_DISK_CACHE=0
L=.device/bin/loom
gbps() { "$@" --iters 30 --json 2>&1 | grep -oE '"gbps": [0-9.]+' | head -1 | grep -oE '[0-9.]+$' | cut -d. -f1; }
for spec in "rms_norm --dtype bf16 --dim N=32768 --dim D=65536" "layer_norm --dtype bf16 --dim N=32768 --dim D=65536" \
            "softmax --dtype bf16 --dim N=32768 --dim D=65536" "group_norm --dim N=16 --dim C=512 --dim H=64 --dim W=64" \
            "batch_norm --dtype f32 --dim N=64 --dim C=256 --dim H=28 --dim W=28"; do
  line="$spec | default $(gbps $L bench $spec) | nocluster $(LOOM_NO_CLUSTER=1 gbps $L bench $spec) | nosmem $(LOOM_NO_SMEM_ROWS=1 gbps $L bench $spec)"
  for kb in 32 64 128; do
    for t in 256 512 1024; do
      line="$line | ${kb}K/t$t $(LOOM_TUNE_BLOCK_SMEM_KB=$kb LOOM_TUNE_THREADS_PER_ROW=$t gbps $L bench $spec)"
    done
  done
  echo "$line"
done
