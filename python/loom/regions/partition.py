"""Regions of a graph for loom: the nodes loom can run, grouped in graph order into regions no
path leaves and re-enters (so the regions and the framework's nodes still run in a topological
order), each region one loom fusion. What is left says why."""
import re
from dataclasses import dataclass, field

from .emit import Emitter, Unsupported
from .lower import lower, non_compute
from .ops import CREATIONS, TABLE


def support(node, hints):
    """Why loom cannot run `node` alone, or None."""
    if node.kind != "op":
        return None
    fn = TABLE.get(node.target)
    if fn is None:
        return f"loom has no op for `{node.target}`"
    for t in node.types():
        if t is None:
            return "it makes no tensor"
        why = t.problem()
        if why:
            return f"it makes {why}"
    try:  # (a size argument read from a run-time size node is taken from the node's type instead)
        fn(Emitter(hints=hints), node)
    except Unsupported as e:
        return str(e)
    except (TypeError, ValueError, IndexError, KeyError, AttributeError, ZeroDivisionError) as e:
        return f"arguments loom does not read ({type(e).__name__}: {e})"
    return None


@dataclass
class Plan:
    regions: list  # RegionFusions
    left: dict = field(default_factory=dict)  # node name -> why it stays with the framework

    def region_of(self):
        return {id(n): r for r in self.regions for n in r.nodes}


class _Regions:
    """Regions being formed: each node's region, each region's nodes and lowest graph position."""

    def __init__(self, graph):
        self.graph, self.of, self.members, self.low, self.next = graph, {}, {}, {}, 0

    def new(self):
        r, self.next = self.next, self.next + 1
        self.members[r], self.low[r] = [], None
        return r

    def add(self, r, n):
        self.of[id(n)] = r
        self.members[r].append(n)
        self.low[r] = n.index if self.low[r] is None else min(self.low[r], n.index)

    def merge(self, into, r):
        for m in self.members.pop(r):
            self.add(into, m)
        del self.low[r]

    def cycles(self, regions, extra=()):
        """Whether `regions` (and the nodes `extra`) as one region would leave a path out of it and
        back, every other region counted as one node (its outputs follow all its inputs)."""
        nodes = [m for r in regions for m in self.members[r]] + list(extra)
        trial = {id(m) for m in nodes}
        limit = max(m.index for m in nodes)
        users = self.graph.users_of
        stack = [u for m in nodes for u in users(m) if id(u) not in trial]
        seen, seen_regions = set(), set(regions)
        while stack:
            u = stack.pop()
            if id(u) in seen:
                continue
            seen.add(id(u))
            r = self.of.get(id(u))
            if r is not None and r not in seen_regions:
                seen_regions.add(r)
                nxt = [w for m in self.members[r] for w in users(m)]
            else:
                nxt = users(u)
            for w in nxt:
                if id(w) in trial:
                    return True
                c = self.of.get(id(w))
                if w.index > limit and (c is None or self.low[c] > limit):
                    continue  # past every trial node, and no region of it reaches back
                stack.append(w)
        return False


def _assign(graph, left):
    """Regions in graph order: a node loom takes joins the regions of the producers it reads, all of
    them merged where no path leaves the merged set and comes back (else as many as can be, most
    producers first), or starts a region of its own."""
    rs = _Regions(graph)
    for n in graph.nodes:
        if n.kind != "op" or n.name in left:
            continue
        if n.target == "getitem":
            r = rs.of.get(id(n.args[0]))
            if r is None:
                left[n.name] = f"it reads a result of `{n.args[0].name}`, which stays outside"
                continue
            rs.add(r, n)
            continue
        counts = {}
        for p in n.inputs():
            c = rs.of.get(id(p))
            if c is not None:
                counts[c] = counts.get(c, 0) + 1
        joined = []
        for c in sorted(counts, key=lambda c: (-counts[c], -c)):
            if not rs.cycles(joined + [c], [n]):
                joined.append(c)
        r = joined[0] if joined else rs.new()
        for c in joined[1:]:
            rs.merge(r, c)
        rs.add(r, n)
    _merge_siblings(rs)
    return [sorted(ms, key=lambda m: m.index) for _, ms in sorted(rs.members.items())]


def _merge_siblings(rs):
    """Regions that read a tensor in common merged where no path between them runs outside (one
    kernel may then read it once; loom's segmenter still cuts where their iterations differ)."""
    readers = {}  # input node id -> one node of each region reading it
    for r, ms in rs.members.items():
        inside = {id(m) for m in ms}
        for m in ms:
            for p in m.inputs():
                if id(p) not in inside:
                    got = readers.setdefault(id(p), [])
                    if not any(rs.of[id(x)] == r for x in got):
                        got.append(ms[0])
    for reps in readers.values():
        for x, y in zip(reps, reps[1:]):
            a, b = rs.of[id(x)], rs.of[id(y)]
            if a != b and not rs.cycles([a, b]):
                rs.merge(a, b)


