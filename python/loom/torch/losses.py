"""cross_entropy(): torch.nn.functional.cross_entropy over class indices as loom's kernels (the
loss and each row's logsumexp in one pass over the logits, dlogits in one more), differentiable
through loom's backward; CrossEntropyLoss, its module. Other forms (class weights, probabilities
as targets, logits of another rank, CPU tensors) run PyTorch's own."""
import torch
import torch.nn.functional as F

from .fusion import compile_fusion

_DTYPES = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32", torch.float64: "f64"}
_INDICES = {torch.int32: "i32", torch.int64: "i64"}
_REDUCTIONS = ("none", "mean", "sum")
_COMPILED = {}


def _fusions(dt, it, ignore_index, label_smoothing, reduction):
    """The forward and backward of one configuration, compiled once."""
    key = (dt, it, ignore_index, label_smoothing, reduction)
    if key not in _COMPILED:
        params = f"ignore_index={ignore_index}, label_smoothing={float(label_smoothing)!r}, reduction={reduction}"
        stats = "f64" if dt == "f64" else "f32"
        dloss = f"{dt}[N]" if reduction == "none" else f"{dt}[]"
        fwd = (f"fusion cross_entropy {{\n  in logits: {dt}[N, C]\n  in target: {it}[N]\n"
               f"  loss, lse = cross_entropy(logits, target, {params})\n  out loss = loss\n  out lse = lse\n}}\n")
        bwd = (f"fusion cross_entropy_backward {{\n  in dloss: {dloss}\n  in logits: {dt}[N, C]\n  in target: {it}[N]\n"
               f"  in lse: {stats}[N]\n  dlogits = cross_entropy_backward(dloss, logits, target, lse, {params})\n"
               f"  out dlogits = dlogits\n}}\n")
        _COMPILED[key] = compile_fusion(fwd, backward=bwd)
    return _COMPILED[key]


def _loom_takes(input, target, weight, reduction, ignore_index):
    return (weight is None and isinstance(input, torch.Tensor) and input.is_cuda and input.dim() == 2
            and input.dtype in _DTYPES and isinstance(target, torch.Tensor) and target.is_cuda
            and target.dim() == 1 and target.dtype in _INDICES and reduction in _REDUCTIONS
            and -2 ** 31 <= ignore_index < 2 ** 31)


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """torch.nn.functional.cross_entropy's arguments and result. A target outside [0, C) (other
    than ignore_index) gives a row of inf where PyTorch would raise."""
    if not _loom_takes(input, target, weight, reduction, ignore_index):
        return F.cross_entropy(input, target, weight=weight, ignore_index=ignore_index, reduction=reduction,
                               label_smoothing=label_smoothing)
    f = _fusions(_DTYPES[input.dtype], _INDICES[target.dtype], int(ignore_index), float(label_smoothing), reduction)
    return f(input, target)[0]


class CrossEntropyLoss(torch.nn.CrossEntropyLoss):
    """torch.nn.CrossEntropyLoss (the same constructor and state) whose forward runs loom's
    kernels where cross_entropy() takes its arguments."""

    def forward(self, input, target):
        return cross_entropy(input, target, self.weight, self.ignore_index, self.reduction, self.label_smoothing)
