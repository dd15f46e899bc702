# One device call: rows that fit a block's shared memory only before their chunks are padded to
# the block's threads, now split over a cluster rather than the grid tier: the cases of
# bench/cases/padded_rows.txt against the float64 reference (new build), and an A/B
# (.device-old against .device, 2 rounds).
#   bash scripts/gpu_padded_rows.sh
set -u
tar -xJf .device.tar.xz && tar -xJf .device-old.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib
bash scripts/gpu_cases.sh bench/cases/padded_rows.txt
args=()
while read -r line; do args+=("${line% --iters 0}"); done < bench/cases/padded_rows.txt
bash scripts/gpu_ab_two_builds.sh 2 "${args[@]}" 2>&1 | grep -v "rel err"
timeout 240 .device/bin/loom_tests "[gpu]~[huge]" 2>&1 | tail -2
