"""The compiled half of loom.torch: csrc/ (C++ over PyTorch's C++ API and libloom's public C++
API) built with torch.utils.cpp_extension and ninja into loom's cache, once per PyTorch version,
Python version, libloom build and source text, then loaded. Where it cannot be built (no compiler,
no ninja, no headers), `load()` says why and loom.torch runs its ctypes path."""
import hashlib
import os
import sys
from pathlib import Path

from .._lib import lib as _cdll

_HERE = Path(__file__).resolve().parent
_SOURCES = ("runner.cpp", "norm_ops.cpp", "autograd.cpp", "module.cpp")


def _library_path():
    return Path(_cdll._name).resolve()


def _include_dir():
    """libloom's public headers: the source tree's include/, or an installed prefix's."""
    for d in (_HERE.parents[2] / "include", _HERE.parents[3] / "include"):
        if (d / "loom" / "executor.h").is_file():
            return d
    return None


def cache_root():
    base = os.environ.get("LOOM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "loom")
    return Path(base) / "torch-extension"


def _tag(torch, lib, include):
    h = hashlib.sha256()
    st = lib.stat()
    h.update(f"{torch.__version__}|{torch.version.cuda}|{sys.version}|{lib}|{st.st_size}|{st.st_mtime_ns}".encode())
    for name in sorted(os.listdir(_HERE / "csrc")):
        h.update(name.encode() + (_HERE / "csrc" / name).read_bytes())
    for p in sorted((include / "loom").glob("*")):
        h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()[:16]


def load(verbose=False):
    """(module, None) with the extension built or found in the cache, or (None, why not)."""
    if os.environ.get("LOOM_TORCH_EXTENSION") == "0":
        return None, "LOOM_TORCH_EXTENSION=0"
    try:
        import torch
        from torch.utils import cpp_extension
    except ImportError as e:
        return None, f"PyTorch's cpp_extension is not importable ({e})"
    include = _include_dir()
    if include is None:
        return None, "libloom's public headers (include/loom) were not found beside the package"
    lib = _library_path()
    tag = _tag(torch, lib, include)
    build = cache_root() / tag
    try:
        build.mkdir(parents=True, exist_ok=True)
        mod = cpp_extension.load(
            name=f"loom_torch_{tag}",
            sources=[str(_HERE / "csrc" / s) for s in _SOURCES],
            extra_include_paths=[str(include)],
            extra_cflags=["-O2", "-std=c++20", "-fvisibility=hidden"],
            extra_ldflags=[str(lib), f"-Wl,-rpath,{lib.parent}"],
            build_directory=str(build),
            with_cuda=True,
            verbose=verbose,
        )
    except Exception as e:  # noqa: BLE001 (a failed build of any kind: the ctypes path instead)
        log = build / "build-error.log"
        try:
            log.write_text(f"{type(e).__name__}: {e}\n")
        except OSError:
            log = None
        first = str(e).strip().splitlines()
        return None, (f"building it in {build} failed ({first[0][:200] if first else type(e).__name__})"
                      + (f"; the compiler's output is in {log}" if log else ""))
    return mod, None
