#!/usr/bin/env bash
# On the GPU machine (.device.tar.xz and .device-old.tar.xz carried): each backward workload
# (bench/workloads_backward.txt) timed by each build twice, in a fresh cache: the first run
# compiles (PTX through the driver's JIT), the second loads the disk cache (its cubin, where one
# was kept). Prints GB/s per run.
set -uo pipefail
cd "$(dirname "$0")/.."
for t in .device .device-old; do [ -d $t ] || tar -xJf $t.tar.xz; done
printf '%-44s %-22s %-22s\n' workload "old: fresh/disk" "new: fresh/disk"
grep -v '^#' bench/workloads_backward.txt | grep -E "\S" | while read -r name fusion dtype dims layouts; do
  args=(--dtype "$dtype")
  IFS=, read -ra ds <<<"$dims"
  for d in "${ds[@]}"; do args+=(--dim "$d"); done
  [ "$layouts" != "-" ] && for l in ${layouts//,/ }; do args+=(--layout "$l"); done
  line=$(printf '%-44s' "$name")
  for b in .device-old .device; do
    export LOOM_CACHE_DIR=$(mktemp -d /tmp/bwd.XXXXXX)
    r=""
    for run in 1 2; do
      g=$(LD_LIBRARY_PATH=$PWD/$b/lib $b/bin/loom bench "$fusion" "${args[@]}" --json 2>/dev/null | grep -oE '"gbps": [0-9.]+' | head -1 | grep -oE '[0-9.]+$' || echo FAIL)
      r+="${g%.*}/"
    done
    line+=$(printf ' %-22s' "${r%/}")
  done
  echo "$line"
done
