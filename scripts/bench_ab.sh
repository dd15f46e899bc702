#!/usr/bin/env bash
# On the GPU machine: the same workloads timed with two or more builds of loom in one call, in
# mirrored order (A, B, C, C, B, A), so that a change shows its speed beside the code it
# replaced. Each directory holds bin/loom and lib/ as scripts/pack_device.sh makes them (bin/loom
# may be a script that sets a knob and runs another build's loom).
#   here:   bash scripts/pack_device.sh; (build the old commit and pack it as .device-old)
#   there:  bash scripts/bench_ab.sh .device-old .device [MORE_DIRS...] [FILTER]
# Prints one line per workload: GB/s of each run, each build's median of its two runs and its
# ratio to the first build's; a workload whose builds disagree on success is marked. Exits 1 if
# any workload failed with a build after the first.
set -uo pipefail
cd "$(dirname "$0")/.."
dirs=() filter=.
for a in "$@"; do if [ -d "$a" ]; then dirs+=("$a"); else filter=$a; fi; done
[ ${#dirs[@]} -ge 2 ] || { echo "usage: bench_ab.sh DIR DIR [DIR...] [FILTER]" >&2; exit 2; }
. scripts/workloads.sh
export LOOM_CACHE_DIR=$(mktemp -d /tmp/loom-ab.XXXXXX)
gbps() {  # DIR ARGS...: GB/s of one `loom bench`, or FAIL
  local dir=$1; shift
  LD_LIBRARY_PATH=$PWD/$dir/lib "$dir/bin/loom" bench "$@" --json 2>/dev/null |
    grep -oE '"gbps": [0-9.]+' | head -1 | grep -oE '[0-9.]+$' || echo FAIL
}
status=0
header=$(printf '%-40s' workload)
for d in "${dirs[@]}"; do header+=$(printf ' %-22s' "$(basename "$d")"); done
echo "$header   (each: run/run median ratio)"
one() {
  local name=$1; shift
  local -a first second
  local n=${#dirs[@]} k
  for ((k = 0; k < n; k++)); do first[k]=$(gbps "${dirs[k]}" "$@"); done
  for ((k = n - 1; k >= 0; k--)); do second[k]=$(gbps "${dirs[k]}" "$@"); done
  local line base
  line=$(printf '%-40s' "$name")
  for ((k = 0; k < n; k++)); do
    local a=${first[k]} b=${second[k]}
    if [[ "$a$b" == *FAIL* ]]; then
      line+=$(printf ' %-22s' "FAIL($a/$b)")
      [ $k -gt 0 ] && status=1
      continue
    fi
    local med
    med=$(python3 -c "print(f'{($a+$b)/2:.0f}')")
    [ $k -eq 0 ] && base=$med
    local ratio
    ratio=$(python3 -c "print(f'{$med/$base:.3f}')" 2>/dev/null || echo "-")
    line+=$(printf ' %-22s' "${a%.*}/${b%.*} $med $ratio")
  done
  echo "$line"
}
for_each_workload "$filter" one
exit $status
