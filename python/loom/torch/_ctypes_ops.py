"""The ctypes path of loom.torch's norms, where the compiled extension cannot be built: the same
ops as PyTorch ops defined from Python (torch.library, namespace `loom`) over loom's C ABI. Each
forward returns what its backward reads, as aten's native ops do, and has a fake (meta)
implementation for torch.compile and an autograd formula that runs loom's backward op. They run
on torch's current stream. (Their schemas are this path's own: loom.torch.ops is the interface.)

Shapes: layer_norm and rms_norm normalize the last dim of x of any rank; the others take
[N, C, *spatial], contiguous or channels-last (others are made contiguous first). Each op's
fusion takes x in its own rank (framework op parameter `rank`), so loom writes the outputs in
their final shape (no view of them is returned: an in-place op after the norm is fine)."""
from typing import Optional, Tuple

import torch
from torch import Tensor

from ..fusion import Fusion

_DTYPES = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32", torch.float64: "f64"}
_fusions = {}


def _dt(t):
    if t is None:
        return None
    d = _DTYPES.get(t.dtype)
    if d is None:
        raise TypeError(f"loom.torch: dtype {t.dtype} is not one of float16, bfloat16, float32, float64")
    return d


def _fusion(op, **params):
    key = (op, tuple(params.items()))
    f = _fusions.get(key)
    if f is None:
        f = _fusions[key] = Fusion.op(op, **params)
    return f


def _stats_dtype(x):
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def _dense(x):
    if x.dim() == 4 and x.is_contiguous(memory_format=torch.channels_last):
        return x
    return x if x.is_contiguous() else x.contiguous()


def _like(dy, x):
    """dy in x's memory format (as _dense leaves x), so that dx comes out in it, as the fake says."""
    if x.dim() == 4 and x.is_contiguous(memory_format=torch.channels_last):
        return dy.contiguous(memory_format=torch.channels_last)
    return dy.contiguous()


def _present(*ts):
    return [t for t in ts if t is not None]


def _empty(like):
    return like.new_empty((0,))


_LIB = torch.library.Library("loom", "DEF")  # noqa: TOR901 (the ops' home; lives as long as the module)


class _Op:
    """One of loom's ops: a torch.library op (opaque to torch.compile, with its fake and its autograd
    formula) whose Python kernel is registered for CUDA directly (torch.library.custom_op's
    wrapper cost about 200 us of host time a call on the H100 machine, torch 2.11), and which eager
    calls skip, going straight to the implementation (through an autograd.Function where a
    gradient is wanted)."""

    def __init__(self, name, fn):
        self.impl = fn
        self.qualname = f"loom::{name}"
        _LIB.define(name + torch.library.infer_schema(fn, mutates_args=()))
        _LIB.impl(name, fn, "CUDA")
        self.custom = getattr(torch.ops.loom, name).default
        self._eager = None

    def register_fake(self, fn):
        torch.library.register_fake(self.qualname, fn, lib=_LIB)
        return fn

    def register_autograd(self, backward, setup_context):
        def setup(ctx, inputs, output):
            # The statistics' gradients are never read: none are made as zeros for them (two
            # allocations and fills a call otherwise).
            ctx.set_materialize_grads(False)
            ctx.n_inputs = len(inputs)
            setup_context(ctx, inputs, output)

        def grads_of(ctx, dy, *rest):
            if dy is None:  # the output unused: no gradient flows back
                return (None,) * ctx.n_inputs
            return backward(ctx, dy, *rest)

        torch.library.register_autograd(self.qualname, grads_of, setup_context=setup, lib=_LIB)
        impl = self.impl

        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, *args):
                out = impl(*args)
                setup(ctx, args, out)
                ctx.mark_non_differentiable(*out[1:])
                return out

            @staticmethod
            @torch.autograd.function.once_differentiable  # loom's backward ops have no derivative
            def backward(ctx, *grads):
                return grads_of(ctx, *grads)

        self._eager = Fn.apply

    def forbid_autograd(self):
        """For an op with no derivative (the backward ops): differentiating through its outputs (a
        double backward, create_graph=True) raises instead of silently giving no gradient."""
        name = self.qualname

        def refuse(ctx, *grads):
            raise RuntimeError(f"{name} has no derivative: loom's norms are differentiable once (no "
                               "double backward or create_graph=True through them; PyTorch's own modules "
                               "are, for a gradient penalty)")

        torch.library.register_autograd(name, refuse, setup_context=lambda ctx, inputs, output: None, lib=_LIB)
        self._eager = self.custom  # with a gradient wanted: through the dispatcher, to that formula

    def __call__(self, *args):
        # Traced (Dynamo, or AOT autograd's fake and functional tensors): the opaque op.
        if torch.compiler.is_compiling():
            return self.custom(*args)
        wants_grad = False
        for a in args:
            if isinstance(a, Tensor):
                if type(a) is not Tensor and type(a) is not torch.nn.Parameter:
                    return self.custom(*args)
                wants_grad = wants_grad or a.requires_grad
        if wants_grad and torch.is_grad_enabled():
            return self._eager(*args)
        return self.impl(*args)


