"""libloom through ctypes: finding the library, the C ABI's prototypes (include/loom/loom_c.h),
and turning a failed call's status into a Python exception carrying loom's message."""
import ctypes
import ctypes.util
import os
from pathlib import Path

from .errors import ArgumentError, InputError, InternalError, NoGpuError

ABI_VERSION = 1  # LOOM_C_ABI_VERSION this package was written for


class Tensor(ctypes.Structure):
    """loom_tensor: data, dtype, ndim, shape, strides (elements; NULL: row-major)."""
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64))]


def _candidates():
    env = os.environ.get("LOOM_LIBRARY")
    if env:
        yield Path(env)
        return
    here = Path(__file__).resolve().parent
    yield here.parent.parent / "build" / "lib" / "libloom.so.0"  # the source tree, built
    yield here.parent.parent / "libloom.so.0"                      # installed: P/lib/python3/loom
    found = ctypes.util.find_library("loom")
    if found:
        yield Path(found)


def _load():
    tried = []
    for p in _candidates():
        if p.name == p.as_posix() or p.exists():  # a bare name from find_library, or a file
            try:
                return ctypes.CDLL(str(p))
            except OSError as e:
                tried.append(f"{p}: {e}")
        else:
            tried.append(f"{p}: no such file")
    raise ImportError("loom: libloom.so.0 not found (build it with `bash scripts/build.sh`, or set "
                      "LOOM_LIBRARY to its path); tried: " + "; ".join(tried))


lib = _load()

_c = ctypes
_P = _c.c_void_p
_S = _c.c_char_p
_STATUS = _c.c_int
_OUT_STR = _c.POINTER(_c.c_void_p)  # char** (freed with loom_string_free)
_TENSORS = _c.POINTER(Tensor)

_PROTOS = {
    "loom_abi_version": (_c.c_int32, []),
    "loom_version": (_S, []),
    "loom_last_error": (_S, []),
    "loom_string_free": (None, [_P]),
    "loom_dtype_name": (_S, [_c.c_int32]),
    "loom_builtins_json": (_STATUS, [_OUT_STR]),
    "loom_fusion_from_text": (_STATUS, [_S, _c.c_size_t, _c.POINTER(_P)]),
    "loom_fusion_builtin": (_STATUS, [_S, _S, _c.POINTER(_P)]),
    "loom_fusion_op": (_STATUS, [_S, _S, _c.POINTER(_P)]),
    "loom_fusion_free": (None, [_P]),
    "loom_fusion_text": (_STATUS, [_P, _OUT_STR]),
    "loom_fusion_signature_json": (_STATUS, [_P, _OUT_STR]),
    "loom_fusion_segments_json": (_STATUS, [_P, _P, _OUT_STR]),
    "loom_fusion_dump": (_STATUS, [_P, _S, _P, _OUT_STR]),
    "loom_options_create": (_STATUS, [_c.POINTER(_P)]),
    "loom_options_free": (None, [_P]),
    "loom_options_set_size": (_STATUS, [_P, _S, _c.c_int64]),
    "loom_options_set_layout": (_STATUS, [_P, _S, _S]),
    "loom_options_set_target": (_STATUS, [_P, _c.c_int32, _c.c_int32]),
    "loom_options_set_knob": (_STATUS, [_P, _S, _c.c_int64]),
    "loom_fusion_eval": (_STATUS, [_P, _TENSORS, _c.c_size_t, _P, _c.POINTER(_P)]),
    "loom_results_count": (_c.c_size_t, [_P]),
    "loom_results_get": (_STATUS, [_P, _c.c_size_t, _c.POINTER(Tensor)]),
    "loom_results_free": (None, [_P]),
    "loom_gpu_available": (_c.c_int32, []),
    "loom_select_device": (_STATUS, [_c.c_int32]),
    "loom_selected_device": (_c.c_int32, []),
    "loom_pointer_device": (_STATUS, [_c.c_void_p, _c.POINTER(_c.c_int32)]),
    "loom_runner_create": (_STATUS, [_P, _P, _c.POINTER(_P)]),
    "loom_runner_free": (None, [_P]),
    "loom_runner_outputs_json": (_STATUS, [_P, _TENSORS, _c.c_size_t, _OUT_STR]),
    "loom_runner_run": (_STATUS, [_P, _TENSORS, _c.c_size_t, _TENSORS, _c.c_size_t, _c.c_size_t]),
}
for _name, (_res, _args) in _PROTOS.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args

if lib.loom_abi_version() != ABI_VERSION:
    raise ImportError(f"loom: libloom speaks C ABI {lib.loom_abi_version()}, this package {ABI_VERSION}; "
                      "use the package from the same build")

_ERRORS = {1: InputError, 2: ArgumentError, 3: NoGpuError, 4: InternalError}


def check(status):
    """Raises the exception for a failed call, with loom's message."""
    if status != 0:
        msg = lib.loom_last_error().decode("utf-8", "replace")
        raise _ERRORS.get(status, InternalError)(msg)


def take_string(call, *args):
    """Calls a function whose last parameter is `char** out`; returns the string, freed."""
    out = _c.c_void_p()
    check(call(*args, _c.byref(out)))
    try:
        return _c.string_at(out.value).decode("utf-8")
    finally:
        lib.loom_string_free(out)
