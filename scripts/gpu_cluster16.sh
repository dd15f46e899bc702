# GPU check and timing of rows split over clusters of 16 blocks (LOOM_TUNE_CLUSTER=16) against
# the default, and of first calls of a compiled class (one device call).
tar -xJf .device.tar.xz && export LD_LIBRARY_PATH=$PWD/.device/lib
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for env in LOOM_NONE=1 LOOM_TUNE_CLUSTER=16; do
  echo "== [$env] correctness"
  env $env .device/bin/loom run --batch bench/cases/group_norm_backward_sub_rows.txt 2>&1 | grep -E "== result" | sed 's/result [0-9]*: //' | sed 's/ (.*//' | sort | uniq -c
done
bench() { for round in 1 2; do for env in LOOM_NONE=1 LOOM_TUNE_CLUSTER=16; do echo "== [$env] $*"; env $env .device/bin/loom bench "$@" 2>&1 | grep -E "traffic|kernel [0-9]" | cut -c1-160; done; done; }
bench group_norm_backward --dim N=32 --dim C=128 --dim H=256 --dim W=256 --dtype f16
bench group_norm_backward --dim N=32 --dim C=128 --dim H=256 --dim W=256 --dtype bf16
bench group_norm_backward --dim N=8 --dim C=256 --dim H=128 --dim W=128 --dtype f32
bench group_norm --dim N=32 --dim C=128 --dim H=256 --dim W=256 --dtype f16
bench instance_norm_backward --dim N=8 --dim C=64 --dim H=256 --dim W=256 --dtype f16
echo "== first calls of compiled classes"
.device/bin/loom bench layer_norm_backward --dim D=1024 --sizes N=4000:4020 2>&1 | tail -4
.device/bin/loom bench layer_norm --dim D=4096 --sizes N=4093:4192 2>&1 | tail -4
