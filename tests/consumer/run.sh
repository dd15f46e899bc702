#!/usr/bin/env bash
# A C++ user outside loom's tree: install the build into a fresh prefix, build examples/
# group_norm.cpp against it with find_package(loom) (its only loom include <loom/loom.h>), run it
# (the CPU reference where there is no GPU), and check what the install holds: the SONAME, the
# CLI's version, the public headers only (each compiles alone, on the prefix's include/ only),
# and exports that are the public API only (no LLVM, no loom::<internal namespace>::).
#   Usage: run.sh SOURCE_DIR BUILD_DIR
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
# Internal namespaces (loom::ir::, loom::runtime::, ...) are lower case; public classes are not.
demangled=$(nm -DC --defined-only "$lib")
if grep -E "loom::[a-z][a-z_0-9]*::" <<< "$demangled" | head -5 | grep .; then
  echo "libloom exports symbols of loom's internal namespaces (above)"; exit 1
fi
# Every export is the C ABI or in namespace loom, and every loom:: name in it is one the
# installed headers' code (comments aside) declares: no internal type leaks through a template.
python3 - "$prefix/include/loom" <<< "$demangled" <<'PY' || exit 1
import re, sys, glob
names = set()
for h in glob.glob(sys.argv[1] + "/*.h"):
    code = re.sub(r"//[^\n]*|/\*.*?\*/", "", open(h).read(), flags=re.S)
    names.update(re.findall(r"\b\w+\b", code))
bad = []
for line in sys.stdin:
    sym = line.split(" ", 2)[-1].strip()
    if re.match(r"loom_\w+$", sym):
        continue
    if not re.match(r"(loom::|(typeinfo|typeinfo name|vtable) for loom::)", sym):
        bad.append(sym)
    elif any(n not in names for n in re.findall(r"loom::(\w+)", sym)):
        bad.append(sym)
for b in bad[:5]:
    print(b)
sys.exit("libloom exports symbols beyond the public API (above)" if bad else 0)
PY
for sym in "loom::FusionBuilder::finish()" "loom::Executor::run(" "loom::Fusion::parse(" \
           "loom::evaluateReference(loom::Fusion const&" "loom::layer_norm_backward(" "typeinfo for loom::Error" \
           " loom_abi_version" " loom_runner_run"; do
  grep -qF -- "$sym" <<< "$demangled" || { echo "libloom does not export $sym"; exit 1; }
done
# Only include/loom is installed, and each public header compiles alone from it.
extra=$(cd "$prefix/include" && find . -type f ! -path "./loom/*")
[ -z "$extra" ] || { echo "installed headers outside include/loom: $extra"; exit 1; }
for h in "$prefix"/include/loom/*.h; do
  if grep -n '#include "' "$h"; then echo "$(basename "$h") includes by quotes (above)"; exit 1; fi
  case $h in *loom_c.h) continue ;; esac
  echo "#include <loom/$(basename "$h")>" | c++ -std=c++20 -fsyntax-only -Wall -Wextra -Werror -I"$prefix/include" -x c++ - \
    || { echo "<loom/$(basename "$h")> does not compile alone"; exit 1; }
done
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
# loom's own members over internal types are not there for a user: these must not compile.
for wrong in 'auto f = loom::Fusion::builtin("add"); loom::Executor ex(*f);' \
             'loom::Executor ex(loom::Fusion::builtin("add"));' \
             'loom::FusionBuilder fb("b"); (void)fb.fusion();'; do
  if printf '#include <loom/loom.h>\nint main() { %s }\n' "$wrong" |
       c++ -std=c++20 -fsyntax-only -I"$prefix/include" -x c++ - 2> /dev/null; then
    echo "compiles against the installed headers but must not: $wrong"; exit 1
  fi
done
out=$("$work/b/consumer")
echo "$out" | tail -2
echo "$out" | grep -q "fusion group_norm" || { echo "the example printed no fusion"; exit 1; }
# The C header alone, from C, and the Python package beside the installed library.
printf '#include <loom/loom_c.h>\nint main(void) { return loom_abi_version() == LOOM_C_ABI_VERSION ? 0 : 1; }\n' > "$work/c.c"
cc -std=c11 -I"$prefix/include" "$work/c.c" -L"$(dirname "$lib")" -lloom -Wl,-rpath,"$(dirname "$lib")" -o "$work/c" &&
  "$work/c" || { echo "the C ABI from C: failed"; exit 1; }
pyver=$(cd "$work" && env -u LOOM_LIBRARY PYTHONPATH="$(dirname "$lib")/python3" python3 -c "import loom; print(loom.__version__)")
[ "loom $pyver" = "$ver" ] || { echo "the installed Python package says $pyver"; exit 1; }
echo "consumer ok: $ver, $(basename "$lib"), $(grep -c " [TWVu] " <<< "$exported") symbols exported, $(ls "$prefix"/include/loom/*.h | wc -l) public headers, C ABI, Python package"
