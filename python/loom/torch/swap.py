"""swap(model): a model's norms made loom's, in place (the module objects, their parameters,
buffers and hooks kept: an optimizer made before still holds them).

What it takes:
- PyTorch's norm classes themselves (nn.LayerNorm, RMSNorm, GroupNorm, BatchNorm1d/2d/3d,
  InstanceNorm1d/2d/3d): loom.torch.nn's drop-ins;
- their subclasses that keep PyTorch's forward, and those whose forward is known to be the same
  math: timm's GroupNorm, GroupNorm1, LayerNorm, LayerNorm2d and RmsNorm, and timm's
  norm + activation modules (BatchNormAct2d, GroupNormAct, GroupNorm1Act, LayerNormAct,
  LayerNormAct2d), whose activation loom computes inside the norm's kernel and its backward
  (ReLU, SiLU, GELU, GELU-tanh, Sigmoid, Tanh; another activation, or a dropout between, runs
  after loom's norm as the module's own);
- Hugging Face's RMSNorm classes that compute weight * x * rsqrt(mean(x^2) + variance_epsilon).
Each such module's class becomes a subclass of its own class (isinstance still holds) whose
forward runs loom where it can and the class's own forward where loom has no kernel.
A subclass whose forward does other math is left alone; swap(model, report=True) prints what was
swapped, what was left and why."""
import inspect

import torch

from . import nn as _nn

_EXACT = {
    torch.nn.LayerNorm: _nn.LayerNorm,
    torch.nn.RMSNorm: _nn.RMSNorm,
    torch.nn.GroupNorm: _nn.GroupNorm,
    torch.nn.BatchNorm1d: _nn.BatchNorm1d,
    torch.nn.BatchNorm2d: _nn.BatchNorm2d,
    torch.nn.BatchNorm3d: _nn.BatchNorm3d,
    torch.nn.InstanceNorm1d: _nn.InstanceNorm1d,
    torch.nn.InstanceNorm2d: _nn.InstanceNorm2d,
    torch.nn.InstanceNorm3d: _nn.InstanceNorm3d,
}
_FAMILY = {
    torch.nn.LayerNorm: _nn.layer_norm_forward, torch.nn.RMSNorm: _nn.rms_norm_forward,
    torch.nn.GroupNorm: _nn.group_norm_forward, torch.nn.BatchNorm1d: _nn.batch_norm_forward,
    torch.nn.BatchNorm2d: _nn.batch_norm_forward, torch.nn.BatchNorm3d: _nn.batch_norm_forward,
    torch.nn.InstanceNorm1d: _nn.instance_norm_forward, torch.nn.InstanceNorm2d: _nn.instance_norm_forward,
    torch.nn.InstanceNorm3d: _nn.instance_norm_forward,
}
# timm's classes (timm.layers.norm, timm.layers.norm_act) whose forward is a family's math, by
# name: (family, whether an activation ends it).
_TIMM = {
    "GroupNorm": (_nn.group_norm_forward, False), "GroupNorm1": (_nn.group_norm_forward, False),
    "LayerNorm": (_nn.layer_norm_forward, False), "LayerNorm2d": (_nn.layer_norm_2d_forward, False),
    "RmsNorm": (_nn.rms_norm_forward, False),
    "BatchNormAct2d": (_nn.batch_norm_forward, True), "GroupNormAct": (_nn.group_norm_forward, True),
    "GroupNorm1Act": (_nn.group_norm_forward, True), "LayerNormAct": (_nn.layer_norm_forward, True),
    "LayerNormAct2d": (_nn.layer_norm_2d_forward, True),
}
_NAMES = {_nn.layer_norm_forward: "LayerNorm", _nn.rms_norm_forward: "RMSNorm", _nn.group_norm_forward: "GroupNorm",
          _nn.layer_norm_2d_forward: "LayerNorm2d", _nn.instance_norm_forward: "InstanceNorm",
          _nn.batch_norm_forward: "BatchNorm", _nn.hf_rms_norm_forward: "HFRMSNorm"}


def _activation(m):
    """(name loom fuses, None), or ("none", fn) where the module's drop and act run after loom."""
    act, drop = getattr(m, "act", None), getattr(m, "drop", None)
    name = _act_name(act)
    if (drop is None or isinstance(drop, torch.nn.Identity)) and name is not None:
        return name, None
    return "none", lambda y: act(drop(y)) if drop is not None else act(y)


def _act_name(act):
    if act is None or isinstance(act, torch.nn.Identity):
        return "none"
    simple = {torch.nn.ReLU: "relu", torch.nn.SiLU: "silu", torch.nn.Sigmoid: "sigmoid", torch.nn.Tanh: "tanh"}
    if type(act) in simple:
        return simple[type(act)]
    if type(act) is torch.nn.GELU:
        return "gelu" if act.approximate == "none" else "gelu_tanh"
    if type(act).__module__.startswith("timm."):
        return {"GELU": "gelu", "GELUTanh": "gelu_tanh", "Sigmoid": "sigmoid", "Tanh": "tanh"}.get(type(act).__name__)
    return None


_DERIVED = {}


