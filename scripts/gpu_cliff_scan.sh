# One device call: `loom bench` over realistic training shapes of every norm built-in (forward
# and backward, NCHW and channels-last, f16 or DTYPES), printing each plan's GB/s and share of
# copy bandwidth, so that cliffs (a plan far below copy speed on a large problem) show up.
#   bash scripts/gpu_cliff_scan.sh > $OUT/scan.txt
set -u
export LD_LIBRARY_PATH=$PWD/.device/lib
L=.device/bin/loom
one() { local r; r=$($L bench "$@" --iters 20 2>&1 | grep -E "traffic|kernels? in all|^  kernel" | tr '\n' ' ' | sed -E 's/ +/ /g'); echo "$* | $r" | sed -E 's/traffic: ([0-9.]+) MB -> ([0-9.]+) GB\/s = ([0-9.]+)% of copy.*/MB \1 GBs \2 copy% \3/' | cut -c1-220; }
for f in batch_norm batch_norm_backward instance_norm instance_norm_backward group_norm group_norm_backward layer_norm_2d layer_norm_2d_backward; do
  for s in "64 64 112 112" "64 256 56 56" "64 512 28 28" "64 1024 14 14" "64 2048 7 7" "8 320 64 64" "8 640 32 32" "8 1280 16 16" "16 96 56 56" "32 768 14 14"; do
    set -- $s
    for dt in ${DTYPES:-f16}; do
      for lay in nchw nhwc; do
        ins="--layout x=$lay"; case $f in *backward) ins="$ins --layout dy=$lay";; esac
        one $f --dim N=$1 --dim C=$2 --dim H=$3 --dim W=$4 --dtype $dt $ins
      done
    done
  done
done
