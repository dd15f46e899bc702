tar -xJf .device.tar.xz && export LD_LIBRARY_PATH=$PWD/.device/lib
nvidia-smi --query-gpu=name --format=csv,noheader
ab() { for r in 1 2; do for env in LOOM_NONE=1 LOOM_NO_BATCHED_REDUCTIONS=1; do printf "%-34s %s: " "$env" "$*"; env $env .device/bin/loom bench "$@" 2>&1 | grep -E "traffic" | grep -o "[0-9.]* GB/s = [0-9.]*%" | head -1; done; done; }
for d in 1024 4096 8192 16384; do ab layer_norm_backward --dim N=4096 --dim D=$d --dtype f16; done
ab layer_norm_backward --dim N=32768 --dim D=1024 --dtype f16
ab layer_norm_backward --dim N=32768 --dim D=4096 --dtype f16
ab layer_norm_2d_backward --dim N=64 --dim C=768 --dim H=14 --dim W=14 --dtype f16 --layout x=nhwc --layout dy=nhwc
.device/bin/loom run --batch bench/cases/layer_norm_backward_batched.txt 2>&1 | grep "== result" | sed 's/result [0-9]*: //' | sort | uniq -c
