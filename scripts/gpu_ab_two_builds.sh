# Two builds' kernels timed in turn on one machine (.device-old against .device; see
# scripts/gpu_first_calls_ab.sh for .device-old.tar.xz): `loom bench` GB/s of each workload,
# ROUNDS rounds, and `loom run` of each against the float64 reference with the new build.
#   bash scripts/gpu_ab_two_builds.sh ROUNDS "FUSION ARGS" ["FUSION ARGS" ...]
set -u
tar -xJf .device.tar.xz && tar -xJf .device-old.tar.xz
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
rounds=$1; shift
for w in "$@"; do
  LD_LIBRARY_PATH=$PWD/.device/lib .device/bin/loom run $w 2>&1 | grep -E "result|max" | head -3
  for r in $(seq "$rounds"); do
    for b in .device-old .device; do
      echo "== $b $w: $(LD_LIBRARY_PATH=$PWD/$b/lib $b/bin/loom bench $w 2>&1 | grep -E "traffic" | sed 's/.*-> //; s/ = .*//')"
    done
  done
done
