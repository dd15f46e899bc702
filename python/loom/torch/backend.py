"""torch.compile(model, backend="loom"): AOTAutograd with PyTorch's decompositions to core aten
(norms and softmax decomposed too, so their regions fuse with their neighbours), the min-cut
rematerialization partitioner, and forward and backward graphs cut into loom fusions
(loom.regions) that run through the extension's C++ path; what loom does not take stays aten.
Sizes marked dynamic are loom's run-time sizes: one compile serves every batch size.

    model = torch.compile(model, backend="loom")
    loom.torch.explain(model, x)   # the regions, what stayed outside and why, loom's kernels

The logger "loom.torch.backend" at DEBUG prints each graph's regions as they are compiled."""
import functools
import logging

import torch

from .. import regions
from . import graphs

log = logging.getLogger("loom.torch.backend")
aten = torch.ops.aten

# Ops decomposed beyond core aten: the norms, softmax and activations, into the pointwise ops and
# reductions loom fuses with what is around them.
_MORE_DECOMPOSED = ("native_layer_norm", "native_layer_norm_backward", "_softmax", "_log_softmax",
                    "_softmax_backward_data", "_log_softmax_backward_data", "native_group_norm",
                    "native_group_norm_backward", "native_batch_norm", "native_batch_norm_backward",
                    "_native_batch_norm_legit", "_native_batch_norm_legit_functional",
                    "_native_batch_norm_legit_no_training", "silu_backward", "hardtanh", "leaky_relu",
                    "hardswish", "hardsigmoid", "gelu_backward", "mish", "elu", "softplus", "logsumexp",
                    "addcmul", "addcdiv", "lerp", "native_dropout_backward", "rms_norm", "_fused_rms_norm",
                    "_fused_rms_norm_backward", "sigmoid_backward", "tanh_backward")


@functools.cache
def decompositions():
    """The decomposition table (built once: every graph dynamo hands the backend reads it)."""
    from torch._decomp import core_aten_decompositions, get_decompositions
    core = core_aten_decompositions()
    table = dict(core.items()) if hasattr(core, "items") else dict(core)
    ops = [getattr(aten, name) for name in _MORE_DECOMPOSED if hasattr(aten, name)]
    table.update(get_decompositions(ops))
    return table


class _Recorder:
    """What explain() collects: one entry a compiled graph."""

    def __init__(self):
        self.graphs = []
        self.failures = 0


_recorders = []


def compile_graph(gm, example_inputs, kind):
    """gm (aten, with meta) with its regions as loom fusions."""
    try:
        graph, fx_of = graphs.to_regions_graph(gm)
        plan = regions.partition(graph, name=f"{kind}_region")
        out = graphs.rewrite(gm, plan, graph, fx_of)
    except Exception:  # loom's fault, not the model's: the graph runs as aten, and the log says why
        log.warning("loom could not cut the %s graph into regions; it runs as aten", kind, exc_info=True)
        for rec in _recorders:
            rec.failures += 1
        return gm
    if log.isEnabledFor(logging.DEBUG):
        log.debug("%s graph: %d nodes, %d loom regions", kind, len(graph.nodes), len(plan.regions))
        for r in plan.regions:
            log.debug("%s", r.text)
    for rec in _recorders:
        rec.graphs.append((kind, graph, plan, out))
    return out


def _boxed(gm):
    """gm's forward in AOTAutograd's boxed convention: one list of inputs, emptied by the call so
    that each input can be freed once read (PyTorch's CUDA graph trees require it)."""
    forward = gm.forward

    def run(args):
        inputs = list(args)
        args.clear()
        return forward(*inputs)
    run._boxed_call = True
    return run


def _compiler(kind):
    """AOTAutograd's compiler of the forward, backward or inference graph."""
    def compile_(gm, example_inputs):
        return _boxed(compile_graph(gm, example_inputs, kind))
    return compile_


def loom_backend(gm, example_inputs, **kwargs):
    """The backend torch.compile calls. `mode` and `options` from torch.compile: "default" and
    "reduce-overhead" (CUDA graphs around the compiled forward and backward)."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.partitioners import min_cut_rematerialization_partition
    mode = kwargs.pop("mode", None) or "default"
    options = kwargs.pop("options", None)
    if kwargs or options:
        raise TypeError(f"backend 'loom' takes mode= alone, not {sorted(kwargs) + (['options'] if options else [])}")
    if mode not in ("default", "reduce-overhead"):
        raise ValueError(f"backend 'loom': mode={mode!r}; it takes 'default' or 'reduce-overhead'")
    fw, bw, inf = _compiler("forward"), _compiler("backward"), _compiler("inference")
    if mode == "reduce-overhead":
        n = len(example_inputs)
        fw, bw, inf = _cudagraphed(fw, n, False), _cudagraphed(bw, n, True), _cudagraphed(inf, n, False, True)
    backend = aot_autograd(fw_compiler=fw, bw_compiler=bw, inference_compiler=inf,
                           decompositions=decompositions(), partition_fn=min_cut_rematerialization_partition,
                           keep_inference_input_mutations=True)
    return backend(gm, example_inputs)


def _cudagraphed(compiler, n_dynamo_inputs, is_backward, is_inference=False):
    """compiler's callable under PyTorch's CUDA graph trees, as its cudagraphs backend does: the
    forward's parameters and buffers (the inputs AOTAutograd adds) and the backward's saved
    tensors are static, the rest copied into the graph's buffers."""
    def compile_(gm, example_inputs):
        from torch._dynamo.backends.cudagraphs import count_tangents, find_input_mutations
        from torch._inductor.utils import num_fw_fixed_arguments
        from torch._inductor.cudagraph_trees import cudagraphify_impl
        fn = compiler(gm, example_inputs)
        fixed = count_tangents(gm) if is_backward else num_fw_fixed_arguments(n_dynamo_inputs, len(example_inputs))
        device = next((t.device.index for t in example_inputs if isinstance(t, torch.Tensor) and t.is_cuda), 0)
        try:
            from torch._inductor.cudagraph_utils import get_placeholder_info
            placeholders = get_placeholder_info(gm.graph)
        except ImportError:
            placeholders = ()
        outputs = next(n for n in gm.graph.nodes if n.op == "output").args[0]
        traces = [getattr(o, "meta", {}).get("stack_trace") for o in outputs]
        mutated = find_input_mutations(gm.graph) - set(range(fixed))
        out = cudagraphify_impl(fn, example_inputs, range(fixed), device_index=device, is_backward=is_backward,
                                is_inference=is_inference, stack_traces=traces, placeholders=placeholders,
                                mutated_input_idxs=mutated)
        out._boxed_call = True
        return out
    return compile_


def register():
    from torch._dynamo.backends.registry import _COMPILER_FNS, register_backend
    if "loom" not in _COMPILER_FNS:
        register_backend(loom_backend, name="loom")
