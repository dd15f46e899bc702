"""Drop-in modules: PyTorch's norms (and timm's LayerNorm2d) with the same constructor,
parameters, buffers and state dict, whose forward runs loom's ops (loom/torch/ops.py) on CUDA
tensors. f16/bf16 inputs are read as they are (channels-last too, no .contiguous() copy) with
f32 math inside, and the output keeps the input's dtype. Where loom has no kernel for a
configuration (a CPU tensor, inference with running statistics, InstanceNorm's running
statistics), they run PyTorch's own forward.

swap(model) turns a model's norms into loom's in place (swap.py says which it takes).

Under torch.compile a module runs PyTorch's forward, for Inductor to fuse with its neighbours,
unless its `loom_in_compile` attribute is True (then loom's op, opaque to Inductor)."""
import math

import torch

from . import ops


_FLOATS = frozenset((torch.float16, torch.bfloat16, torch.float32, torch.float64))


def _ok(x):
    return x.is_cuda and x.dtype in _FLOATS


# ---- each family's forward on loom: y, or NotImplemented where PyTorch's forward should run ----

def layer_norm_forward(m, x, act="none"):
    ns = m.normalized_shape
    if not (x.is_cuda and x.dtype in _FLOATS):
        return NotImplemented
    if len(ns) == 1:  # (the common case, checked with the fewest steps: this is host time a call)
        if x.dim() == 0 or x.shape[-1] != ns[0]:
            return NotImplemented
        return ops.layer_norm(x, m.weight, m.bias, m.eps, act)
    if x.dim() < len(ns) or tuple(x.shape[x.dim() - len(ns):]) != tuple(ns):
        return NotImplemented
    d = math.prod(ns)  # several trailing dims: normalized as one
    w = m.weight.reshape(d) if m.weight is not None else None
    b = m.bias.reshape(d) if m.bias is not None else None
    return ops.layer_norm(x.reshape(*x.shape[: x.dim() - len(ns)], d), w, b, m.eps, act).view(x.shape)


def rms_norm_forward(m, x, act="none"):
    ns = m.normalized_shape
    if not (x.is_cuda and x.dtype in _FLOATS) or act != "none":
        return NotImplemented
    eps = m.eps if m.eps is not None else torch.finfo(x.dtype).eps
    w = getattr(m, "weight", None)
    if len(ns) == 1:
        if x.dim() == 0 or x.shape[-1] != ns[0]:
            return NotImplemented
        return ops.rms_norm(x, w, eps)
    if x.dim() < len(ns) or tuple(x.shape[x.dim() - len(ns):]) != tuple(ns):
        return NotImplemented
    d = math.prod(ns)
    y = ops.rms_norm(x.reshape(*x.shape[: x.dim() - len(ns)], d), w.reshape(d) if w is not None else None, eps)
    return y.view(x.shape)


def hf_rms_norm_forward(m, x, act="none"):
    """Hugging Face's RMSNorm classes (LlamaRMSNorm and its kin: `weight`, `variance_epsilon`):
    the same result dtype as theirs (the input's, promoted with the weight's)."""
    if not _ok(x) or x.shape[-1] != m.weight.shape[0]:
        return NotImplemented
    y = ops.rms_norm(x, m.weight, m.variance_epsilon)
    out = torch.promote_types(x.dtype, m.weight.dtype)
    return y if out == y.dtype else y.to(out)


def group_norm_forward(m, x, act="none"):
    if not _ok(x) or x.dim() < 2 or x.shape[1] != m.num_channels:
        return NotImplemented
    return ops.group_norm(x, m.weight, m.bias, m.num_groups, m.eps, act)


def layer_norm_2d_forward(m, x, act="none"):
    """timm's LayerNorm2d: layer norm over the channels of [N, C, H, W]. Its output is
    channels-last, as timm's is for any input (a permute of F.layer_norm's [N, H, W, C] result),
    unless `channels_last_out` is False on the class or the module."""
    if not _ok(x) or x.dim() < 3 or x.shape[1] != m.normalized_shape[0]:
        return NotImplemented
    y = ops.layer_norm_2d(x, m.weight, m.bias, m.eps, act)
    if getattr(m, "channels_last_out", True) and y.dim() == 4 and not y.is_contiguous(memory_format=torch.channels_last):
        y = y.contiguous(memory_format=torch.channels_last)
    return y


