# GPU check and timing of split sums, sub-row reductions and batched reductions (one device call).
tar -xJf .device.tar.xz && export LD_LIBRARY_PATH=$PWD/.device/lib
bash scripts/gpu_cases.sh bench/cases/group_norm_backward_sub_rows.txt
bench() { for env in LOOM_NONE=1 LOOM_NO_BATCHED_REDUCTIONS=1 LOOM_NO_SPLIT_REDUCTIONS=1; do echo "== [$env] $*"; env $env .device/bin/loom bench "$@" 2>&1 | grep -E "traffic|kernel [0-9]" | cut -c1-150; done; }
bench group_norm_backward --dim N=32 --dim C=128 --dim H=256 --dim W=256 --dtype f16
bench group_norm_backward --dim N=32 --dim C=128 --dim H=56 --dim W=56 --dtype bf16
bench group_norm_backward --dim N=5 --dim C=96 --dim H=331 --dim W=313 --dtype f16
bench group_norm_backward --dim N=32 --dim C=128 --dim H=64 --dim W=64 --dtype f32
bench instance_norm_backward --dim N=32 --dim C=64 --dim H=128 --dim W=128 --dtype f16
bench batch_norm_backward --dim N=64 --dim C=256 --dim H=28 --dim W=28 --dtype f32
bench batch_norm_backward --dim N=32 --dim C=128 --dim H=56 --dim W=56 --dtype f16
