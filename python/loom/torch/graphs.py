"""An FX graph of aten ops as loom.regions' graph, and the FX graph that runs each of its regions as
one loom fusion: the region's nodes replaced by one call of its compiled fusion, the framework's
nodes copied as they are, in an order that keeps every producer before its users."""
import heapq
import operator
import warnings
from fractions import Fraction

import torch

from .. import regions
from ..regions.extent import Extent
from . import ops
from .fusion import compile_fusion

_DTYPES = {torch.bool: "bool", torch.int32: "i32", torch.int64: "i64", torch.float16: "f16",
           torch.bfloat16: "bf16", torch.float32: "f32", torch.float64: "f64"}


def _monomial(expr):
    """The Extent of a sympy size expression, or None where it is no monomial."""
    if expr.is_Integer:
        return Extent(int(expr))
    if expr.is_Symbol:
        return Extent(1, {str(expr): 1})
    if expr.is_Mul:
        out = Extent(1)
        for a in expr.args:
            if a.is_Rational:  # integers included
                out = out * Extent(Fraction(int(a.p), int(a.q)))
            elif a.is_Symbol:
                out = out * Extent(1, {str(a): 1})
            elif a.is_Pow and a.base.is_Symbol and a.exp.is_Integer and int(a.exp) > 0:
                out = out * Extent(1, {str(a.base): int(a.exp)})
            else:
                return None
        return out
    return None


def _ints(sizes):
    """sizes as ints, or None where one is symbolic (int() of a SymInt would specialize it)."""
    return tuple(sizes) if all(isinstance(s, int) for s in sizes) else None


def _extent(s):
    if isinstance(s, int):
        return Extent(s)
    if isinstance(s, torch.SymInt):
        return _monomial(s.node.expr)
    return None


def _type(val):
    if isinstance(val, torch.Tensor):
        strides = _ints(val.stride())
        device = "cuda" if val.device.type == "cuda" else val.device.type
        return regions.TensorType(_DTYPES.get(val.dtype, str(val.dtype).replace("torch.", "")),
                                  tuple(_extent(s) for s in val.shape), device, strides)
    if isinstance(val, (tuple, list)) and val and all(isinstance(v, torch.Tensor) for v in val):
        return tuple(_type(v) for v in val)
    return None


def _hints(gm):
    """An example value of every size symbol of the graph, for comparing extents."""
    hints = {}

    def note(s):
        if isinstance(s, torch.SymInt):
            expr = s.node.expr
            if expr.is_Symbol and s.node.hint is not None:
                hints[str(expr)] = int(s.node.hint)
    for n in gm.graph.nodes:
        val = n.meta.get("val")
        for v in (val if isinstance(val, (tuple, list)) else (val,)):
            if isinstance(v, torch.Tensor):
                for s in v.shape:
                    note(s)
            else:
                note(v)
    return hints


def to_regions_graph(gm):
    """(graph, fx node of each graph node) for a GraphModule of aten ops with meta['val']."""
    mine, fx_of = {}, {}

    def arg(a):
        if isinstance(a, torch.fx.Node):
            return mine[a]
        if isinstance(a, (list, tuple)):
            return type(a)(arg(x) for x in a)
        if isinstance(a, dict):
            return {k: arg(v) for k, v in a.items()}
        if isinstance(a, torch.dtype):
            return _DTYPES.get(a, str(a))
        if isinstance(a, torch.SymInt):
            return regions.Sym(_extent(a))
        if isinstance(a, (torch.SymFloat, torch.SymBool)):
            return regions.Sym(None)
        if isinstance(a, (torch.device, torch.memory_format, torch.layout)):
            return str(a)
        return a
    nodes = []
    for n in gm.graph.nodes:
        out = _type(n.meta.get("val"))
        if n.op in ("placeholder", "get_attr"):
            node = regions.Node(n.name, "input", out=out)
        elif n.op == "output":
            node = regions.Node(n.name, "output", args=arg(n.args))
        else:
            target = "getitem" if n.target is operator.getitem else str(n.target)
            kind = "op" if n.op == "call_function" else "input"
            node = regions.Node(n.name, kind, target, arg(n.args), arg(dict(n.kwargs)), out)
        mine[n], fx_of[id(node)] = node, n
        nodes.append(node)
    graph = regions.Graph(nodes)
    graph.hints = _hints(gm)
    return graph, fx_of