def batch_norm_forward(m, x, act="none"):
    """PyTorch's _BatchNorm.forward on loom: training statistics in loom's kernel, the running
    ones updated in place by it (momentum=None: the cumulative average); inference with running
    statistics is PyTorch's kernel."""
    m._check_input_dim(x)
    track = m.training and m.track_running_stats
    bn_training = m.training or (m.running_mean is None and m.running_var is None)
    if not _ok(x) or not bn_training or x.numel() == 0 or (track and m.momentum is None and not ops.CUMULATIVE):
        return NotImplemented  # (an empty batch: PyTorch's, which leaves the running statistics as they are)
    if x.numel() // max(1, x.shape[1]) == 1 and x.shape[1] > 0:
        # As PyTorch refuses it, before anything (num_batches_tracked too) is written.
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {x.size()}")
    nbt = None
    if track and m.num_batches_tracked is not None:
        m.num_batches_tracked.add_(1)
        nbt = m.num_batches_tracked if m.momentum is None else None
    rm = m.running_mean if track or not m.training else None
    rv = m.running_var if track or not m.training else None
    return ops.batch_norm(x, rm, rv, m.weight, m.bias, nbt, m.momentum or 0.0, m.eps, act)


def instance_norm_forward(m, x, act="none"):
    if not _ok(x) or m.track_running_stats or x.dim() != m._get_no_batch_dim() + 1 or act != "none":
        return NotImplemented
    if math.prod(x.shape[2:]) == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {x.size()}")
    w = m.weight if m.affine else None
    b = m.bias if m.affine else None
    return ops.instance_norm(x, w, b, m.eps)


_compiling = torch.compiler.is_compiling


def torch_in_compile(m):
    """Whether module m runs PyTorch's own forward now: while torch.compile traces it, unless its
    `loom_in_compile` is set (swap(in_compile="loom")). Inductor then fuses the norm's math with
    its neighbours (a residual add, an activation, casts), which loom's op, opaque to Inductor,
    keeps apart."""
    return _compiling() and not getattr(m, "loom_in_compile", False)


def _forward_of(family, base):
    def forward(self, x):
        y = NotImplemented if torch_in_compile(self) else family(self, x)
        return base.forward(self, x) if y is NotImplemented else y

    forward.__doc__ = family.__doc__
    return forward


# ---- the named drop-ins for PyTorch's classes ----

class LayerNorm(torch.nn.LayerNorm):
    forward = _forward_of(layer_norm_forward, torch.nn.LayerNorm)


class RMSNorm(torch.nn.RMSNorm):
    forward = _forward_of(rms_norm_forward, torch.nn.RMSNorm)


class GroupNorm(torch.nn.GroupNorm):
    forward = _forward_of(group_norm_forward, torch.nn.GroupNorm)


def _timm_layer_norm_2d(self, x):
    x = x.permute(0, 2, 3, 1)
    x = torch.nn.functional.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
    return x.permute(0, 3, 1, 2)


class LayerNorm2d(torch.nn.LayerNorm):
    """timm's LayerNorm2d: layer norm over the channels of [N, C, H, W] (weight and bias [C])."""

    channels_last_out = True

    def __init__(self, num_channels, eps=1e-6, affine=True):
        super().__init__(num_channels, eps=eps, elementwise_affine=affine)

    def forward(self, x):
        y = NotImplemented if torch_in_compile(self) else layer_norm_2d_forward(self, x)
        return _timm_layer_norm_2d(self, x) if y is NotImplemented else y


class BatchNorm1d(torch.nn.BatchNorm1d):
    forward = _forward_of(batch_norm_forward, torch.nn.BatchNorm1d)


class BatchNorm2d(torch.nn.BatchNorm2d):
    forward = _forward_of(batch_norm_forward, torch.nn.BatchNorm2d)


class BatchNorm3d(torch.nn.BatchNorm3d):
    forward = _forward_of(batch_norm_forward, torch.nn.BatchNorm3d)


class InstanceNorm1d(torch.nn.InstanceNorm1d):
    forward = _forward_of(instance_norm_forward, torch.nn.InstanceNorm1d)


class InstanceNorm2d(torch.nn.InstanceNorm2d):
    forward = _forward_of(instance_norm_forward, torch.nn.InstanceNorm2d)


class InstanceNorm3d(torch.nn.InstanceNorm3d):
    forward = _forward_of(instance_norm_forward, torch.nn.InstanceNorm3d)


from .swap import swap  # noqa: E402 (swap.py reads the classes above)
