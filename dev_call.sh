exec > >(tee $OUT/sweep.txt) 2>&1
export LD_LIBRARY_PATH=$PWD/.device/lib LOOM_CACHE_DIR=/tmp/lc5
L=.device/bin/loom
b() { env "$@" --json 2>/dev/null | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(round(d.get("gbps",0)), end=" ")'; }
cmp() { echo -n "$* | new: "; b $L bench "$@"; echo -n " old: "; b LOOM_NO_PARTIAL_SETS=1 $L bench "$@"; echo; }
echo "== grid sets cut short: new vs LOOM_NO_PARTIAL_SETS=1"
cmp instance_norm --dtype f16 --layout x=nhwc --dim N=40 --dim C=33 --dim H=96 --dim W=96
cmp instance_norm --dtype f16 --layout x=nhwc --dim N=8 --dim C=33 --dim H=96 --dim W=96
cmp instance_norm --dtype f16 --layout x=nhwc --dim N=3 --dim C=40 --dim H=48 --dim W=48
cmp softmax --dtype bf16 --layout x=1,0 --dim N=1000 --dim D=4096
cmp softmax --dtype bf16 --layout x=1,0 --dim N=33000 --dim D=16384
cmp softmax --dtype bf16 --layout x=1,0 --dim N=8000 --dim D=65536
cmp batch_norm --dtype f32 --layout x=nhwc --dim N=64 --dim C=255 --dim H=28 --dim W=28
cmp batch_norm --dtype bf16 --layout x=nhwc --dim N=64 --dim C=100 --dim H=28 --dim W=28
cmp batch_norm --dtype bf16 --layout x=nhwc --dim N=4 --dim C=100 --dim H=20 --dim W=20
echo "== checked runs"
for a in "instance_norm --dtype f16 --layout x=nhwc --dim N=40 --dim C=33 --dim H=96 --dim W=96" "softmax --dtype bf16 --layout x=1,0 --dim N=3000 --dim D=16384" "batch_norm --dtype f32 --layout x=nhwc --dim N=64 --dim C=255 --dim H=28 --dim W=28" "batch_norm --dtype bf16 --layout x=nhwc --dim N=64 --dim C=100 --dim H=28 --dim W=28" "instance_norm --dtype bf16 --layout x=nhwc --dim N=3 --dim C=40 --dim H=48 --dim W=48"; do echo "$a: $($L run $a 2>&1 | grep -E 'rel err|error' | tr -s ' ' | cut -c1-110 | paste -sd' ')"; done
echo "== gpu tests [norm]"
timeout 200 .device/bin/loom_tests "[gpu][norm]" 2>&1 | grep -E "passed|failed|FAILED" -A4 | head -30
