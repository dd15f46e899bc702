#!/usr/bin/env bash
# On the GPU machine: the same workloads timed with two builds of loom in one call, old and
# new alternating (old, new, new, old), so that a refactor shows its speed beside the code it
# replaced. Both directories hold bin/loom and lib/ as scripts/pack_device.sh makes them.
#   here:   bash scripts/pack_device.sh; (build the old commit and pack it as .device-old)
#   there:  bash scripts/bench_ab.sh .device-old .device [FILTER]
# Prints one line per workload: GB/s of each run, their medians and new/old; a workload whose
# two builds disagree on success is marked. Exits 1 if any workload failed with the new build.
set -uo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2 filter=${3:-.}
. scripts/workloads.sh
export LOOM_CACHE_DIR=$(mktemp -d /tmp/loom-ab.XXXXXX)
gbps() {  # DIR ARGS...: GB/s of one `loom bench`, or FAIL
  local dir=$1; shift
  LD_LIBRARY_PATH=$PWD/$dir/lib "$dir/bin/loom" bench "$@" --json 2>/dev/null |
    grep -oE '"gbps": [0-9.]+' | head -1 | grep -oE '[0-9.]+$' || echo FAIL
}
median2() { python3 -c "import sys; v=sorted(float(x) for x in sys.argv[1:]); print(f'{(v[0]+v[1])/2:.0f}')" "$@"; }
status=0
printf '%-40s %-13s %-13s %7s %7s %6s\n' workload old new old_med new_med ratio
one() {
  local name=$1; shift
  local o1 n1 n2 o2
  o1=$(gbps "$old" "$@"); n1=$(gbps "$new" "$@"); n2=$(gbps "$new" "$@"); o2=$(gbps "$old" "$@")
  if [[ "$n1$n2" == *FAIL* ]]; then status=1; printf '%-40s %s\n' "$name" "FAIL new: $n1 $n2 (old $o1 $o2)"; return; fi
  if [[ "$o1$o2" == *FAIL* ]]; then printf '%-40s %s\n' "$name" "old failed: $o1 $o2, new $n1 $n2"; return; fi
  local om nm
  om=$(median2 "$o1" "$o2"); nm=$(median2 "$n1" "$n2")
  printf '%-40s %-13s %-13s %7s %7s %6s\n' "$name" "${o1%.*}/${o2%.*}" "${n1%.*}/${n2%.*}" "$om" "$nm" \
    "$(python3 -c "print(f'{$nm/$om:.3f}')")"
}
for_each_workload "$filter" one
exit $status