def _settle(nodes, graph, left):
    """The region's nodes once views read only outside are left (until none is), or [] where what
    stays holds no op that reads a tensor."""
    while True:
        inside = {id(n) for n in nodes}
        drop = [n for n in nodes if non_compute(n) and n.target != "getitem"
                and not any(id(u) in inside for u in graph.users_of(n))]
        if not drop:
            break
        for n in drop:
            left[n.name] = "a view loom's region does not read (the framework's is free)"
        nodes = [n for n in nodes if n not in drop]
    if not any(not non_compute(n) and n.target not in CREATIONS for n in nodes):
        for n in nodes:
            left[n.name] = "its region would hold no op that reads a tensor"
        return []
    return nodes


def partition(graph, name="region", plan_check=True):
    """The Plan of `graph` (a regions.graph.Graph): regions lowered to loom text, in graph order.
    With plan_check, each region is planned by loom at the graph's sizes and input strides; a node
    loom's planner refuses is left outside (with loom's message) and the graph cut again."""
    left = {}
    for n in graph.nodes:
        if n.kind == "op" and n.target != "getitem":
            why = support(n, graph.hints)
            if why:
                left[n.name] = why
    planned = {}  # a region's text, its name aside -> loom's plan or message: each planned once
    for _ in range(64):
        plan = Plan([], dict(left))
        refused = None
        for nodes in _assign(graph, plan.left):
            region = _region(nodes, graph, plan.left, f"{name}_{len(plan.regions)}")
            if isinstance(region, list):
                refused = region
                break
            if region is None:
                continue
            refused = plan_check and _planner_refuses(region, planned)
            if refused:
                break
            plan.regions.append(region)
        if not refused:
            return plan
        for n, why in refused:
            left[n.name] = why
    raise AssertionError("loom's planner kept refusing regions of this graph")


def _region(nodes, graph, left, name):
    nodes = _settle(nodes, graph, left)
    if not nodes:
        return None
    try:
        region = lower(nodes, graph, name)
    except Unsupported as e:
        for n in nodes:
            left[n.name] = f"its region could not be written ({e})"
        return None
    region.sizes = {s: graph.hints[s] for n in region.nodes + region.inputs for t in n.types()
                    for e in t.shape for s, _ in e.syms if s in graph.hints}
    unbound = _unbound(region)
    if unbound:
        views = [n for n in nodes if non_compute(n) and n.target != "getitem" and _mentions(n, unbound)]
        # A view to sizes no input determines (a flattened batch split again) stays with the
        # framework, and the region reads its result: the graph is cut again.
        why = f"its region's sizes {', '.join(sorted(unbound))} are determined by no input alone"
        if views:
            return [(n, why) for n in views]
        for n in nodes:
            left[n.name] = why
        return None
    return region


def _layout(t):
    """An input's dims from outer to inner by its strides (None: row-major, or not known)."""
    if t.strides is None or t.rank < 2:
        return None
    order = sorted(range(t.rank), key=lambda d: (-t.strides[d], d))
    return None if order == list(range(t.rank)) else order


def _plan(region):
    """loom's plan of a region at its sizes and its inputs' strides, or the LoomError refusing it."""
    from .. import Fusion
    from ..errors import LoomError
    fusion = Fusion.from_text(region.text)
    layouts = {name: _layout(n.out) for n, name in zip(region.inputs, fusion.inputs) if _layout(n.out)}
    try:
        return fusion.segments(sizes=region.sizes, layouts=layouts)
    except LoomError as e:
        return e


def _planner_refuses(region, planned):
    """[(node, why)] for a region loom's planner cannot run, or None (the region keeps its plan):
    the node that wrote the value its message names, else every node of the region."""
    body = region.text.split("\n", 1)[1]
    if body not in planned:
        planned[body] = _plan(region)
    got = planned[body]
    if not isinstance(got, Exception):
        region.segments = got
        return None
    why = f"loom's planner refuses its region: {got}"
    # The values it names, the view among them first: a reshape loom cannot make of the layout it
    # is given is what most often refuses a region.
    names = re.findall(r"`\w+ \((\w+)\)`|`(\w+)`", str(got))
    named = [region.origin.get(a or b) for a, b in names]
    named = sorted({id(n): n for n in named if n is not None}.values(), key=lambda n: not non_compute(n))
    return [(n, why) for n in (named[:1] or region.nodes)]


def _mentions(node, syms):
    return any(s in syms for t in node.types() for e in t.shape for s, _ in e.syms)


def _unbound(region):
    """The sizes of a region that its inputs' extents do not determine, as loom binds them: an
    extent with one unknown size, to the first power, determines it."""
    have, extents = set(), [e for n in region.inputs for e in n.out.shape]
    grew = True
    while grew:
        grew = False
        for e in extents:
            unknown = [(s, p) for s, p in e.syms if s not in have]
            if len(unknown) == 1 and unknown[0][1] == 1:
                have.add(unknown[0][0])
                grew = True
    need = {s for n in region.nodes for t in n.types() for e in t.shape for s, _ in e.syms}
    return need - have
