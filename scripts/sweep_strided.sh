#!/usr/bin/env bash
# On the GPU machine (repo root, .device carried): rows strided along their reduction that take
# pieces of rows or grid sets cut short, timed by default and under the overrides left open at
# stop 18 (bench/results/2026-11-23-h100-stop18.md): the fill's batch of loads (16 where the
# grid caps registers at 64 would spill nothing), 32 threads a row, and the old paths
# (LOOM_NO_PARTIAL_SETS, LOOM_NO_ROW_VECTORS). GB/s, one run each (tuning aid; loom alone).
export LD_LIBRARY_PATH=$PWD/.device/lib:${LD_LIBRARY_PATH:-}
export LOOM_CACHE_DIR=${LOOM_CACHE_DIR:-/tmp/loom-sweep-strided}
L=.device/bin/loom
gbps() { env "$@" --json 2>/dev/null | grep -oE '"gbps": [0-9.]+' | head -1 | grep -oE '[0-9.]+$' | cut -d. -f1; }
for spec in "layer_norm_2d --dtype bf16 --dim N=64 --dim C=768 --dim H=7 --dim W=7" \
            "layer_norm_2d --dtype f16 --dim N=32 --dim C=256 --dim H=27 --dim W=27" \
            "softmax --dtype bf16 --layout x=1,0 --dim N=33001 --dim D=4096" \
            "instance_norm --dtype f16 --layout x=nhwc --dim N=40 --dim C=33 --dim H=96 --dim W=96" \
            "layer_norm --dtype f16 --layout x=1,0 --dim N=4097 --dim D=12289" \
            "batch_norm --dtype bf16 --layout x=nhwc --dim N=64 --dim C=100 --dim H=28 --dim W=28"; do
  echo "$spec | default $(gbps $L bench $spec) | batch16 $(gbps LOOM_TUNE_FILL_BATCH=16 $L bench $spec)" \
       "| T32 $(gbps LOOM_TUNE_THREADS_PER_ROW=32 $L bench $spec)" \
       "| whole-sets $(gbps LOOM_NO_PARTIAL_SETS=1 $L bench $spec) | gather $(gbps LOOM_NO_ROW_VECTORS=1 $L bench $spec)"
done
