# First calls of a compiled class, two builds in turn on one machine (.device-old, .device), and
# the group norm backward kernels' cluster choice (one device call).
# .device-old.tar.xz: another build's bin/loom and lib/libfmt.so.9 under .device-old/ (the CLI links loom
# statically), packed as scripts/pack_device.sh packs .device.
set -u
tar -xJf .device.tar.xz && tar -xJf .device-old.tar.xz
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2; do
  for b in .device-old .device; do
    echo "== round $round $b"
    LD_LIBRARY_PATH=$PWD/$b/lib $b/bin/loom bench layer_norm_backward --dim D=1024 --sizes N=4000:4020 2>&1 | tail -1
    LD_LIBRARY_PATH=$PWD/$b/lib $b/bin/loom bench layer_norm --dim D=4096 --sizes N=4093:4192 2>&1 | tail -1
    LD_LIBRARY_PATH=$PWD/$b/lib $b/bin/loom bench rms_norm_backward --dim D=4096 --sizes N=2000:2020 2>&1 | tail -1
  done
done
export LD_LIBRARY_PATH=$PWD/.device/lib
echo "== correctness, default"
.device/bin/loom run --batch bench/cases/group_norm_backward_sub_rows.txt 2>&1 | grep -E "== result" | sed 's/result [0-9]*: //' | sed 's/ (.*//' | sort | uniq -c
for round in 1 2; do for env in LOOM_NONE=1 LOOM_TUNE_CLUSTER=8; do for dt in f16 bf16; do
  echo "== [$env] group_norm_backward 32x128x256x256 $dt"
  env $env .device/bin/loom bench group_norm_backward --dim N=32 --dim C=128 --dim H=256 --dim W=256 --dtype $dt 2>&1 | grep -E "traffic|kernel 1/" | cut -c1-150
done; done; done
