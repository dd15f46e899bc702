#!/usr/bin/env bash
# A C++ user outside loom's tree: install the build into a fresh prefix, build examples/
# group_norm.cpp against it with find_package(loom) (its only loom include <loom/loom.h>), run it
# (the CPU reference where there is no GPU), and check what the install holds: the SONAME, the
# CLI's version, no LLVM symbols exported.  Usage: run.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
work=$(mktemp -d /tmp/loom-consumer.XXXXXX)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
prefix=$work/prefix
lib=$(ls "$prefix"/lib*/libloom.so.0 2>/dev/null || ls "$prefix"/lib/*/libloom.so.0)
# (Whole outputs first: `grep -q` on a pipe would stop its writer early, and pipefail call that
# a failure.)
headers=$(objdump -p "$lib")
grep -q "SONAME *libloom.so.0" <<< "$headers" || { echo "libloom: no SONAME libloom.so.0"; exit 1; }
exported=$(nm -D --defined-only "$lib")
if grep -E " (_ZNK?4llvm|_ZTVN4llvm|LLVM)" <<< "$exported" | head -3 | grep .; then
  echo "libloom exports LLVM's symbols (above)"; exit 1
fi
ver=$("$prefix/bin/loom" --version)
[ "$ver" = "loom $(sed -n 's/^project(loom VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")" ] || { echo "loom --version: $ver"; exit 1; }
cmake -S "$src/tests/consumer" -B "$work/b" -DCMAKE_PREFIX_PATH="$prefix" -DLOOM_EXAMPLE="$src/examples/group_norm.cpp" \
  -DCMAKE_BUILD_TYPE=Release > "$work/configure.log" || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/b" > "$work/build.log" 2>&1 || { tail -30 "$work/build.log"; exit 1; }
if command -v pkg-config > /dev/null; then
  flags=$(PKG_CONFIG_PATH="$(dirname "$lib")/pkgconfig" pkg-config --cflags --libs loom)
  found=no
  for f in $flags; do case $f in -I*) [ -f "${f#-I}/loom/loom.h" ] && found=yes ;; esac; done
  [ $found = yes ] || { echo "loom.pc: no -I directory holds loom/loom.h: $flags"; exit 1; }
fi
out=$("$work/b/consumer")
echo "$out" | tail -2
echo "$out" | grep -q "fusion group_norm" || { echo "the example printed no fusion"; exit 1; }
# The C header alone, from C, and the Python package beside the installed library.
printf '#include <loom/loom_c.h>\nint main(void) { return loom_abi_version() == LOOM_C_ABI_VERSION ? 0 : 1; }\n' > "$work/c.c"
cc -std=c11 -I"$prefix/include" "$work/c.c" -L"$(dirname "$lib")" -lloom -Wl,-rpath,"$(dirname "$lib")" -o "$work/c" &&
  "$work/c" || { echo "the C ABI from C: failed"; exit 1; }
pyver=$(cd "$work" && env -u LOOM_LIBRARY PYTHONPATH="$(dirname "$lib")/python3" python3 -c "import loom; print(loom.__version__)")
[ "loom $pyver" = "$ver" ] || { echo "the installed Python package says $pyver"; exit 1; }
echo "consumer ok: $ver, $(basename "$lib"), C ABI, Python package"
