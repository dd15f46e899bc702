#!/usr/bin/env bash
# Stop 45: the element stores of rows that may pass the row count tested once around their loop
# (.device) against a test per chunk inside it (.device-base: bin/loom of 3fc2904), on
# bench/workloads_guarded_rows.txt, exact and under LOOM_TUNE_SYMBOLIC=1 (wrappers), mirrored
# order; each workload checked against the reference by the new build, exact and runtime-sized;
# the GPU tests of normalization kernels and runtime sizes.   bash scripts/gpu_stop45_row_stores.sh
set -u
tar -xJf .device.tar.xz && tar -xJf .device-base.tar.xz
for b in .device-base .device; do
  mkdir -p $b-sym/bin && ln -sfn ../$b/lib $b-sym/lib
  printf '#!/bin/sh\nLOOM_TUNE_SYMBOLIC=1 exec %s/%s/bin/loom "$@"\n' "$PWD" "$b" > $b-sym/bin/loom
  chmod +x $b-sym/bin/loom
done
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
export LOOM_WORKLOADS=bench/workloads_guarded_rows.txt
echo "== exact"; bash scripts/bench_ab.sh .device-base .device
echo "== LOOM_TUNE_SYMBOLIC=1"; bash scripts/bench_ab.sh .device-base-sym .device-sym
export LD_LIBRARY_PATH=$PWD/.device/lib LOOM_CACHE_DIR=/tmp/loom-cache
echo "== checked against the reference (new build)"
grep -v '^#' $LOOM_WORKLOADS | grep -E '\S' | while read -r name fusion dtype dims layouts _; do
  args="$fusion --dtype $dtype"
  for d in ${dims//,/ }; do args+=" --dim $d"; done
  [ "$layouts" != "-" ] && args+=" --layout $layouts"
  for env in LOOM_NONE=1 LOOM_TUNE_SYMBOLIC=1; do
    echo "$name [$env]: $(env $env .device/bin/loom run $args --iters 0 2>&1 | grep -oE -- '-> (OK|MISMATCH)|error.*' | sort | uniq -c | tr '\n' ' ')"
  done
done
echo "== GPU tests"
timeout 240 .device/bin/loom_tests "[gpu][symbolic],[executor],[gpu][norm]" 2>&1 | tail -2
