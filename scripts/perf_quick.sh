export LD_LIBRARY_PATH=$PWD/.device/lib
L=.device/bin/loom
for d in 256 1024 4096 16384 65536; do echo "rms_norm bf16 32768x$d"; $L run rms_norm --dim N=32768 --dim D=$d --iters 30 --no-check | grep kernel; done
for d in 1024 4096 16384; do echo "layer_norm f16 32768x$d"; $L run layer_norm --dim N=32768 --dim D=$d --iters 30 --no-check | grep kernel; echo "softmax f16 32768x$d"; $L run softmax --dim N=32768 --dim D=$d --iters 30 --no-check | grep kernel; done
echo "group_norm nchw"; $L run group_norm --dim N=32 --dim C=128 --dim H=256 --dim W=256 --iters 20 --no-check | grep kernel
echo "group_norm nhwc"; $L run group_norm --dim N=32 --dim C=128 --dim H=256 --dim W=256 --layout x=nhwc --iters 20 --no-check | grep kernel
echo "ln2d nchw"; $L run layer_norm_2d --dim N=64 --dim C=128 --dim H=56 --dim W=56 --iters 20 --no-check | grep kernel
echo "ln2d nhwc"; $L run layer_norm_2d --dim N=64 --dim C=128 --dim H=56 --dim W=56 --layout x=nhwc --iters 20 --no-check | grep kernel
echo "batch_norm"; $L run batch_norm --dim N=64 --dim C=256 --dim H=28 --dim W=28 --iters 20 --no-check | grep kernel
echo "add 256M f16"; $L run add --dim N=268435456 --iters 20 --no-check | grep -E "kernel|compile"
