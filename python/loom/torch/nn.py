"""Drop-in modules: PyTorch's (and timm's LayerNorm2d) with the same constructor, parameters,
buffers and state dict, whose forward runs loom's custom ops (loom/torch/ops.py) on CUDA
tensors. f16/bf16 inputs are read as they are (channels-last too, no .contiguous() copy) with
f32 math inside, and the output keeps the input's dtype. Where loom has no kernel for a
configuration (a CPU tensor, BatchNorm's cumulative average with momentum=None, InstanceNorm's
running statistics), they run PyTorch's own forward.

swap(model) turns the matching modules of a model into these, in place, keeping their
parameters (an optimizer made before still holds them): PyTorch's, timm's LayerNorm and
LayerNorm2d, and Hugging Face's RMSNorm classes (LlamaRMSNorm and its kin)."""
import math

import torch

from . import ops


def _ok(x):
    return x.is_cuda and x.dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64)


class LayerNorm(torch.nn.LayerNorm):
    def forward(self, x):
        if not _ok(x):
            return super().forward(x)
        if len(self.normalized_shape) == 1:
            return ops.layer_norm(x, self.weight, self.bias, self.eps)[0]
        d = math.prod(self.normalized_shape)  # several trailing dims: normalized as one
        lead = x.shape[: x.dim() - len(self.normalized_shape)]
        w = self.weight.reshape(d) if self.weight is not None else None
        b = self.bias.reshape(d) if self.bias is not None else None
        y, _, _ = ops.layer_norm(x.reshape(*lead, d), w, b, self.eps)
        return y.view(x.shape)


class RMSNorm(torch.nn.RMSNorm):
    def forward(self, x):
        if not _ok(x):
            return super().forward(x)
        eps = self.eps if self.eps is not None else torch.finfo(x.dtype).eps
        if len(self.normalized_shape) == 1:
            return ops.rms_norm(x, self.weight, eps)[0]
        d = math.prod(self.normalized_shape)
        w = self.weight.reshape(d) if self.weight is not None else None
        y, _ = ops.rms_norm(x.reshape(*x.shape[: x.dim() - len(self.normalized_shape)], d), w, eps)
        return y.view(x.shape)


class GroupNorm(torch.nn.GroupNorm):
    def forward(self, x):
        if not _ok(x) or x.dim() < 3:
            return super().forward(x)
        return ops.group_norm(x, self.weight, self.bias, self.num_groups, self.eps)[0]


class LayerNorm2d(torch.nn.LayerNorm):
    """timm's LayerNorm2d: layer norm over the channels of [N, C, H, W] (weight and bias [C]).

    Its output is channels-last, as timm's is for any input (a permute of F.layer_norm's
    [N, H, W, C] result): the layers after it run in the layout they run in under timm. loom
    normalizes an NCHW input as it is and writes that layout; `channels_last_out = False` (on the
    class or a module) keeps it so, one copy less where the layers after it want NCHW."""

    channels_last_out = True

    def __init__(self, num_channels, eps=1e-6, affine=True):
        super().__init__(num_channels, eps=eps, elementwise_affine=affine)

    def forward(self, x):
        if not _ok(x):
            x = x.permute(0, 2, 3, 1)
            x = torch.nn.functional.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
            return x.permute(0, 3, 1, 2)
        y = ops.layer_norm_2d(x, self.weight, self.bias, self.eps)[0]
        if self.channels_last_out and y.dim() == 4 and not y.is_contiguous(memory_format=torch.channels_last):
            y = y.contiguous(memory_format=torch.channels_last)
        return y


class _BatchNorm:
    def forward(self, x):
        self._check_input_dim(x)
        training = self.training or not self.track_running_stats
        if not _ok(x) or (self.training and self.track_running_stats and self.momentum is None):
            return super().forward(x)
        if not training:
            return super().forward(x)  # inference: the running statistics, PyTorch's kernel
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
        rm = self.running_mean if self.training and self.track_running_stats else None
        rv = self.running_var if self.training and self.track_running_stats else None
        y, _, _, new_rm, new_rv = ops.batch_norm(x, rm, rv, self.weight, self.bias, self.momentum or 0.0, self.eps)
        if rm is not None:
            with torch.no_grad():
                rm.copy_(new_rm)
                rv.copy_(new_rv)
        return y


