#!/usr/bin/env bash
# Kernel replay: compiles the fixed corpus (tests/replay/corpus.txt, bench/workloads.txt and
# bench/workloads_backward.txt) for every target below and compares each kernel's PTX with the
# reviewed baseline tests/replay/<target>.txt, listing every kernel that changed; each line names
# the kernel's scheduler, tier and launch beside its hash. CI runs the same comparison as the
# ctests replay_<target>. A refactor shows "0 kernels changed"; a change of generated code runs
# this with --update and commits the baselines' diff with it.
#   bash scripts/replay.sh [--update] [--save DIR]   (DIR/<target>/NAME.kI.ptx: the PTX itself)
set -euo pipefail
cd "$(dirname "$0")/.."
loom=${LOOM:-${LOOM_BUILD_DIR:-build}/bin/loom}
update=() save=""
while [ $# -gt 0 ]; do
  case $1 in
    --update) update=(--update) ;;
    --save) save=$2; shift ;;
    *) echo "usage: scripts/replay.sh [--update] [--save DIR]" >&2; exit 2 ;;
  esac
  shift
done
status=0
while read -r target; do
  extra=()
  name=$(printf '%s' "$target" | tr '/+' '--')  # sm_90/132+symbolic -> sm_90-132-symbolic
  [ -n "$save" ] && extra=(--save "$save/$name")
  "$loom" replay tests/replay/corpus.txt bench/workloads.txt bench/workloads_backward.txt --target "$target" \
    --baseline "tests/replay/$name.txt" "${update[@]}" "${extra[@]}" || status=1
done < tests/replay/targets.txt
exit $status
