"""loom inside PyTorch: loom's norms as drop-in modules (loom.torch.nn.LayerNorm, RMSNorm,
GroupNorm, BatchNorm2d, InstanceNorm2d, LayerNorm2d, ...) with autograd through loom's backward
kernels, cross_entropy() and CrossEntropyLoss (the loss and its dlogits as loom's kernels),
swap(model), which turns a model's norms into loom's in place, compile_fusion(), any
loom fusion as a callable on torch tensors, and the torch.compile backend "loom" (registered by
this import), which cuts a model's own graphs into loom fusions; explain() shows how. Through a
compiled extension (C++ over PyTorch's C++ API, built at first import into loom's cache) where it
can be built, else through ctypes.

    import loom.torch
    loom.torch.swap(model, report=True)   # e.g. timm convnext_base: its LayerNorm2d and LayerNorm
    model = torch.compile(model, backend="loom")
"""
from . import backend, nn, ops
from .explain import Explanation, explain
from .fusion import CompiledFusion, compile_fusion
from .losses import CrossEntropyLoss, cross_entropy
from .swap import SwapReport, swap

backend.register()

__all__ = ["nn", "ops", "swap", "SwapReport", "compile_fusion", "CompiledFusion", "explain", "Explanation",
           "cross_entropy", "CrossEntropyLoss"]
