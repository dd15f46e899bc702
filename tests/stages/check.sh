#!/usr/bin/env bash
# One stage test: each `# RUN: PREFIX ARGS...` line of FILE runs `loom dump FILE ARGS...`, and
# LLVM's FileCheck matches that output against FILE's `# PREFIX:` lines (CHECK-NEXT and the rest
# as `PREFIX-NEXT:`).   tests/stages/check.sh LOOM FILECHECK FILE
set -euo pipefail
loom=$1 filecheck=$2 file=$3
runs=0
while read -r prefix args; do
  runs=$((runs + 1))
  # shellcheck disable=SC2086 (the RUN line's words are loom's arguments)
  if ! out=$("$loom" dump "$file" $args 2>&1); then
    printf '%s: `loom dump %s` failed:\n%s\n' "$file" "$args" "$out"
    exit 1
  fi
  if ! printf '%s\n' "$out" | "$filecheck" "$file" --check-prefix="$prefix" --dump-input=fail; then
    printf '%s: RUN %s (loom dump %s) does not match its %s: lines\n' "$file" "$prefix" "$args" "$prefix"
    exit 1
  fi
done < <(sed -n 's/^# RUN: //p' "$file")
[ "$runs" -gt 0 ] || { echo "$file: no '# RUN:' line"; exit 1; }
echo "$file: $runs stage checks passed"
