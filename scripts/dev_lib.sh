# Sourced by the scripts/dev_*.sh device scripts (on the GPU machine, .device carried): the
# environment they run loom in, and their two helpers.
export LD_LIBRARY_PATH=$PWD/.device/lib LOOM_CACHE_DIR=/tmp/loom-cache
L=.device/bin/loom
# check ARGS...: `loom run ARGS` against the float64 reference: ok or FAIL, the arguments, and
# the launch and each output's error on one line.
check() {
  local r s
  if r=$($L run "$@" 2>&1); then s=ok; else s=FAIL; fi
  echo "$s $* :: $(echo "$r" | grep -E "rel err|error|kernel 1" | tr -s ' ' | cut -c1-80 | paste -sd';' | cut -c1-420)"
}
# gbps ARGS...: the plan's GB/s of `loom bench ARGS` (50 timed runs), or ERR.
gbps() {
  $L bench "$@" --json --iters 50 2>/dev/null |
    python3 -c 'import json,sys; j=json.loads(sys.stdin.read()); print("%.0f" % j["gbps"])' 2>/dev/null || echo ERR
}
