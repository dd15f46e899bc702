#!/usr/bin/env bash
# The coverage-guided fuzzer of the text format's parser and the IR's verifier
# (tests/fuzz/fuzz_parser.cpp, built by cmake/fuzz.cmake with clang's libFuzzer, ASan and UBSan).
#
#   bash scripts/fuzz_parser.sh --short            # CI: a fixed-seed pass (ctest fuzz_parser)
#   bash scripts/fuzz_parser.sh --runs 10000000    # a long run, 2 workers (-jobs/-workers)
#   bash scripts/fuzz_parser.sh -- -max_total_time=600   # anything after -- goes to libFuzzer
#
# The seed corpus is every built-in's text (`loom print NAME`, from ${LOOM_BUILD_DIR:-build})
# and examples/fusions/*.loom; tests/fuzz/regressions/ holds every input that ever found a bug
# (each is replayed first, and by the Catch2 test "fuzz regressions"). New inputs the fuzzer
# keeps go to build-fuzz/corpus; a finding is written to build-fuzz/findings/ and the script
# exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
short=0 runs="" jobs=1 pass=()
while (($#)); do
  case "$1" in
    --short) short=1 ;;
    --runs) runs=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --) shift; pass=("$@"); break ;;
    *) echo "fuzz_parser.sh: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
  shift
done
cxx=${LOOM_FUZZ_CXX:-clang++-14}
if ! command -v "$cxx" >/dev/null; then
  echo "fuzz_parser.sh: $cxx not found (Debian: clang-14 libclang-rt-14-dev; or set LOOM_FUZZ_CXX)" >&2
  exit 2
fi
loom=${LOOM_BUILD_DIR:-build}/bin/loom
[ -x "$loom" ] || { echo "fuzz_parser.sh: $loom not built (bash scripts/build.sh)" >&2; exit 2; }
dir=${LOOM_FUZZ_DIR:-build-fuzz}
if [ ! -f "$dir/build.ninja" ]; then
  CXX=$cxx cmake -S . -B "$dir" -G Ninja -DLOOM_FUZZ=ON >/dev/null
fi
ninja -C "$dir" fuzz_parser >/dev/null
seeds=$dir/seeds
rm -rf "$seeds" && mkdir -p "$seeds" "$dir/corpus" "$dir/findings"
"$loom" examples | awk '{print $1}' | while read -r name; do
  "$loom" print "$name" > "$seeds/$name.loom"
done
cp examples/fusions/*.loom "$seeds/"
fuzzer=$dir/bin/fuzz_parser
common=(-dict=tests/fuzz/loom.dict -max_len=4096 -timeout=10 -rss_limit_mb=2048
        -artifact_prefix="$dir/findings/" -print_final_stats=1)
# Every earlier finding first: each must now be a fusion or a located error.
shopt -s nullglob
found=(tests/fuzz/regressions/*)
shopt -u nullglob
if ((${#found[@]})); then "$fuzzer" "${common[@]}" "${found[@]}" 2>&1 | tail -n 1; fi
if ((short)); then
  # Fixed seed and count, from the seeds alone (not the growing corpus): the same inputs each run.
  "$fuzzer" "${common[@]}" -seed=1 -runs=${runs:-60000} "$seeds" "${pass[@]}" 2>&1 \
    | grep -E "^Done|stat::(number_of_executed_units|new_units_added|peak_rss)|ERROR|SUMMARY|fuzz_parser:|Test unit written"
else
  args=("${common[@]}" "$dir/corpus" "$seeds" "${pass[@]}")
  [ -n "$runs" ] && args=(-runs="$runs" "${args[@]}")
  if ((jobs > 1)); then
    # -fork keeps one merged corpus and stops at the first crash, timeout or leak.
    args=(-fork="$jobs" "${args[@]}")
  fi
  "$fuzzer" "${args[@]}" 2>&1 | tee "$dir/last_run.log" | grep -E "^#[0-9]+ +(DONE|pulse|INITED)|ERROR|SUMMARY|fuzz_parser:|stat::|FUZZER|INFO: fuzzed" | tail -n 40
fi