def _op(name):
    return lambda fn: _Op(name, fn)


# ---- layer norm ----

def _row_stats(x):
    return x.new_empty((*x.shape[:-1], 1), dtype=_stats_dtype(x))


def _ln_fake(x, weight, bias, eps):
    return torch.empty(x.shape, dtype=x.dtype, device=x.device), _row_stats(x), _row_stats(x)


@_op("layer_norm")
def layer_norm(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], eps: float) -> Tuple[Tensor, Tensor, Tensor]:
    f = _fusion("layer_norm", x=_dt(x), w=_dt(weight), b=_dt(bias), eps=float(eps), rank=x.dim())
    return f.run(x.contiguous(), *_present(weight, bias))


layer_norm.register_fake(_ln_fake)


def _ln_bwd_fake(dy, x, mean, rstd, weight, bias):
    return (torch.empty(x.shape, dtype=x.dtype, device=x.device),
            torch.empty_like(weight) if weight is not None else _empty(x),
            torch.empty_like(bias) if bias is not None else _empty(x))


@_op("layer_norm_backward")
def layer_norm_backward(dy: Tensor, x: Tensor, mean: Tensor, rstd: Tensor, weight: Optional[Tensor],
                        bias: Optional[Tensor]) -> Tuple[Tensor, Tensor, Tensor]:
    f = _fusion("layer_norm_backward", x=_dt(x), w=_dt(weight), b=_dt(bias), rank=x.dim())
    outs = f.run(dy.contiguous(), x.contiguous(), mean, rstd, *_present(weight, bias))
    return (outs[0], outs[1] if weight is not None else _empty(x), outs[-1] if bias is not None else _empty(x))


layer_norm_backward.register_fake(_ln_bwd_fake)


def _ln_setup(ctx, inputs, output):
    x, weight, bias, _ = inputs
    _, mean, rstd = output
    ctx.save_for_backward(x, weight, bias, mean, rstd)


def _ln_backward(ctx, dy, dmean, drstd):
    x, weight, bias, mean, rstd = ctx.saved_tensors
    dx, dw, db = layer_norm_backward(dy, x, mean, rstd, weight, bias)
    return dx, (dw if weight is not None else None), (db if bias is not None else None), None


layer_norm.register_autograd(_ln_backward, setup_context=_ln_setup)


# ---- RMS norm ----

def _rms_fake(x, weight, eps):
    return torch.empty(x.shape, dtype=x.dtype, device=x.device), _row_stats(x)


@_op("rms_norm")
def rms_norm(x: Tensor, weight: Optional[Tensor], eps: float) -> Tuple[Tensor, Tensor]:
    f = _fusion("rms_norm", x=_dt(x), w=_dt(weight), eps=float(eps), rank=x.dim())
    return f.run(x.contiguous(), *_present(weight))


rms_norm.register_fake(_rms_fake)


