# One device call: rows whose length the vector does not divide, read in whole vectors from each
# row's first aligned element (NormKernel::peel): the cases of bench/cases/peeled_rows.txt
# against the float64 reference, the [peel] and [gpu] tests, the same build's kernels with
# LOOM_NO_PEEL=1 (the kernels before it: the replay shows 0 changed under that switch) against
# its own on bench/workloads_odd_rows.txt (2 rounds), and those workloads beside PyTorch.
#   LOOM_COMMIT=<sha> bash scripts/gpu_peel.sh
set -u
tar -xJf .device.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
bash scripts/gpu_cases.sh bench/cases/peeled_rows.txt
timeout 200 .device/bin/loom_tests "[peel]" 2>&1 | tail -2
gbs() { .device/bin/loom bench "$@" 2>&1 | grep -E "traffic" | sed 's/.*-> //; s/ = .*//'; }
grep -v '^#' bench/workloads_odd_rows.txt | while read -r name fusion dtype sizes _; do
  args=(--dtype "$dtype")
  for kv in ${sizes//,/ }; do args+=(--dim "$kv"); done
  for r in 1 2; do
    echo "== $name round $r: no peel $(LOOM_NO_PEEL=1 gbs "$fusion" "${args[@]}") | peel $(gbs "$fusion" "${args[@]}")"
  done
done
timeout 240 .device/bin/loom_tests "[gpu]~[huge]" 2>&1 | tail -2
timeout 300 python3 bench/peer.py --workloads bench/workloads_odd_rows.txt 2>&1 | tail -3
cp /root/out/latest.md "$OUT/peers.md" 2>/dev/null || true
