"""loom's norms for PyTorch modules, each returning y: layer_norm, rms_norm, group_norm,
instance_norm, layer_norm_2d and batch_norm (training statistics, the running ones updated in
place by the kernel). They run on torch's current stream, through autograd where a gradient is
wanted (loom's backward kernels) and as opaque ops under torch.compile.

Two implementations of the same calls:
- the compiled extension (csrc/, built at first import: _extension.py), whose ops are PyTorch ops
  `torch.ops.loom.*` defined in C++ (the forward ops return y and the statistics their backward
  reads, as aten's native ops do; their fakes are below), reached in eager mode without the
  dispatcher, at PyTorch's own host cost a call;
- the ctypes path (_ctypes_ops.py), where the extension cannot be built (one warning says why),
  with the activations applied by PyTorch after the norm.

Shapes: layer_norm and rms_norm normalize the last dim of x of any rank; the others take
[N, C, *spatial], contiguous or channels-last (others are made contiguous first). `act` ("none",
"relu", "silu", "gelu", "gelu_tanh", "sigmoid", "tanh") ends the norm inside its kernel, and its
gradient is taken inside the backward's."""
import warnings

import torch
import torch.nn.functional as F

from . import _extension

EXTENSION, WHY = _extension.load()
if EXTENSION is None and WHY != "LOOM_TORCH_EXTENSION=0":
    warnings.warn(f"loom.torch runs its ctypes path, at up to 2.7x PyTorch's host time a call: {WHY}", stacklevel=2)

# Whether batch norm's cumulative average (momentum=None) runs in loom's kernel.
CUMULATIVE = EXTENSION is not None


def _stats_dtype(x):
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def _dense(x):
    if x.dim() == 4 and x.is_contiguous(memory_format=torch.channels_last):
        return x
    if x.dim() == 5 and x.is_contiguous(memory_format=torch.channels_last_3d):
        return x
    return x if x.is_contiguous() else x.contiguous()


def _spatial_like(x):
    return torch.empty_like(_dense(x), memory_format=torch.preserve_format)


