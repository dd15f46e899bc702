"""The graph the partitioner reads: a framework's op graph (an FX graph, or one built by hand in a
test) reduced to what loom needs: each node's op name as the framework prints it
(`aten.add.Tensor`), its arguments, and the type of what it makes. No framework is imported here."""
from dataclasses import dataclass, field

from .extent import Extent

# loom's dtypes; a framework dtype loom has not is carried as its own name and stops a node.
LOOM_DTYPES = ("bool", "i32", "i64", "f16", "bf16", "f32", "f64")
FLOATS = ("f16", "bf16", "f32", "f64")


@dataclass(frozen=True)
class TensorType:
    """dtype (a loom dtype or a framework's name of another), shape (Extents, or None for a size
    that is no monomial), device ("cuda" or another), strides (ints, or None where symbolic)."""
    dtype: str
    shape: tuple
    device: str = "cuda"
    strides: tuple = None

    @property
    def rank(self):
        return len(self.shape)

    def problem(self):
        """Why loom cannot hold a tensor of this type, or None."""
        if self.dtype not in LOOM_DTYPES:
            return f"dtype {self.dtype} (loom has {', '.join(LOOM_DTYPES)})"
        if self.device != "cuda":
            return f"a tensor on {self.device}"
        if any(e is None for e in self.shape):
            return "a size that is no monomial of the graph's sizes"
        return None


def tensor_type(dtype, shape, device="cuda", strides=None):
    return TensorType(dtype, tuple(None if e is None else Extent.of(e) for e in shape), device,
                      None if strides is None else tuple(strides))


@dataclass(frozen=True)
class Sym:
    """A scalar known only at run time (a framework's SymInt argument): its extent, or None."""
    extent: object


@dataclass(eq=False)
class Node:
    """One op of the graph. kind: "input" (a graph input), "op", or "output" (the graph's results,
    args[0] a list). `out` is a TensorType, a tuple of them (an op of several results, read through
    getitem nodes), or None (a non-tensor)."""
    name: str
    kind: str
    target: str = ""
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    out: object = None
    index: int = 0  # position in the graph's order

    def types(self):
        """The TensorTypes (or None) of what the node makes, one a result."""
        return self.out if isinstance(self.out, tuple) else (self.out,)

    def inputs(self):
        """The nodes this one reads, each once, in argument order."""
        seen, found = set(), []

        def walk(a):
            if isinstance(a, Node):
                if id(a) not in seen:
                    seen.add(id(a))
                    found.append(a)
            elif isinstance(a, (list, tuple)):
                for x in a:
                    walk(x)
            elif isinstance(a, dict):
                for x in a.values():
                    walk(x)
        walk(self.args)
        walk(self.kwargs)
        return found

    def __repr__(self):
        return f"<{self.name}: {self.target or self.kind}>"


class Graph:
    """Nodes in a topological order; users computed once."""

    def __init__(self, nodes):
        self.nodes = list(nodes)
        for i, n in enumerate(self.nodes):
            n.index = i
        self.users = {id(n): [] for n in self.nodes}
        for n in self.nodes:
            for p in n.inputs():
                self.users[id(p)].append(n)
        self.hints = {}  # size name -> an example value, for comparing extents

    def users_of(self, n):
        return self.users[id(n)]
