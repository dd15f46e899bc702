#!/usr/bin/env bash
# Command 2 of the README: build everything and run the whole test suite (GPU tests skip with
# a message where no GPU is found).
#   bash scripts/test.sh [ctest arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd "${LOOM_BUILD_DIR:-build}"
ctest --output-on-failure -j2 "$@"
