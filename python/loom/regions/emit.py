"""The text of one region's loom fusion, written op by op: the region's inputs as they are met,
values kept in their compute dtype (f16 and bf16 as f32 inside, as the framework's own fused
kernels do), operands cast and broadcast the way the framework promotes and broadcasts them, and a
type written on every line so that a wrong guess of loom's typing fails at its line."""
import math

from .extent import Extent
from .graph import FLOATS, Node, Sym

BCAST = "1b"  # a broadcast axis: extent 1, stretched where it meets another extent


class Unsupported(Exception):
    """A node loom cannot run as written; the message says why, for explain()."""


def compute_dtype(dt):
    return "f32" if dt in ("f16", "bf16") else dt


class Val:
    """A loom value: its name, dtype and axes (Extents, or BCAST), and the node's logical shape
    (which differs from the axes where an expand left a broadcast axis unstretched)."""
    __slots__ = ("name", "dtype", "axes", "shape")

    def __init__(self, name, dtype, axes, shape=None):
        self.name, self.dtype, self.axes = name, dtype, list(axes)
        self.shape = list(shape) if shape is not None else [Extent(1) if a == BCAST else a for a in self.axes]

    @property
    def rank(self):
        return len(self.axes)

    def type_text(self):
        return f"{self.dtype}[{', '.join(str(a) for a in self.axes)}]"


def axes_of(shape):
    """loom's axes of a logical shape: every size 1 a broadcast axis, as the framework reads it."""
    return [BCAST if e == 1 else e for e in shape]


def number_text(v, dtype):
    if isinstance(v, bool):
        v = int(v)
    if dtype == "bool":
        return "1" if v else "0"
    if dtype in FLOATS:
        v = float(v)
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, float):
        if not v.is_integer():
            raise Unsupported(f"the number {v} as {dtype}")
        v = int(v)
    return str(v)


