"""loom inside PyTorch: custom ops for the norms (loom.torch.ops, with autograd through loom's
backward kernels, and fake implementations so torch.compile takes them as opaque ops), drop-in
modules (loom.torch.nn.LayerNorm, RMSNorm, GroupNorm, BatchNorm2d, InstanceNorm2d, LayerNorm2d,
...), and swap(model), which turns a model's norms into loom's in place.

    import loom.torch
    loom.torch.swap(model)      # e.g. timm convnext_base: its LayerNorm2d and LayerNorm
"""
from . import nn, ops
from .nn import swap

__all__ = ["nn", "ops", "swap"]