if EXTENSION is not None:
    _L = torch.ops.loom
    _C = EXTENSION
    _compiling = torch.compiler.is_compiling

    def layer_norm(x, weight, bias, eps, act="none"):
        return _L.layer_norm(x, weight, bias, eps, act)[0] if _compiling() else _C.layer_norm(x, weight, bias, eps, act)

    def rms_norm(x, weight, eps):
        return _L.rms_norm(x, weight, eps)[0] if _compiling() else _C.rms_norm(x, weight, eps)

    def group_norm(x, weight, bias, groups, eps, act="none"):
        if _compiling():
            return _L.group_norm(x, weight, bias, groups, eps, act)[0]
        return _C.group_norm(x, weight, bias, groups, eps, act)

    def instance_norm(x, weight, bias, eps):
        return _L.instance_norm(x, weight, bias, eps)[0] if _compiling() else _C.instance_norm(x, weight, bias, eps)

    def layer_norm_2d(x, weight, bias, eps, act="none"):
        if _compiling():
            return _L.layer_norm_2d(x, weight, bias, eps, act)[0]
        return _C.layer_norm_2d(x, weight, bias, eps, act)

    def batch_norm(x, running_mean, running_var, weight, bias, num_batches_tracked, momentum, eps, act="none"):
        """num_batches_tracked given: the cumulative average, momentum 1 / its value (already counted)."""
        if _compiling():
            return _L.batch_norm(x, running_mean, running_var, weight, bias, num_batches_tracked, momentum, eps, act)[0]
        return _C.batch_norm(x, running_mean, running_var, weight, bias, num_batches_tracked, momentum, eps, act)

    # ---- fakes: what each op returns, for torch.compile (as the C++ kernels allocate them) ----

    def _row_stats(x):
        return x.new_empty((*x.shape[:-1], 1), dtype=_stats_dtype(x))

    def _none(x):
        return x.new_empty((0,))

    @torch.library.register_fake("loom::layer_norm")
    def _(x, weight, bias, eps, act="none"):
        return torch.empty(x.shape, dtype=x.dtype, device=x.device), _row_stats(x), _row_stats(x)

    @torch.library.register_fake("loom::layer_norm_backward")
    def _(dy, x, mean, rstd, weight, bias, act="none"):
        return (torch.empty(x.shape, dtype=x.dtype, device=x.device),
                torch.empty_like(weight, memory_format=torch.contiguous_format) if weight is not None else _none(x),
                torch.empty_like(bias, memory_format=torch.contiguous_format) if bias is not None else _none(x))

    @torch.library.register_fake("loom::rms_norm")
    def _(x, weight, eps):
        return torch.empty(x.shape, dtype=x.dtype, device=x.device), _row_stats(x)

    @torch.library.register_fake("loom::rms_norm_backward")
    def _(dy, x, rstd, weight):
        return (torch.empty(x.shape, dtype=x.dtype, device=x.device),
                torch.empty_like(weight, memory_format=torch.contiguous_format) if weight is not None else _none(x))

    def _spatial(x, stats_shape):
        return (_spatial_like(x), x.new_empty(stats_shape, dtype=_stats_dtype(x)),
                x.new_empty(stats_shape, dtype=_stats_dtype(x)))

    def _spatial_grads(x, weight):
        dw = torch.empty_like(weight, memory_format=torch.contiguous_format) if weight is not None else _none(x)
        db = x.new_empty((x.shape[1],), dtype=weight.dtype if weight is not None else _stats_dtype(x))
        return _spatial_like(x), dw, db

    @torch.library.register_fake("loom::group_norm")
    def _(x, weight, bias, groups, eps, act="none"):
        return _spatial(x, (x.shape[0], groups))

    @torch.library.register_fake("loom::group_norm_backward")
    def _(dy, x, mean, rstd, weight, bias, groups, act="none"):
        return _spatial_grads(x, weight)

    @torch.library.register_fake("loom::instance_norm")
    def _(x, weight, bias, eps):
        return _spatial(x, (x.shape[0], x.shape[1]))

    @torch.library.register_fake("loom::instance_norm_backward")
    def _(dy, x, mean, rstd, weight):
        return _spatial_grads(x, weight)

    @torch.library.register_fake("loom::layer_norm_2d")
    def _(x, weight, bias, eps, act="none"):
        return _spatial(x, (x.shape[0], 1, *x.shape[2:]))

    @torch.library.register_fake("loom::layer_norm_2d_backward")
    def _(dy, x, mean, rstd, weight, bias, act="none"):
        return _spatial_grads(x, weight)

    @torch.library.register_fake("loom::batch_norm")
    def _(x, running_mean, running_var, weight, bias, num_batches_tracked, momentum, eps, act="none"):
        return _spatial(x, (x.shape[1],))

    @torch.library.register_fake("loom::batch_norm_backward")
    def _(dy, x, save_mean, save_invstd, weight, bias, act="none"):
        return _spatial_grads(x, weight)

    @torch.library.register_fake("loom::fusion")
    def _(id, inputs):
        dev = inputs[0].device if inputs else torch.device("cuda")
        return [torch.empty_strided(shape, strides, dtype=getattr(torch, _TORCH_DTYPES[dt]), device=dev)
                for shape, strides, dt in _C.fusion_specs(id, list(inputs))]

    _TORCH_DTYPES = {"bool": "bool", "i32": "int32", "i64": "int64", "f16": "float16", "bf16": "bfloat16",
                     "f32": "float32", "f64": "float64"}
else:
    from . import _ctypes_ops as _fb

    _ACTS = {"none": None, "relu": F.relu, "silu": F.silu, "gelu": F.gelu,
             "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"), "sigmoid": torch.sigmoid, "tanh": torch.tanh}

    def _act(y, act):
        if act not in _ACTS:
            raise ValueError(f"loom.torch: act={act!r} is not one of {', '.join(_ACTS)}")
        fn = _ACTS[act]
        return y if fn is None else fn(y)

    def layer_norm(x, weight, bias, eps, act="none"):
        return _act(_fb.layer_norm(x, weight, bias, eps)[0], act)

    def rms_norm(x, weight, eps):
        return _fb.rms_norm(x, weight, eps)[0]

    def group_norm(x, weight, bias, groups, eps, act="none"):
        return _act(_fb.group_norm(x, weight, bias, groups, eps)[0], act)

    def instance_norm(x, weight, bias, eps):
        return _fb.instance_norm(x, weight, bias, eps)[0]

    def layer_norm_2d(x, weight, bias, eps, act="none"):
        return _act(_fb.layer_norm_2d(x, weight, bias, eps)[0], act)

    def batch_norm(x, running_mean, running_var, weight, bias, num_batches_tracked, momentum, eps, act="none"):
        if num_batches_tracked is not None:
            raise ValueError("loom.torch.ops.batch_norm: the ctypes path has no cumulative average (momentum=None)")
        y, _, _, new_rm, new_rv = _fb.batch_norm(x, running_mean, running_var, weight, bias, momentum, eps)
        if running_mean is not None:
            with torch.no_grad():
                running_mean.copy_(new_rm)
                running_var.copy_(new_rv)
        return _act(y, act)
