#!/usr/bin/env bash
# Stop 45: layer_norm 4096 x 4096 exact against runtime-sized (LOOM_TUNE_SYMBOLIC=1), and each
# with the register allocation held to 8 or 9 blocks an SM (LOOM_TUNE_MIN_BLOCKS), three rounds;
# the registers each cubin got (cuobjdump of loom's disk cache).   bash scripts/gpu_stop45_symbolic_ln.sh
set -u
tar -xJf .device.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
L=.device/bin/loom
for dt in f16 bf16; do
  for cfg in "LOOM_NONE=1" "LOOM_TUNE_MIN_BLOCKS=9" "LOOM_TUNE_SYMBOLIC=1" "LOOM_TUNE_SYMBOLIC=1 LOOM_TUNE_MIN_BLOCKS=8" "LOOM_TUNE_SYMBOLIC=1 LOOM_TUNE_MIN_BLOCKS=9"; do
    for r in 1 2 3; do
      rm -rf /tmp/lc; mkdir -p /tmp/lc
      g=$(env $cfg LOOM_CACHE_DIR=/tmp/lc $L bench layer_norm --dim N=4096 --dim D=4096 --dtype $dt 2>&1 | grep -oE "traffic: .* GB/s =" | grep -oE "[0-9.]+ GB/s")
      sleep 1
      regs=$(python3 - <<'PY'
import glob, os, re, subprocess
out = []
for p in glob.glob("/tmp/lc/**/*", recursive=True):
    if not os.path.isfile(p): continue
    b = open(p, "rb").read()
    m = re.search(rb"\ncubin (-?\d+) (\d+)\n", b)
    if not m or int(m.group(2)) == 0: continue
    c = b[m.end():m.end() + int(m.group(2))]
    open("/tmp/k.cubin", "wb").write(c)
    r = subprocess.run(["/usr/local/cuda/bin/cuobjdump", "-res-usage", "/tmp/k.cubin"], capture_output=True, text=True).stdout
    out += re.findall(r"REG:\d+", r)
print(" ".join(out))
PY
)
      echo "$dt [$cfg] round $r: $g $regs"
    done
  done
done
