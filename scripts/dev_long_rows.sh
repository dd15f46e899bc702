#!/usr/bin/env bash
# On the GPU machine (.device.tar.xz and .device-old.tar.xz carried): one-pass reductions of long
# rows that fill the GPU one block a row (layer_norm_2d_backward NCHW's dw and db, row sums),
# old build against new, mirrored (old, new, new, old), kernels loaded as PTX (LOOM_CUBIN=0) so
# only the kernels differ. Prints the plan's GB/s and its last kernel's, per run.
set -uo pipefail
cd "$(dirname "$0")/.."
for t in .device .device-old; do [ -d $t ] || tar -xJf $t.tar.xz; done
export LOOM_CUBIN=0 LOOM_CACHE_DIR=$(mktemp -d /tmp/longrows.XXXXXX)
one() {  # BUILD ARGS...: "plan/last-kernel" GB/s
  LD_LIBRARY_PATH=$PWD/$1/lib "$1/bin/loom" bench "${@:2}" --json 2>/dev/null | python3 -c "
import json, sys
d = json.load(sys.stdin)
print('%d/%d' % (d['gbps'], d['plan'][-1]['gbps']))" 2>/dev/null || echo FAIL
}
while read -r label args; do
  [ -z "$label" ] && continue
  a1=$(one .device-old $args); b1=$(one .device $args); b2=$(one .device $args); a2=$(one .device-old $args)
  printf '%-34s old %-10s %-10s new %-10s %-10s\n' "$label" "$a1" "$a2" "$b1" "$b2"
done <<'LIST'
ln2d_bwd_64x768x14x14 layer_norm_2d_backward --dtype f16 --dim N=64 --dim C=768 --dim H=14 --dim W=14
ln2d_bwd_64x192x56x56 layer_norm_2d_backward --dtype f16 --dim N=64 --dim C=192 --dim H=56 --dim W=56
ln2d_bwd_64x384x28x28 layer_norm_2d_backward --dtype f16 --dim N=64 --dim C=384 --dim H=28 --dim W=28
ln2d_bwd_64x1024x7x7 layer_norm_2d_backward --dtype f16 --dim N=64 --dim C=1024 --dim H=7 --dim W=7
ln2d_bwd_bf16_32x768x14x14 layer_norm_2d_backward --dtype bf16 --dim N=32 --dim C=768 --dim H=14 --dim W=14
row_sum_4096x16384 examples/fusions/row_sum.loom --dim N=4096 --dim D=16384
row_sum_1024x65536 examples/fusions/row_sum.loom --dim N=1024 --dim D=65536
row_sum_32768x8192 examples/fusions/row_sum.loom --dim N=32768 --dim D=8192
row_sum_600x1000003 examples/fusions/row_sum.loom --dim N=600 --dim D=1000003
LIST
