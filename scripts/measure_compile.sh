#!/usr/bin/env bash
# On the GPU machine (.device.tar.xz carried and unpacked): compile latency of a small and a large pointwise kernel,
# a norm and a backward norm, each in a fresh process: cold (empty loom cache, driver JIT cache
# off: PTX through the driver's JIT, the cubin made in the background for the cache) and from
# loom's disk cache (the cubin that process stored; with LOOM_CUBIN=0, PTX again); then host
# time per launch of a cached kernel.
#   bash scripts/measure_compile.sh
export LD_LIBRARY_PATH=$PWD/.device/lib:${LD_LIBRARY_PATH:-}
export CUDA_CACHE_DISABLE=1
L=.device/bin/loom
line() { "$L" run $1 --no-check --iters 0 2>&1 | grep -E "compile:|note:" | sed 's/^ *compile: //' | paste -sd' '; }
for spec in "add --dim N=1024" "add --dim N=16777216" "layer_norm --dim N=4096 --dim D=4096" \
            "layer_norm_backward --dim N=4096 --dim D=4096"; do
  echo "== $spec"
  for mode in cubin ptx; do
    export LOOM_CACHE_DIR=$(mktemp -d)
    if [ $mode = ptx ]; then export LOOM_CUBIN=0; else unset LOOM_CUBIN; fi
    printf '  %-5s cold:      %s\n' $mode "$(line "$spec")"
    printf '  %-5s disk hit:  %s\n' $mode "$(line "$spec")"
  done
  unset LOOM_CUBIN
done
unset CUDA_CACHE_DISABLE
for spec in "add --dim N=1024" "layer_norm --dim N=4096 --dim D=4096"; do
  echo "== host per launch: $spec"; $L bench $spec | grep -E "host:" | sed 's/^ */  /'
done
