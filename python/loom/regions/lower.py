"""One region of a graph as one loom fusion: its nodes written in graph order into an Emitter, its
inputs the values it reads from outside, its outputs the values of its compute nodes that outside
nodes read (a view read outside is made there again from its source, free in the framework)."""
from dataclasses import dataclass, field

from .emit import Emitter
from .ops import NON_COMPUTE, TABLE


def non_compute(node):
    """A node that moves no data: a view, getitem, an identity, or a cast to the dtype it has."""
    if node.target in NON_COMPUTE:
        return True
    if node.target in ("prims.convert_element_type.default", "aten._to_copy.default"):
        src = node.args[0]
        return hasattr(src, "out") and src.out == node.out
    return False


@dataclass
class RegionFusion:
    name: str
    text: str
    nodes: list  # the region's nodes, graph order
    inputs: list  # nodes read from outside, the fusion's input order
    outputs: list  # nodes whose values leave it, the fusion's output order
    replicas: list = field(default_factory=list)  # views read both inside and outside
    origin: dict = field(default_factory=dict)  # loom value name -> the node that wrote it
    segments: dict = None  # loom's plan at the graph's sizes and input strides, once planned
    sizes: dict = field(default_factory=dict)  # its size symbols' example values


def outside_needs(nodes, graph):
    """(outputs, replicas): the compute nodes whose values are read outside, directly or through
    views read outside, and those views."""
    inside = {id(n) for n in nodes}
    need, replicas, seen = [], [], set()

    def want(n):
        if id(n) in seen or id(n) not in inside:
            return
        seen.add(id(n))
        if non_compute(n) and n.target != "getitem":
            replicas.append(n)
            for p in n.inputs():
                want(p)
        else:
            need.append(n)
    for n in nodes:
        if any(id(u) not in inside for u in graph.users_of(n)):
            want(n)
    order = {id(n): i for i, n in enumerate(nodes)}
    need.sort(key=lambda n: order[id(n)])
    replicas.sort(key=lambda n: order[id(n)])
    return need, replicas


def lower(nodes, graph, name):
    """The fusion of a region (its nodes a list in graph order). Raises Unsupported where a node
    cannot be written in it (its support was judged alone, without its neighbours)."""
    em = Emitter(name, graph.hints)
    for n in nodes:
        em.current = n
        em.vals[id(n)] = TABLE[n.target](em, n)
    em.current = None
    outputs, replicas = outside_needs(nodes, graph)
    for n in outputs:
        em.output(n, n.out.dtype)
    return RegionFusion(name, em.text(), list(nodes), [n for n, _ in em.inputs], outputs, replicas, em.origin)
