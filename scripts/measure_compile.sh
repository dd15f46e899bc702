#!/usr/bin/env bash
# On the GPU machine (.device carried): compile latency cold / from the disk cache, and host
# overhead per cached launch, for a small and a large pointwise kernel and a norm.
export LD_LIBRARY_PATH=$PWD/.device/lib:${LD_LIBRARY_PATH:-}
L=.device/bin/loom
for spec in "add --dim N=1024" "add --dim N=16777216" "layer_norm --dim N=4096 --dim D=4096"; do
  export LOOM_CACHE_DIR=$(mktemp -d)
  echo "== $spec"
  echo -n "cold (empty loom cache, driver JIT cache off): "
  CUDA_CACHE_DISABLE=1 $L bench $spec | grep -E "compile:" | sed 's/^ *//'
  echo -n "loom disk cache hit, driver JIT cache off:     "
  CUDA_CACHE_DISABLE=1 $L bench $spec | grep -E "compile:" | sed 's/^ *//'
  echo -n "loom disk cache hit, driver JIT cache on:      "
  $L bench $spec > /tmp/b.txt; $L bench $spec | grep -E "compile:" | sed 's/^ *//'
  $L bench $spec | grep -E "host:|traffic:" | sed 's/^ */  /'
done
echo "== per-thread stream"; LOOM_STREAM=per-thread $L bench add --dim N=1024 | grep host
