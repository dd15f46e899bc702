"""Regions of a graph for loom: the nodes loom can run, grouped in graph order into regions no
path leaves and re-enters (so the regions and the framework's nodes still run in a topological
order), each region one loom fusion. What is left says why."""
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
    outs = node.out if isinstance(node.out, tuple) else (node.out,)
    for t in outs:
        if t is None:
            return "it makes no tensor"
        why = t.problem()
        if why:
            return f"it makes {why}"
    for p in node.inputs():
        if p.out is None:
            return f"it reads `{p.name}`, a value known only at run time"
    try:
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


def _assign(graph, left):
    """Regions in graph order: a node loom takes joins the regions of the producers it reads, all of
    them merged where no path leaves the merged set and comes back (else as many as can be, most
    producers first), or starts a region of its own."""
    region_of, members = {}, {}  # node id -> region id; region id -> its nodes
    for n in graph.nodes:
        if n.kind != "op" or n.name in left:
            continue
        if n.target == "getitem":
            r = region_of.get(id(n.args[0]))
            if r is None:
                left[n.name] = f"it reads a result of `{n.args[0].name}`, which stays outside"
                continue
            region_of[id(n)] = r
            members[r].append(n)
            continue
        counts = {}
        for p in n.inputs():
            c = region_of.get(id(p))
            if c is not None:
                counts[c] = counts.get(c, 0) + 1
        joined = []
        for c in sorted(counts, key=lambda c: (-counts[c], -c)):
            trial = [m for r in joined + [c] for m in members[r]] + [n]
            if not _leaves_and_returns(graph, trial, n.index):
                joined.append(c)
        r = joined[0] if joined else len(members)
        members.setdefault(r, [])
        for c in joined[1:]:
            for m in members.pop(c):
                region_of[id(m)] = r
                members[r].append(m)
        region_of[id(n)] = r
        members[r].append(n)
    _merge_siblings(graph, members)
    return [sorted(ms, key=lambda m: m.index) for _, ms in sorted(members.items())]


def _merge_siblings(graph, members):
    """Regions that read a tensor in common merged where no path between them runs outside (one
    kernel may then read it once; loom's segmenter still cuts where their iterations differ)."""
    readers = {}
    for r, ms in members.items():
        inside = {id(m) for m in ms}
        for m in ms:
            for p in m.inputs():
                if id(p) not in inside and r not in readers.setdefault(id(p), []):
                    readers[id(p)].append(r)
    into = {r: r for r in members}

    def find(r):
        while into[r] != r:
            r = into[r]
        return r
    for rs in readers.values():
        for a, b in zip(rs, rs[1:]):
            a, b = find(a), find(b)
            if a == b:
                continue
            trial = members[a] + members[b]
            if not _leaves_and_returns(graph, trial, max(m.index for m in trial)):
                members[a] = trial
                del members[b]
                into[b] = a


def _leaves_and_returns(graph, nodes, limit):
    """Whether a path from `nodes` through a node outside them comes back to them (nodes after
    `limit` in graph order cannot lead back)."""
    inside = {id(m) for m in nodes}
    stack = [u for m in nodes for u in graph.users_of(m) if id(u) not in inside and u.index <= limit]
    seen = set()
    while stack:
        u = stack.pop()
        if id(u) in seen:
            continue
        seen.add(id(u))
        for w in graph.users_of(u):
            if id(w) in inside:
                return True
            if w.index <= limit and id(w) not in seen:
                stack.append(w)
    return False


def _settle(nodes, graph, left):
    """The region's nodes once views read only outside, creations of sizes no input binds and regions
    of no compute are left; [] if nothing is left."""
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


def partition(graph, name="region"):
    """The Plan of `graph` (a regions.graph.Graph): regions lowered to loom text, in graph order."""
    left = {}
    for n in graph.nodes:
        if n.kind == "op" and n.target != "getitem":
            why = support(n, graph.hints)
            if why:
                left[n.name] = why
    plan = Plan([], left)
    for k, nodes in enumerate(_assign(graph, left)):
        nodes = _settle(nodes, graph, left)
        if not nodes:
            continue
        try:
            region = lower(nodes, graph, f"{name}_{len(plan.regions)}")
        except Unsupported as e:
            for n in nodes:
                left[n.name] = f"its region could not be written ({e})"
            continue
        unbound = _unbound(region, graph)
        if unbound:
            for n in nodes:
                left[n.name] = f"its region's sizes {', '.join(sorted(unbound))} come from no input"
            continue
        plan.regions.append(region)
    return plan


def _unbound(region, graph):
    have = {s for n in region.inputs for e in n.out.shape for s, _ in e.syms}
    need = set()
    for n in region.nodes:
        for t in (n.out if isinstance(n.out, tuple) else (n.out,)):
            need |= {s for e in t.shape for s, _ in e.syms}
    return need - have