def _rms_bwd_fake(dy, x, rstd, weight):
    return (torch.empty(x.shape, dtype=x.dtype, device=x.device),
            torch.empty_like(weight) if weight is not None else _empty(x))


@_op("rms_norm_backward")
def rms_norm_backward(dy: Tensor, x: Tensor, rstd: Tensor, weight: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
    f = _fusion("rms_norm_backward", x=_dt(x), w=_dt(weight), rank=x.dim())
    outs = f.run(dy.contiguous(), x.contiguous(), rstd, *_present(weight))
    return outs[0], (outs[1] if weight is not None else _empty(x))


rms_norm_backward.register_fake(_rms_bwd_fake)


def _rms_setup(ctx, inputs, output):
    x, weight, _ = inputs
    ctx.save_for_backward(x, weight, output[1])


def _rms_backward(ctx, dy, drstd):
    x, weight, rstd = ctx.saved_tensors
    dx, dw = rms_norm_backward(dy, x, rstd, weight)
    return dx, (dw if weight is not None else None), None


rms_norm.register_autograd(_rms_backward, setup_context=_rms_setup)


# ---- norms over [N, C, *spatial]: group, instance, LayerNorm2d ----

def _spatial_fake(x, stats_shape):
    y = torch.empty_like(_dense(x)) if x.dim() == 4 else torch.empty(x.shape, dtype=x.dtype, device=x.device)
    return y, x.new_empty(stats_shape, dtype=_stats_dtype(x)), x.new_empty(stats_shape, dtype=_stats_dtype(x))


def _spatial_grads_fake(x, weight):
    dx = torch.empty_like(_dense(x)) if x.dim() == 4 else torch.empty(x.shape, dtype=x.dtype, device=x.device)
    c = x.shape[1]
    dw = torch.empty_like(weight) if weight is not None else _empty(x)
    db = x.new_empty((c,), dtype=weight.dtype if weight is not None else _stats_dtype(x))
    return dx, dw, db


def _spatial_grads(op, dy, x, weight, stats, **params):
    f = _fusion(op, x=_dt(x), w=_dt(weight), rank=x.dim(), **params)
    outs = f.run(_like(dy, x), _dense(x), *_present(weight), *stats)
    return outs[0], (outs[1] if weight is not None else _empty(x)), outs[-1]


def _gn_fake(x, weight, bias, groups, eps):
    return _spatial_fake(x, (x.shape[0], groups))


@_op("group_norm")
def group_norm(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], groups: int,
               eps: float) -> Tuple[Tensor, Tensor, Tensor]:
    f = _fusion("group_norm", x=_dt(x), groups=int(groups), w=_dt(weight), b=_dt(bias), eps=float(eps),
                rank=x.dim())
    return f.run(_dense(x), *_present(weight, bias))


group_norm.register_fake(_gn_fake)


@_op("group_norm_backward")
def group_norm_backward(dy: Tensor, x: Tensor, mean: Tensor, rstd: Tensor, weight: Optional[Tensor],
                        groups: int) -> Tuple[Tensor, Tensor, Tensor]:
    return _spatial_grads("group_norm_backward", dy, x, weight, [mean, rstd], groups=int(groups))


@group_norm_backward.register_fake
def _(dy, x, mean, rstd, weight, groups):
    return _spatial_grads_fake(x, weight)


def _gn_setup(ctx, inputs, output):
    x, weight, bias, groups, _ = inputs
    ctx.groups, ctx.has_bias = groups, bias is not None
    ctx.save_for_backward(x, weight, output[1], output[2])


def _gn_backward(ctx, dy, dmean, drstd):
    x, weight, mean, rstd = ctx.saved_tensors
    dx, dw, db = group_norm_backward(dy, x, mean, rstd, weight, ctx.groups)
    return dx, (dw if weight is not None else None), (db if ctx.has_bias else None), None, None


group_norm.register_autograd(_gn_backward, setup_context=_gn_setup)


