#!/usr/bin/env bash
# Installs what loom needs to build that is missing (Debian 12 packages). A no-op when all is there.
#   bash scripts/install_deps.sh
set -euo pipefail
# python3-numpy and python3-pytest: the Python package's CPU tests (python/tests), under Debian's python3.
# clang-14 and libclang-rt-14-dev: libFuzzer, for the parser's fuzzer (scripts/fuzz_parser.sh).
# llvm-19-tools: FileCheck, for the stage tests (tests/stages).
pkgs=(cmake ninja-build g++ llvm-19-dev llvm-19-tools libzstd-dev zlib1g-dev libfmt-dev catch2 python3-numpy
      python3-pytest clang-14 libclang-rt-14-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if [ ! -f /usr/local/cuda/include/cuda.h ] || ! ls /usr/local/cuda/nvvm/libdevice/libdevice*.bc >/dev/null 2>&1; then
  echo "error: loom needs the CUDA toolkit's cuda.h and libdevice under /usr/local/cuda" >&2
  echo "       (set LOOM_CUDA_ROOT=/path/to/cuda to use another)" >&2
  [ -n "${LOOM_CUDA_ROOT:-}" ] || exit 1
fi
