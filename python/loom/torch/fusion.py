"""compile_fusion(): any loom fusion as a callable on torch CUDA tensors, through the compiled
extension's C++ path (a signature cache in C++, outputs from PyTorch's caching allocator, torch's
current stream), as the opaque op `torch.ops.loom.fusion` under torch.compile; on the ctypes
path where the extension is not built.

A backward fusion, where given, makes the callable differentiable. Its inputs are named after
what it reads: a forward input (`x`), a forward output (`mean`), or the gradient of a forward
output (`d` + its name: `dy`; zeros where that output got none). Its outputs are named `d` + a
forward input (`dx`, `dw`): the gradients of those inputs (None for the others)."""
import torch

from .. import Fusion as _Fusion
from . import ops


def _source(fusion):
    """(kind, source, extra) of a fusion given as loom text, a .loom path, a built-in name or a
    loom.Fusion."""
    if isinstance(fusion, _Fusion):
        return "text", fusion.text, ""
    if not isinstance(fusion, str):
        raise TypeError(f"loom.torch.compile_fusion: a fusion is loom text, a .loom path, a built-in's name or a "
                        f"loom.Fusion, not {type(fusion).__name__}")
    if "\n" in fusion or "fusion" in fusion.split("(")[0]:
        return "text", fusion, ""
    if fusion.endswith(".loom"):
        return "file", fusion, ""
    return "builtin", fusion, ""


class _Part:
    """One fusion, run through the extension (by its number) or through loom.Fusion."""

    def __init__(self, fusion, dtype):
        kind, src, extra = _source(fusion)
        if kind == "builtin" and dtype:
            extra = dtype
        if ops.EXTENSION is not None:
            self.id = ops.EXTENSION.compile_fusion(src, kind, extra)
            self.name, self.inputs, self.outputs, self.aliases, _ = ops.EXTENSION.fusion_signature(self.id)
            self.fusion = None
        else:
            self.fusion = (_Fusion.from_text(src) if kind == "text" else _Fusion.from_file(src) if kind == "file"
                           else _Fusion.builtin(src, dtype))
            sig = self.fusion.signature
            self.name = sig["name"]
            self.inputs = [i["name"] for i in sig["inputs"]]
            self.outputs = [o["name"] for o in sig["outputs"]]
            self.aliases = [self.inputs.index(o["alias"]) if o["alias"] else -1 for o in sig["outputs"]]

    def run(self, inputs):
        if len(inputs) != len(self.inputs):
            raise TypeError(f"fusion `{self.name}` takes {len(self.inputs)} tensors ({', '.join(self.inputs)}), "
                            f"{len(inputs)} given")
        if self.fusion is None:
            if torch.compiler.is_compiling():
                return list(torch.ops.loom.fusion(self.id, list(inputs)))
            return ops.EXTENSION.run_fusion(self.id, list(inputs))
        return list(self.fusion.run(*inputs))


class _FusionFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, cf, *inputs):
        outs = cf.forward_part.run(inputs)
        ctx.cf = cf
        ctx.save_for_backward(*inputs, *outs)
        ctx.mark_non_differentiable(*[o for o, a in zip(outs, cf.forward_part.aliases) if a >= 0])
        return tuple(outs)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, *grads):
        cf = ctx.cf
        fwd = cf.forward_part
        saved = ctx.saved_tensors
        n = len(fwd.inputs)
        env = dict(zip(fwd.inputs, saved[:n]))
        env.update(zip(fwd.outputs, saved[n:]))
        for name, out, g in zip(fwd.outputs, saved[n:], grads):
            env["d" + name] = g if g is not None else torch.zeros_like(out)
        got = cf.backward_part.run([env[name] for name in cf.backward_part.inputs])
        by_name = dict(zip(cf.backward_part.outputs, got))
        return (None, *[by_name.get("d" + name) for name in fwd.inputs])


class CompiledFusion:
    """A loom fusion callable on torch tensors: call(*tensors) -> a tuple of outputs, in the fusion's
    output order (an output written in place into an input is that input)."""

    def __init__(self, fusion, dtype=None, backward=None):
        self.forward_part = _Part(fusion, dtype)
        self.backward_part = _Part(backward, dtype) if backward is not None else None
        if self.backward_part is not None:
            fwd, bwd = self.forward_part, self.backward_part
            readable = set(fwd.inputs) | set(fwd.outputs) | {"d" + o for o in fwd.outputs}
            for name in bwd.inputs:
                if name not in readable:
                    raise ValueError(f"loom.torch.compile_fusion: backward `{bwd.name}` reads `{name}`, which is none of "
                                     f"the forward's inputs ({', '.join(fwd.inputs)}), outputs "
                                     f"({', '.join(fwd.outputs)}) or their gradients (d + an output's name)")
            for name in bwd.outputs:
                if not name.startswith("d") or name[1:] not in fwd.inputs:
                    raise ValueError(f"loom.torch.compile_fusion: backward `{bwd.name}` writes `{name}`; its outputs "
                                     f"are gradients of forward inputs, named d + an input's name "
                                     f"({', '.join('d' + i for i in fwd.inputs)})")

    @property
    def inputs(self):
        return list(self.forward_part.inputs)

    @property
    def outputs(self):
        return list(self.forward_part.outputs)

    def __call__(self, *inputs):
        if self.backward_part is not None and torch.is_grad_enabled() and any(
                isinstance(t, torch.Tensor) and t.requires_grad for t in inputs):
            return _FusionFn.apply(self, *inputs)
        return tuple(self.forward_part.run(inputs))


def compile_fusion(fusion, dtype=None, backward=None):
    """`fusion` (loom text, a .loom path, a built-in's name, or a loom.Fusion; `dtype` for a
    built-in: "f16", "bf16", "f32", "f64") as a callable on torch CUDA tensors; `backward` a
    fusion of its gradients (this module's docstring says how it is named)."""
    return CompiledFusion(fusion, dtype, backward)
