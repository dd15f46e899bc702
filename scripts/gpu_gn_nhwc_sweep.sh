# Knob sweep of channels-last group_norm_backward's first kernel (the grid tier), one device call.
tar -xJf .device.tar.xz && export LD_LIBRARY_PATH=$PWD/.device/lib
nvidia-smi --query-gpu=name --format=csv,noheader
w="group_norm_backward --dim N=32 --dim C=128 --dim H=256 --dim W=256 --dtype f16 --layout x=nhwc --layout dy=nhwc"
.device/bin/loom dump $w --stage schedule 2>&1 | head -1 | cut -c1-400
for env in LOOM_NONE=1 LOOM_TUNE_GRID_GROUPS=2 LOOM_TUNE_GRID_GROUPS=4 LOOM_TUNE_GRID_PREFETCH=1 \
    LOOM_TUNE_ROWS_TOGETHER=4 LOOM_TUNE_ROWS_TOGETHER=16 "LOOM_TUNE_ROWS_TOGETHER=16 LOOM_TUNE_GRID_GROUPS=2" \
    "LOOM_TUNE_ROWS_TOGETHER=16 LOOM_TUNE_GRID_GROUPS=3" "LOOM_TUNE_GRID_GROUPS=2 LOOM_TUNE_GRID_PREFETCH=1" LOOM_NONE=2; do
  echo "== $env: $(env $env .device/bin/loom bench $w 2>&1 | grep -E "kernel 1/" | sed 's/: [0-9.]* ms median/&/' | cut -c1-140)"
done