class BatchNorm1d(_BatchNorm, torch.nn.BatchNorm1d):
    def forward(self, x):
        if x.dim() == 2:  # [N, C]: no spatial dims
            return torch.nn.BatchNorm1d.forward(self, x)
        return _BatchNorm.forward(self, x)


class BatchNorm2d(_BatchNorm, torch.nn.BatchNorm2d):
    pass


class BatchNorm3d(_BatchNorm, torch.nn.BatchNorm3d):
    pass


class _InstanceNorm:
    def forward(self, x):
        if not _ok(x) or self.track_running_stats or x.dim() != self._get_no_batch_dim() + 1:
            return super().forward(x)
        w = self.weight if self.affine else None
        b = self.bias if self.affine else None
        return ops.instance_norm(x, w, b, self.eps)[0]


class InstanceNorm1d(_InstanceNorm, torch.nn.InstanceNorm1d):
    pass


class InstanceNorm2d(_InstanceNorm, torch.nn.InstanceNorm2d):
    pass


class InstanceNorm3d(_InstanceNorm, torch.nn.InstanceNorm3d):
    pass


# PyTorch's classes, by exact type, and loom's drop-in for each.
_SWAPS = {
    torch.nn.LayerNorm: LayerNorm,
    torch.nn.RMSNorm: RMSNorm,
    torch.nn.GroupNorm: GroupNorm,
    torch.nn.BatchNorm1d: BatchNorm1d,
    torch.nn.BatchNorm2d: BatchNorm2d,
    torch.nn.BatchNorm3d: BatchNorm3d,
    torch.nn.InstanceNorm1d: InstanceNorm1d,
    torch.nn.InstanceNorm2d: InstanceNorm2d,
    torch.nn.InstanceNorm3d: InstanceNorm3d,
}


def _hf_rms_forward(self, x):
    """Hugging Face's RMSNorm classes (LlamaRMSNorm and its kin: `weight`, `variance_epsilon`):
    the same result dtype as theirs (the input's, promoted with the weight's)."""
    if not _ok(x):
        return type(self).__mro__[1].forward(self, x)
    w = self.weight
    y, _ = ops.rms_norm(x, w, self.variance_epsilon)
    out = torch.promote_types(x.dtype, w.dtype)
    return y if out == y.dtype else y.to(out)


_HF = {}


def _hf_rms(cls):
    if cls not in _HF:
        _HF[cls] = type("Loom" + cls.__name__, (cls,), {"forward": _hf_rms_forward})
    return _HF[cls]


def _target(m):
    t = _SWAPS.get(type(m))
    if t is not None:
        return t
    cls = type(m)
    if (cls.__name__.endswith("RMSNorm") and cls.__module__.startswith("transformers.")
            and isinstance(getattr(m, "weight", None), torch.nn.Parameter) and m.weight.dim() == 1
            and isinstance(getattr(m, "variance_epsilon", None), float)):
        return _hf_rms(cls)
    # timm's norms (timm.layers.norm): LayerNorm (over the last dim) and LayerNorm2d (over C of
    # NCHW), both nn.LayerNorm subclasses with the same state.
    mod = type(m).__module__
    if mod.startswith("timm.") and isinstance(m, torch.nn.LayerNorm) and len(m.normalized_shape) == 1:
        if type(m).__name__ == "LayerNorm2d":
            return LayerNorm2d
        if type(m).__name__ == "LayerNorm":
            return LayerNorm
    return None


def swap(model, only=None):
    """Turns every module of `model` that loom has a drop-in for into it, in place (the module
    object, its parameters, buffers and hooks are kept). `only`: the names of loom's drop-ins to
    use (e.g. {"LayerNorm2d"}), the others left as they are; by default all. Returns the number
    swapped."""
    if only is not None:
        only = {only} if isinstance(only, str) else set(only)
        known = {t.__name__ for t in _SWAPS.values()} | {"LayerNorm2d", "HFRMSNorm"}
        unknown = sorted(only - known)
        if unknown:
            raise ValueError(f"loom.torch.swap: only={unknown} names no drop-in of loom's; "
                             f"the names are {', '.join(sorted(known))}")
    n = 0
    for m in model.modules():
        t = _target(m)
        if t is not None and (only is None or _kind(t) in only):
            m.__class__ = t
            n += 1
    return n


def _kind(t):
    """The name `swap(only=...)` knows a drop-in by (Hugging Face's RMSNorm kin as HFRMSNorm)."""
    return "HFRMSNorm" if t in _HF.values() else t.__name__
