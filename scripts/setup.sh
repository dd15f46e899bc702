#!/usr/bin/env bash
# Command 1 of the README: install what is missing, build, and show loom's main job on the
# built-in group norm: its text form, its atoms, its segments and why, its kernel IR, and a run
# checked against the CPU reference when a GPU is present.
#   bash scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh loom_cli example_group_norm
# The Python package (python/loom, pure Python over libloom's C ABI): a loom.pth in each python3's
# user site-packages makes `import loom` find it, and it finds build/lib/libloom.so.0 itself.
for py in python3 /usr/bin/python3; do
  command -v "$py" > /dev/null || continue
  site=$("$py" -m site --user-site) && mkdir -p "$site" && echo "$PWD/python" > "$site/loom.pth"
done
# loom.torch's C++ extension, where PyTorch is importable: built now into loom's cache (else at
# the first `import loom.torch`; without PyTorch there is nothing to build).
for py in python3 /usr/bin/python3; do
  if command -v "$py" > /dev/null && "$py" -c "import torch" 2>/dev/null; then
    echo "building loom.torch's extension with $py (about a minute the first time)"
    PYTHONPATH=$PWD/python "$py" -c "import loom.torch.ops as o; print('loom.torch:', 'compiled extension' if o.EXTENSION else o.WHY)"
    break
  fi
done
loom=${LOOM_BUILD_DIR:-build}/bin/loom
show() { echo; echo "\$ loom $*"; "$loom" "$@"; }
show examples
show print group_norm
show dump group_norm --stage domains
show segment group_norm
show segment group_norm --layout x=nhwc
echo; echo "\$ loom dump group_norm --stage kir   (the kernel IR after its last pass)"
"$loom" dump group_norm --stage kir | awk '/^\/\/ after pass `lower-combines`/{p=1} p'
echo; echo "\$ loom dump group_norm --stage ptx | head -40"
"$loom" dump group_norm --stage ptx | sed -n 1,40p  # (sed reads it all: no SIGPIPE under pipefail)
echo; echo "\$ python3 examples/python/basics.py   (loom from Python)"
python3 examples/python/basics.py
if "$loom" run group_norm --dim N=4 --iters 0 >/tmp/loom-run.txt 2>&1; then
  show run group_norm --dim N=4
  show run group_norm --dim N=4 --layout x=nhwc
else
  echo; echo "(no GPU here: $(tail -1 /tmp/loom-run.txt)); the CPU reference instead:"
  show eval group_norm
fi