def _derive(cls, family, with_act):
    key = (cls, family, with_act)
    if key in _DERIVED:
        return _DERIVED[key]
    own = cls.forward

    if with_act:
        def forward(self, x):
            if _nn.torch_in_compile(self):
                return own(self, x)
            name, after = _activation(self)
            y = family(self, x, name)
            if y is NotImplemented:
                return own(self, x)
            return y if after is None else after(y)
    else:
        def forward(self, x):
            y = NotImplemented if _nn.torch_in_compile(self) else family(self, x)
            return own(self, x) if y is NotImplemented else y

    t = type("Loom" + cls.__name__, (cls,), {"forward": forward, "__module__": __name__, "_loom_family": family,
                                             "__doc__": f"{cls.__qualname__} with its norm on loom"})
    _DERIVED[key] = t
    return t


def _hf_rms_ok(cls, m):
    if not (isinstance(getattr(m, "weight", None), torch.nn.Parameter) and m.weight.dim() == 1 and
            isinstance(getattr(m, "variance_epsilon", None), float)):
        return "no 1-D weight and float variance_epsilon"
    try:
        src = inspect.getsource(cls.forward)
    except (OSError, TypeError):
        return "its forward's source cannot be read to check its math"
    if "variance_epsilon" not in src or "self.weight *" not in src or "1.0 +" in src or "1 +" in src:
        return "its forward is not weight * x * rsqrt(mean(x^2) + eps)"
    return None


def _is_loom(cls):
    return cls.__module__ in (_nn.__name__, __name__) or getattr(cls, "_loom_family", None) is not None


def _target(m):
    """(class to give m, None), (None, why it is left), or (None, None) for no norm at all."""
    cls = type(m)
    if _is_loom(cls):
        return None, None  # already loom's
    if cls in _EXACT:
        return _EXACT[cls], None
    if cls.__module__.startswith("transformers.") and cls.__name__.endswith("RMSNorm"):
        why = _hf_rms_ok(cls, m)
        return (None, why) if why else (_derive(cls, _nn.hf_rms_norm_forward, False), None)
    if cls.__module__.startswith("timm.") and cls.__name__ in _TIMM:
        family, with_act = _TIMM[cls.__name__]
        return _derive(cls, family, with_act), None
    for base in cls.__mro__[1:]:
        if base in _FAMILY:
            if cls.forward is base.forward:
                return _derive(cls, _FAMILY[base], False), None
            return None, f"its forward overrides {base.__module__}.{base.__qualname__}'s with its own math"
    if "Norm" in cls.__name__:
        return None, "not one of the norms loom runs"
    return None, None


class SwapReport:
    """What swap() did: `swapped` [(module name, class, loom's family)] and `left` [(module name,
    class, why)]."""

    def __init__(self, swapped, left):
        self.swapped, self.left = swapped, left

    def __len__(self):
        return len(self.swapped)

    def __str__(self):
        lines = [f"loom.torch.swap: {len(self.swapped)} module(s) swapped, {len(self.left)} norm(s) left"]
        counts = {}
        for _, cls, fam in self.swapped:
            counts[(cls, fam)] = counts.get((cls, fam), 0) + 1
        lines += [f"  swapped {n} x {cls} -> loom {fam}" for (cls, fam), n in sorted(counts.items())]
        lines += [f"  left {name or '(model)'} ({cls}): {why}" for name, cls, why in self.left]
        return "\n".join(lines)


def _family_name(t):
    fam = getattr(t, "_loom_family", None)
    return _NAMES[fam] if fam is not None else t.__name__


def _only_matches(t, only):
    name = _family_name(t)
    return name in only or t.__name__ in only or (name in ("BatchNorm", "InstanceNorm") and
                                                 any(o.startswith(name) for o in only))


def swap(model, only=None, report=False, in_compile="torch"):
    """Turns every module of `model` that loom has a kernel for into loom's, in place. `only`: the
    names of the families to take (e.g. {"LayerNorm2d"}; LayerNorm, RMSNorm, HFRMSNorm, GroupNorm,
    LayerNorm2d, BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d); by default all. `in_compile`: what the
    modules run while torch.compile traces them: "torch" (PyTorch's forward, which Inductor fuses
    with the norm's neighbours) or "loom" (loom's kernels as ops Inductor calls; docs/python.md
    says where each wins). Returns the number swapped, or with report=True prints and returns a
    SwapReport."""
    if in_compile not in ("torch", "loom"):
        raise ValueError(f"loom.torch.swap: in_compile={in_compile!r} is neither 'torch' nor 'loom'")
    if only is not None:
        only = {only} if isinstance(only, str) else set(only)
        known = {t.__name__ for t in _EXACT.values()} | set(_NAMES.values()) - {"BatchNorm", "InstanceNorm"}
        unknown = sorted(only - known)
        if unknown:
            raise ValueError(f"loom.torch.swap: only={unknown} names no family of loom's; "
                             f"the names are {', '.join(sorted(known))}")
    swapped, left = [], []
    for name, m in model.named_modules():
        t, why = _target(m)
        if t is None:
            if why:
                left.append((name, type(m).__qualname__, why))
            continue
        if only is not None and not _only_matches(t, only):
            left.append((name, type(m).__qualname__, f"not in only={sorted(only)}"))
            continue
        cls = type(m).__qualname__
        m.__class__ = t
        swapped.append((name, cls, _family_name(t)))
    for m in model.modules():  # (those swapped now and those loom's before: the call says for both)
        if _is_loom(type(m)):
            m.loom_in_compile = in_compile == "loom"
    if report:
        r = SwapReport(swapped, left)
        print(r)
        return r
    return len(swapped)