class RegionCall:
    """One region's compiled fusion, called with the region's input tensors; returns its outputs in
    the strides the graph's metadata gives them (copied where loom's plan wrote others)."""

    def __init__(self, region, fx_outputs, fallback):
        self.region = region
        self.fusion = compile_fusion(region.text).forward_part
        self.fallback = fallback  # the region's own aten nodes, for a signature loom refuses
        self.strides = []
        for n in fx_outputs:
            v = n.meta.get("val")
            shape, strides = _ints(v.shape), _ints(v.stride())
            self.strides.append((shape, strides) if shape is not None and strides is not None else None)
        self.restrided = 0
        self.fix = None  # the outputs to restride, known after the first call (guards hold strides)
        ext = ops.EXTENSION
        part = self.fusion
        self.run = (lambda inputs: ext.run_fusion(part.id, list(inputs))) if part.fusion is None else part.run

    def __call__(self, *inputs):
        if self.fusion is None:
            return self.fallback(*inputs)
        try:
            outs = self.run(inputs)
        except torch.OutOfMemoryError:
            raise
        except RuntimeError as e:  # loom refused these inputs: aten runs the region from now on
            if self.fallback is None:
                raise
            warnings.warn(f"loom's region {self.region.name} runs as aten: {e}", stacklevel=2)
            self.fusion = None
            return self.fallback(*inputs)
        if self.fix is None:
            self.fix = [k for k, want in enumerate(self.strides) if want is not None and not _same_strides(outs[k], *want)]
            self.restrided = len(self.fix)
        for k in self.fix:
            want = self.strides[k]
            outs[k] = torch.empty_strided(want[0], want[1], dtype=outs[k].dtype, device=outs[k].device).copy_(outs[k])
        return tuple(outs)

    def __repr__(self):
        return f"loom_{self.region.name}"


def _same_strides(t, shape, strides):
    return all(n <= 1 or a == b for n, a, b in zip(shape, t.stride(), strides))


def _schedule(graph, plan):
    """Items (a graph node, or a region) in an order where each follows what it reads; the
    earliest graph position first among those ready."""
    region_of = plan.region_of()
    replicas = {id(n) for r in plan.regions for n in r.replicas}
    items, item_of = [], {}
    for n in graph.nodes:
        r = region_of.get(id(n))
        if r is None or id(n) in replicas:
            item_of[id(n)] = len(items)
            items.append(n)
    for r in plan.regions:
        k = len(items)
        items.append(r)
        for n in r.nodes:
            if id(n) not in replicas:
                item_of[id(n)] = k
    deps = [set() for _ in items]
    for k, it in enumerate(items):
        reads = it.inputs if isinstance(it, regions.RegionFusion) else it.inputs()
        for p in reads:
            src = item_of.get(id(p))
            if src is not None and src != k:
                deps[k].add(src)
    users = [[] for _ in items]
    for k, d in enumerate(deps):
        for s in d:
            users[s].append(k)
    first = [it.index if isinstance(it, regions.Node) else min(n.index for n in it.nodes) for it in items]
    waiting = [len(d) for d in deps]
    ready = [(first[k], k) for k in range(len(items)) if not waiting[k]]
    heapq.heapify(ready)
    order = []
    while ready:
        _, k = heapq.heappop(ready)
        order.append(items[k])
        for u in users[k]:
            waiting[u] -= 1
            if not waiting[u]:
                heapq.heappush(ready, (first[u], u))
    if len(order) != len(items):
        raise AssertionError("loom's regions of this graph hold a cycle")
    return order


def _aten_region(gm, region, fx_of):
    """The region's nodes as a GraphModule of their own: inputs in, outputs out, as aten runs them."""
    sub = torch.fx.Graph()
    env = {fx_of[id(n)]: sub.placeholder(f"in{k}") for k, n in enumerate(region.inputs)}
    try:
        for n in region.nodes:
            fx = fx_of[id(n)]
            env[fx] = sub.node_copy(fx, lambda a: env[a])
    except KeyError:  # a node reads a run-time size the region does not take: no fallback
        return None
    sub.output(tuple(env[fx_of[id(n)]] for n in region.outputs))
    return torch.fx.GraphModule(gm, sub)


def _named(call):
    """A plain function for FX's generated code to call (it names a call_function target by its
    __name__)."""
    def run(*inputs):
        return call(*inputs)
    run.__name__ = run.__qualname__ = f"loom_{call.region.name}"
    return run


def rewrite(gm, plan, graph, fx_of):
    """A GraphModule running gm with each region of `plan` as one call of its fusion."""
    new = torch.fx.Graph()
    env = {}
    calls = []
    for item in _schedule(graph, plan):
        if isinstance(item, regions.Node):
            fx = fx_of[id(item)]
            env[fx] = new.node_copy(fx, lambda a: env[a])
            continue
        call = RegionCall(item, [fx_of[id(n)] for n in item.outputs], _aten_region(gm, item, fx_of))
        calls.append(call)
        node = new.call_function(_named(call), tuple(env[fx_of[id(n)]] for n in item.inputs))
        for k, n in enumerate(item.outputs):
            env[fx_of[id(n)]] = new.call_function(operator.getitem, (node, k))
    out = torch.fx.GraphModule(gm, new)
    out.loom_calls = calls
    return out
