"""loom.torch.explain(model, *inputs): what backend="loom" makes of a model, as the CLI's segment
view makes of a fusion: each graph's regions (their nodes, loom's kernels and why each is cut
there) and the nodes left to aten with why."""
import collections

import torch

from . import backend


class Explanation:
    """graphs: (kind, regions graph, plan, compiled module) for each graph compiled."""

    def __init__(self, graphs):
        self.graphs = graphs

    @property
    def regions(self):
        return [r for _, _, plan, _ in self.graphs for r in plan.regions]

    def kernel_count(self):
        """loom kernels a call of every graph once runs, at the sizes the graphs were traced with."""
        return sum(len(_segments(r)) for r in self.regions)

    def left(self):
        """(graph kind, node name, op, why) for each op left to aten."""
        out = []
        for kind, g, plan, _ in self.graphs:
            for n in g.nodes:
                if n.name in plan.left:
                    out.append((kind, n.name, n.target, plan.left[n.name]))
        return out

    def __str__(self):
        lines = []
        for kind, g, plan, _ in self.graphs:
            ops = sum(1 for n in g.nodes if n.kind == "op")
            taken = sum(len(r.nodes) for r in plan.regions)
            lines.append(f"{kind} graph: {ops} ops, {taken} in {len(plan.regions)} loom regions")
            for r in plan.regions:
                segs = _segments(r)
                lines.append(f"  {r.name}: {len(r.nodes)} nodes, {len(r.inputs)} inputs, {len(r.outputs)} outputs, "
                             f"{len(segs)} kernel{'s' if len(segs) != 1 else ''}")
                lines.append(f"    nodes: {', '.join(f'{n.name} ({_short(n.target)})' for n in r.nodes)}")
                for s in segs:
                    lines.append(f"    kernel {s}")
            why = collections.defaultdict(list)
            for n in g.nodes:
                if n.name in plan.left:
                    why[(n.target, plan.left[n.name])].append(n.name)
            for (target, reason), names in sorted(why.items()):
                shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
                lines.append(f"  left to aten: {_short(target)} ({shown}): {reason}")
        return "\n".join(lines)


def _short(target):
    return target.replace("aten.", "").replace(".default", "")


def _segments(region):
    """loom's kernels of a region as the partitioner planned it (the graph's sizes and input
    strides), a line each (scheduler and reason)."""
    if region.segments is None:
        return ["(not planned)"]
    return [_segment_line(s) for s in region.segments.get("segments", [])]


def _segment_line(s):
    ops = ", ".join(s.get("ops", [])[:8]) + (" ..." if len(s.get("ops", [])) > 8 else "")
    why = "; ".join(str(r) for r in s.get("rejections", []))
    return f"{s.get('scheduler')}: {ops}" + (f" (cut: {why})" if why else "")


def explain(model, *inputs, backward=None, dynamic=None):
    """Compiles `model` (a module or function) with backend="loom", runs it once on `inputs`, and
    its backward where an output needs a gradient (backward=None) or where backward=True; returns
    an Explanation (print it)."""
    rec = backend._Recorder()
    backend._recorders.append(rec)
    try:
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="loom", dynamic=dynamic)
        out = compiled(*inputs)
        outs = [o for o in (out if isinstance(out, (tuple, list)) else (out,)) if isinstance(o, torch.Tensor)]
        wants = [o for o in outs if o.requires_grad]
        if wants and backward is not False:
            torch.autograd.backward(wants, [torch.ones_like(o) for o in wants])
    finally:
        backend._recorders.remove(rec)
    return Explanation(rec.graphs)
