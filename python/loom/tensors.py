"""Tensors across the C ABI: numpy arrays for the reference evaluator on the CPU, and GPU tensors
(torch tensors, or anything with __cuda_array_interface__) for runs, all as loom_tensor views
with no copies on the GPU side."""
import ctypes
import sys

from ._lib import Tensor, check, lib
from .errors import ArgumentError, LoomError

# loom_dtype values (include/loom/loom_c.h), by loom's names.
DTYPES = {"bool": 0, "i32": 1, "i64": 2, "f16": 3, "bf16": 4, "f32": 5, "f64": 6}
NAMES = {v: k for k, v in DTYPES.items()}
# numpy / __cuda_array_interface__ type strings (little-endian) per loom dtype; bf16 has none.
TYPESTR = {"bool": "|b1", "i32": "<i4", "i64": "<i8", "f16": "<f2", "f32": "<f4", "f64": "<f8"}
_FROM_TYPESTR = {v: k for k, v in TYPESTR.items()}
_TORCH = {"torch.bool": "bool", "torch.int32": "i32", "torch.int64": "i64", "torch.float16": "f16",
          "torch.bfloat16": "bf16", "torch.float32": "f32", "torch.float64": "f64"}
TORCH_DTYPE = {v: k.split(".")[1] for k, v in _TORCH.items()}


class Views:
    """loom_tensor structs and the int64 arrays they point into, kept alive together."""

    def __init__(self, entries):
        self.keep = []
        self.array = (Tensor * max(1, len(entries)))()
        for i, (ptr, dtype, shape, strides) in enumerate(entries):
            sh = (ctypes.c_int64 * max(1, len(shape)))(*shape)
            st = (ctypes.c_int64 * max(1, len(strides)))(*strides)
            self.keep += [sh, st]
            self.array[i] = Tensor(ptr, DTYPES[dtype], len(shape), sh, st)
        self.count = len(entries)


