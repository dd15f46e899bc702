#!/usr/bin/env bash
# The Python package's tests over a built libloom: python/run_tests.sh [BUILD_DIR] [pytest args].
# CPU tests everywhere; with PyTorch and a GPU (the GPU machine) also test_gpu_torch.py. Uses the
# first python3 that has numpy and pytest (scripts/install_deps.sh installs Debian's).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
shift || true
lib=$(cd "$build" && pwd)/lib/libloom.so.0
[ -f "$lib" ] || lib=$(cd "$build" && pwd)/libloom.so.0  # a packed .device/lib
for py in python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null && "$py" -c "import numpy, pytest" 2>/dev/null; then
    cd "$here"
    # Test files named in the arguments: those alone; else every test.
    paths=(tests)
    for a in "$@"; do [[ $a == tests/* ]] && paths=(); done
    LOOM_LIBRARY=$lib exec "$py" -m pytest -q -p no:cacheprovider "${paths[@]}" "$@"
  fi
done
echo "error: no python3 with numpy and pytest found; run scripts/install_deps.sh (python3-numpy, python3-pytest)" >&2
exit 1