class Emitter:
    """One region's fusion text. `value(node)` is a node's value: its own if the region has already
    written it, else a new input of the node's type."""

    def __init__(self, name="region", hints=None):
        self.name = name
        self.hints = dict(hints or {})  # size name -> an example value, to compare extents
        self.inputs = []  # (node, input name)
        self.decls = []
        self.lines = []
        self.vals = {}  # id(node) -> Val or tuple of Vals
        self.outputs = []  # (output name, value name)
        self._casts = {}
        self._names = set()
        self.current = None  # the node being written: each value's origin, for loom's messages
        self.origin = {}

    def fresh(self, base):
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in str(base)) or "t"
        if not (base[0].isalpha() or base[0] == "_"):
            base = "v" + base
        name, k = base, 1
        while name in self._names or name in ("in", "out", "fusion", "alias", "true", "false", "none", "inf", "nan"):
            name, k = f"{base}_{k}", k + 1
        self._names.add(name)
        return name

    def value(self, node):
        v = self.vals.get(id(node))
        if v is None:
            t = node.out
            if t is None or isinstance(t, tuple):
                raise Unsupported(f"`{node.name}` is no tensor")
            why = t.problem()
            if why:
                raise Unsupported(f"its input `{node.name}` is {why}")
            v = Val(self.fresh(node.name), t.dtype, axes_of(t.shape), t.shape)
            self.inputs.append((node, v.name))
            self.decls.append(f"  in {v.name}: {v.type_text()}")
            self.vals[id(node)] = v
        return v

    def emit(self, base, call, dtype, axes, shape=None):
        v = Val(self.fresh(base), dtype, axes, shape)
        self.origin[v.name] = self.current
        self.lines.append(f"  {v.name}: {v.type_text()} = {call}")
        return v

    def emit_many(self, bases, call, types):
        vals = [Val(self.fresh(b), dt, axes) for b, (dt, axes) in zip(bases, types)]
        self.origin.update((v.name, self.current) for v in vals)
        self.lines.append(f"  {', '.join(f'{v.name}: {v.type_text()}' for v in vals)} = {call}")
        return vals

    def cast(self, v, dtype):
        if v.dtype == dtype:
            return v
        key = (v.name, dtype)
        if key not in self._casts:
            self._casts[key] = self.emit(f"{v.name}_{dtype}", f"cast({v.name}, to={dtype})", dtype, v.axes, v.shape)
        return self._casts[key]

    def const(self, number, dtype):
        return self.emit("c", f"const({number_text(number, dtype)}, dtype={dtype})", dtype, [])

    def operand(self, arg, dtype):
        """A node's value or a number, in `dtype`."""
        if isinstance(arg, Node):
            return self.cast(self.value(arg), dtype)
        if isinstance(arg, Sym):
            raise Unsupported("a scalar known only at run time")
        if isinstance(arg, (bool, int, float)):
            return self.const(arg, dtype)
        raise Unsupported(f"an operand {arg!r}")

    def align(self, v, rank):
        """v with leading broadcast axes up to `rank` (a rank-0 value stretches as it is)."""
        if v.rank == 0 or v.rank == rank:
            return v
        new = ["true"] * (rank - v.rank) + ["false"] * v.rank
        return self.emit(f"{v.name}_b", f"broadcast({v.name}, new=[{', '.join(new)}])", v.dtype,
                         [BCAST] * (rank - v.rank) + v.axes, [Extent(1)] * (rank - v.rank) + v.shape)

    def pointwise(self, base, op, vals, dtype, attrs=""):
        rank = max(v.rank for v in vals)
        vals = [self.align(v, rank) for v in vals]
        axes, shape = [], []
        for i in range(rank):
            ax = [v.axes[i] for v in vals if v.rank]
            got = [a for a in ax if a != BCAST]
            axes.append(got[0] if got else BCAST)
            shape.append(max((v.shape[i] for v in vals if v.rank), key=lambda e: e != 1, default=Extent(1)))
        args = ", ".join(v.name for v in vals) + (f", {attrs}" if attrs else "")
        return self.emit(base, f"{op}({args})", dtype, axes, shape)

    def dense(self, v):
        """v with every expanded axis stretched to its extent (a multiply by ones), for the ops that
        read a broadcast axis as extent 1: reductions, reshapes, slices, joins and outputs."""
        if all(a != BCAST or s == 1 for a, s in zip(v.axes, v.shape)):
            return v
        shape = ", ".join(str(s) for s in v.shape)
        ones = self.emit("ones", f"full(value=1, dtype={v.dtype}, shape=[{shape}])", v.dtype, v.shape)
        op = "and" if v.dtype == "bool" else "mul"
        return self.pointwise(f"{v.name}_d", op, [v, ones], v.dtype)

    def normalized(self, v):
        """v with each axis of extent 1 made a broadcast axis (squeezed and unsqueezed again)."""
        ones = [i for i, a in enumerate(v.axes) if a != BCAST and a == 1]
        if not ones:
            return v
        dims = ", ".join(str(i) for i in ones)
        rest = [a for i, a in enumerate(v.axes) if i not in ones]
        rest_shape = [s for i, s in enumerate(v.shape) if i not in ones]
        v = self.emit(f"{v.name}_s", f"squeeze({v.name}, dims=[{dims}])", v.dtype, rest, rest_shape)
        for i in ones:
            v = self.emit(f"{v.name}_u", f"unsqueeze({v.name}, dim={i})", v.dtype,
                          v.axes[:i] + [BCAST] + v.axes[i:], v.shape[:i] + [Extent(1)] + v.shape[i:])
        return v

    def output(self, node, dtype):
        """Makes node's value an output in `dtype`; returns its output name."""
        v = self.vals[id(node)]
        v = self.cast(self.dense(v), dtype)
        name = self.fresh(f"o_{node.name}")
        self.outputs.append((name, v.name))
        return name

    def text(self):
        outs = [f"  out {n} = {v}" for n, v in self.outputs]
        return "\n".join([f"fusion {self.name} {{", *self.decls, *self.lines, *outs, "}"]) + "\n"