def _per_channel(name, stats):
    """instance_norm and layer_norm_2d: same inputs, stats shaped by `stats(x)`."""

    def fake(x, weight, bias, eps):
        return _spatial_fake(x, stats(x))

    @_op(name)
    def fwd(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], eps: float) -> Tuple[Tensor, Tensor, Tensor]:
        f = _fusion(name, x=_dt(x), w=_dt(weight), b=_dt(bias), eps=float(eps), rank=x.dim())
        return f.run(_dense(x), *_present(weight, bias))

    fwd.register_fake(fake)

    @_op(f"{name}_backward")
    def bwd(dy: Tensor, x: Tensor, mean: Tensor, rstd: Tensor, weight: Optional[Tensor]) -> Tuple[Tensor, Tensor, Tensor]:
        return _spatial_grads(f"{name}_backward", dy, x, weight, [mean, rstd])

    @bwd.register_fake
    def _(dy, x, mean, rstd, weight):
        return _spatial_grads_fake(x, weight)

    def setup(ctx, inputs, output):
        x, weight, bias, _ = inputs
        ctx.has_bias = bias is not None
        ctx.save_for_backward(x, weight, output[1], output[2])

    def backward(ctx, dy, dmean, drstd):
        x, weight, mean, rstd = ctx.saved_tensors
        dx, dw, db = bwd(dy, x, mean, rstd, weight)
        return dx, (dw if weight is not None else None), (db if ctx.has_bias else None), None

    fwd.register_autograd(backward, setup_context=setup)
    return fwd, bwd


instance_norm, instance_norm_backward = _per_channel("instance_norm", lambda x: (x.shape[0], x.shape[1]))
layer_norm_2d, layer_norm_2d_backward = _per_channel("layer_norm_2d", lambda x: (x.shape[0], 1, *x.shape[2:]))


# ---- batch norm (training statistics) ----

def _bn_fake(x, running_mean, running_var, weight, bias, momentum, eps):
    run = (torch.empty_like(running_mean), torch.empty_like(running_var)) if running_mean is not None else \
        (_empty(x), _empty(x))
    return _spatial_fake(x, (x.shape[1],)) + run


@_op("batch_norm")
def batch_norm(x: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor], weight: Optional[Tensor],
               bias: Optional[Tensor], momentum: float, eps: float) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """y, save_mean, save_invstd, and the running statistics updated with `momentum` (empty where
    not given): functional, so that autograd can take it; the module writes them back."""
    f = _fusion("batch_norm", x=_dt(x), running=_dt(running_mean), w=_dt(weight), b=_dt(bias),
                momentum=float(momentum), eps=float(eps), inplace=0, rank=x.dim())
    outs = f.run(_dense(x), *_present(running_mean, running_var, weight, bias))
    return outs if running_mean is not None else (*outs, _empty(x), _empty(x))


batch_norm.register_fake(_bn_fake)


@_op("batch_norm_backward")
def batch_norm_backward(dy: Tensor, x: Tensor, save_mean: Tensor, save_invstd: Tensor,
                        weight: Optional[Tensor]) -> Tuple[Tensor, Tensor, Tensor]:
    return _spatial_grads("batch_norm_backward", dy, x, weight, [save_mean, save_invstd])


@batch_norm_backward.register_fake
def _(dy, x, save_mean, save_invstd, weight):
    return _spatial_grads_fake(x, weight)


def _bn_setup(ctx, inputs, output):
    x, _, _, weight, bias, _, _ = inputs
    ctx.has_bias = bias is not None
    ctx.save_for_backward(x, weight, output[1], output[2])


def _bn_backward(ctx, dy, dmean, dinvstd, drm, drv):
    x, weight, save_mean, save_invstd = ctx.saved_tensors
    dx, dw, db = batch_norm_backward(dy, x, save_mean, save_invstd, weight)
    return dx, None, None, (dw if weight is not None else None), (db if ctx.has_bias else None), None, None


batch_norm.register_autograd(_bn_backward, setup_context=_bn_setup)


for _o in list(globals().values()):
    if isinstance(_o, _Op) and _o._eager is None:
        _o.forbid_autograd()
