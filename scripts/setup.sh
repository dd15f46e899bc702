#!/usr/bin/env bash
# Command 1 of the README: install what is missing, build, and show loom's main job on the
# built-in group norm: its text form, segments and the reason for each, the kernel, and a run
# checked against the CPU reference when a GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh loom_cli
loom=${LOOM_BUILD_DIR:-build}/bin/loom
set -x
"$loom" examples
"$loom" print group_norm
"$loom" eval group_norm
