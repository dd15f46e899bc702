"""loom from Python: fusions from loom's text format or its built-ins, their segments and compile
stages, the float64 reference on numpy arrays, and runs on GPU tensors, all through libloom's
C ABI (include/loom/loom_c.h) with ctypes. Pure Python: one copy works with any Python 3.

    import loom
    f = loom.Fusion.builtin("layer_norm", "f16")
    f.segments({"N": 4096, "D": 1024})["kernels"]   # 1
    y, = f.eval(x, w, b)                             # numpy arrays, the float64 reference
    y, = f.run(x_gpu, w_gpu, b_gpu)                  # torch CUDA tensors, on the current stream
"""
import json as _json

from ._lib import lib as _cdll, take_string as _take_string
from .errors import ArgumentError, InputError, InternalError, LoomError, NoGpuError
from .fusion import Fusion
from .tensors import select_device, selected_device

__version__ = _cdll.loom_version().decode()

__all__ = ["Fusion", "LoomError", "InputError", "ArgumentError", "NoGpuError", "InternalError", "builtins", "ops",
           "gpu_available", "select_device", "selected_device", "__version__"]


def builtins():
    """The built-in fusions: [{name, summary, dtype, sizes}]."""
    return _json.loads(_take_string(_cdll.loom_builtins_json))["builtins"]


def ops():
    """The framework ops (Fusion.op): [{name, summary}]."""
    return _json.loads(_take_string(_cdll.loom_builtins_json))["ops"]


def gpu_available():
    """Whether a GPU and the CUDA driver are there."""
    return bool(_cdll.loom_gpu_available())
