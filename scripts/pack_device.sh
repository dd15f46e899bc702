#!/usr/bin/env bash
# Builds loom here and packs a stripped copy of the library, CLI and tests into .device/ for
# the GPU machine (which has no LLVM), and that folder into .device.tar.xz (~40 MB: the CLI and
# the tests link loom_static, LLVM included, so the folder itself is past the 64 MiB a call
# carries): `carry` .device.tar.xz and start the command with `tar -xJf .device.tar.xz`.
#   bash scripts/pack_device.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
rm -rf .device && mkdir -p .device/bin .device/lib
dir=${LOOM_BUILD_DIR:-build}
cp -L "$dir"/lib/libloom.so.0 .device/lib/  # the SONAME the binaries ask for
cp "$dir"/bin/loom "$dir"/bin/loom_tests "$dir"/bin/loom_capi_test .device/bin/
cp "$dir"/bin/example_* .device/bin/ 2>/dev/null || true
# The GPU machine may lack Debian's libfmt: carry it.
cp -L /usr/lib/x86_64-linux-gnu/libfmt.so.9 .device/lib/
strip --strip-unneeded .device/lib/libloom.so.0 .device/bin/*
du -sh .device
# Multi-threaded, fast preset: ~25 s on 2 cores.
tar -cf - .device | xz -T2 -3 > .device.tar.xz
ls -la .device.tar.xz