def _bf16_bits(np, a):
    """float32 values rounded to bf16 (nearest, ties to even), as uint16 bit patterns."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    nan = np.isnan(a)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    r[nan] = 0x7FC0
    return r


def host_entry(np, a, want, where):
    """A numpy array as a loom_tensor entry for an input of dtype `want`: its own dtype, except that
    a bf16 input takes float arrays (rounded to bf16). Negative strides are copied away."""
    a = np.asarray(a)
    if want == "bf16" and a.dtype.kind == "f":
        a = _bf16_bits(np, a)
        dtype = "bf16"
    else:
        dtype = _FROM_TYPESTR.get(a.dtype.newbyteorder("<").str if a.dtype.byteorder == ">" else a.dtype.str)
        if dtype is None:
            raise ArgumentError(f"{where}: numpy dtype {a.dtype} has no loom dtype; loom takes "
                                "bool, int32, int64, float16, float32, float64 (and float arrays for bf16)")
    if a.dtype.byteorder == ">" or any(s < 0 for s in a.strides):
        a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
    strides = [s // a.itemsize for s in a.strides]
    return a, (a.ctypes.data if a.size else None, dtype, list(a.shape), strides)


def host_result(np, t):
    """A loom_tensor loom returned (contiguous, host) as a fresh numpy array; bf16 as float32."""
    name = NAMES[t.dtype]
    shape = [t.shape[i] for i in range(t.ndim)]
    n = 1
    for s in shape:
        n *= s
    if name == "bf16":
        bits = np.ctypeslib.as_array(ctypes.cast(t.data, ctypes.POINTER(ctypes.c_uint16)), (n,)) if n else \
            np.zeros(0, np.uint16)
        return (bits.astype(np.uint32) << 16).view(np.float32).reshape(shape)
    dt = np.dtype(TYPESTR[name])
    if n == 0:
        return np.zeros(shape, dt)
    buf = (ctypes.c_char * (n * dt.itemsize)).from_address(t.data)
    return np.frombuffer(buf, dtype=dt).reshape(shape).copy()


_TORCH_TENSOR = None


def torch_tensor_type():
    """torch.Tensor once torch is imported (loom never imports it for a caller), else None."""
    global _TORCH_TENSOR
    if _TORCH_TENSOR is None:
        mod = sys.modules.get("torch")
        _TORCH_TENSOR = getattr(mod, "Tensor", None) if mod is not None else None
    return _TORCH_TENSOR


def is_torch(t):
    cls = _TORCH_TENSOR or torch_tensor_type()
    return cls is not None and isinstance(t, cls)


_SELECTED = None  # the GPU this package made loom's (select_device), once it has


def select_device(index):
    """Makes GPU `index` (cuda:index) the one loom runs on in this process: one GPU a process, GPU
    0 unless chosen before loom's first GPU work. Naming the GPU in use does nothing; another one
    raises InputError saying which GPU loom runs on (one process per GPU, as torchrun starts
    data-parallel training). Torch tensors select their GPU themselves."""
    global _SELECTED
    if index != _SELECTED:
        check(lib.loom_select_device(int(index)))
        _SELECTED = index


def selected_device():
    """The GPU loom runs on, or will run on at its first GPU work."""
    return int(lib.loom_selected_device())


def pointer_device(ptr):
    """The GPU whose memory `ptr` (an int address) points into, as the CUDA driver says; -1 for
    memory every GPU reaches (managed, page-locked host memory); raises InputError for pageable
    host memory or a pointer the driver does not know."""
    out = ctypes.c_int32(-1)
    check(lib.loom_pointer_device(ptr, ctypes.byref(out)))
    return out.value


def device_entry(t, where):
    """A GPU tensor as a loom_tensor entry: a torch tensor (any dtype loom has, bf16 included) or
    an object with __cuda_array_interface__ (version 2 or later; its GPU asked of the driver, not
    for an empty one). The tensor's GPU is selected as loom's, or refused where loom runs on
    another (managed and page-locked host memory select none)."""
    if is_torch(t):
        if t.device.type != "cuda":
            raise ArgumentError(f"{where}: a torch tensor on {t.device}; loom runs on CUDA tensors")
        try:
            select_device(t.get_device())  # (nothing to do for loom's GPU)
        except LoomError as e:
            raise type(e)(f"{where}: a torch tensor on {t.device}: {e}") from None
        dtype = _TORCH.get(str(t.dtype))
        if dtype is None:
            raise ArgumentError(f"{where}: torch dtype {t.dtype} has no loom dtype")
        return (t.data_ptr() or None, dtype, list(t.shape), list(t.stride()))
    cai = getattr(t, "__cuda_array_interface__", None)
    if cai is None:
        raise ArgumentError(f"{where}: {type(t).__name__} is no GPU tensor: give a CUDA torch tensor or an "
                            "object with __cuda_array_interface__")
    dtype = _FROM_TYPESTR.get(cai["typestr"])
    if dtype is None:
        raise ArgumentError(f"{where}: type {cai['typestr']} has no loom dtype")
    shape = list(cai["shape"])
    item = int(cai["typestr"][2:])
    if cai.get("strides") is None:
        strides, acc = [], 1
        for s in reversed(shape):
            strides.insert(0, acc)
            acc *= s
    else:
        if any(s % item for s in cai["strides"]):
            raise ArgumentError(f"{where}: strides {cai['strides']} are not whole elements")
        strides = [s // item for s in cai["strides"]]
    ptr = cai["data"][0] or None
    if ptr is not None and all(shape):  # (an empty view may point past its allocation: not asked)
        try:
            where_it_is = pointer_device(ptr)
            if where_it_is >= 0:
                select_device(where_it_is)
        except LoomError as e:
            raise type(e)(f"{where}: {type(t).__name__} at {ptr:#x}: {e}") from None
    return (ptr, dtype, shape, strides)
