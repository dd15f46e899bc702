#!/usr/bin/env bash
# On the GPU machine (.device.tar.xz and .device-sym carried): one kernel loaded through the
# driver's PTX JIT and as loom's nvJitLink cubin (exact sizes and LOOM_TUNE_SYMBOLIC), timed, with
# both cubins' register use and SASS beside ptxas's from the same PTX, into $OUT.
#   bash scripts/dev_cubin_probe.sh [FUSION ARGS...]   (default: layer_norm bf16 32768 x 16384)
[ -d .device ] || tar -xJf .device.tar.xz; export LD_LIBRARY_PATH=$PWD/.device/lib
W=${*:-layer_norm --dtype bf16 --dim N=32768 --dim D=16384}
for b in .device .device-sym; do
  export LOOM_CACHE_DIR=/tmp/probe$b; rm -rf $LOOM_CACHE_DIR
  for mode in fresh cubin cubin ptxjit; do
    if [ $mode = ptxjit ]; then export LOOM_CUBIN=0; else unset LOOM_CUBIN; fi
    printf "%-12s %-7s " $b $mode; $b/bin/loom bench $W --json 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); print(round(d['gbps']), d['time_ms'], d['compile']['source'])"
  done
  unset LOOM_CUBIN
  python3 - $LOOM_CACHE_DIR $OUT/$(basename $b).cubin <<'PY'
import sys,os,glob
for f in glob.glob(sys.argv[1]+'/**/*',recursive=True):
    if not os.path.isfile(f): continue
    b=open(f,'rb').read(); i=b.find(b'\ncubin ')
    if i<0: continue
    j=b.index(b'\n',i+1); sm,n=b[i+7:j].split(); n=int(n)
    if n: open(sys.argv[2],'wb').write(b[j+1:j+1+n]); print('cubin',f,sm,n)
PY
  $b/bin/loom dump $W --stage ptx > $OUT/$(basename $b).ptx 2>/dev/null
  ptxas -arch=sm_90 -v $OUT/$(basename $b).ptx -o $OUT/$(basename $b).ptxas.cubin 2>&1 | grep -E "registers|spill"
  cuobjdump -res-usage $OUT/$(basename $b).cubin 2>&1 | grep -E "REG|Function"
  cuobjdump -sass $OUT/$(basename $b).cubin > $OUT/$(basename $b).jitlink.sass; cuobjdump -sass $OUT/$(basename $b).ptxas.cubin > $OUT/$(basename $b).ptxas.sass
  wc -l $OUT/$(basename $b).jitlink.sass $OUT/$(basename $b).ptxas.sass | head -2
done
ptxas --version | tail -1
