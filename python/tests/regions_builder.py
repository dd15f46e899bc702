"""Graphs for loom.regions built by hand, each node's value computed by numpy as PyTorch eager
would (in float64, rounded to the node's dtype), so a region's loom fusion, run by loom's float64
reference, can be checked against the values its outputs must have."""
import numpy as np

from loom.regions import Graph, Node, tensor_type

NP_DTYPES = {"bool": np.bool_, "i32": np.int32, "i64": np.int64, "f16": np.float16, "f32": np.float32,
             "f64": np.float64}
LOOM_OF = {np.dtype(v): k for k, v in NP_DTYPES.items()}


def _axis(dims, rank):
    if dims is None or dims == []:
        return tuple(range(rank))
    return tuple(d % rank for d in ([dims] if isinstance(dims, int) else dims))


def _slice(x, dim=0, start=None, end=None, step=1):
    idx = [slice(None)] * x.ndim
    idx[dim] = slice(start, end, step)
    return x[tuple(idx)]


def _split(x, size, dim=0):
    sizes = size if isinstance(size, list) else [size] * ((x.shape[dim] + size - 1) // size)
    cuts = np.cumsum(sizes)[:-1]
    return tuple(np.split(x, cuts, axis=dim))


def _arg_extreme(fn, x, dim, keepdim):
    # numpy's argmax and argmin, as torch's, take the first extreme and a NaN as the extreme.
    r = fn(x.reshape(-1)) if dim is None else fn(x, axis=dim)
    if keepdim:
        r = np.reshape(r, [1] * x.ndim) if dim is None else np.expand_dims(r, dim)
    return np.asarray(r, np.int64)


def _scatter(x, dim, index, value):
    out = np.array(x, copy=True)
    np.put_along_axis(out, index, value, axis=dim)
    return out


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


NUMPY = {
    "aten.add.Tensor": lambda a, b, alpha=1: a + alpha * b,
    "aten.sub.Tensor": lambda a, b, alpha=1: a - alpha * b,
    "aten.mul.Tensor": lambda a, b: a * b,
    "aten.div.Tensor": lambda a, b: a / b,
    "aten.div.Tensor_mode": lambda a, b, rounding_mode=None: np.floor(a / b) if rounding_mode == "floor" else np.trunc(a / b),
    "aten.maximum.default": np.maximum,
    "aten.pow.Tensor_Scalar": lambda a, b: a ** b,
    "aten.relu.default": lambda x: np.maximum(x, 0),
    "aten.neg.default": lambda x: -x,
    "aten.exp.default": np.exp,
    "aten.log.default": np.log,
    "aten.rsqrt.default": lambda x: 1 / np.sqrt(x),
    "aten.sigmoid.default": _sigmoid,
    "aten.tanh.default": np.tanh,
    "aten.silu.default": lambda x: x * _sigmoid(x),
    "aten.gt.Scalar": lambda a, b: a > b,
    "aten.lt.Tensor": lambda a, b: a < b,
    "aten.logical_not.default": np.logical_not,
    "aten.where.self": np.where,
    "aten.clamp.default": lambda x, min=None, max=None: np.clip(x, min, max),
    "aten.threshold_backward.default": lambda g, x, t: np.where(x <= t, 0, g),
    "aten.sigmoid_backward.default": lambda g, y: g * y * (1 - y),
    "prims.convert_element_type.default": lambda x, dtype: x,
    "aten.clone.default": lambda x: x,
    "aten.sum.dim_IntList": lambda x, dim, keepdim=False: x.sum(axis=_axis(dim, x.ndim), keepdims=keepdim),
    "aten.sum.default": lambda x: x.sum(),
    "aten.mean.dim": lambda x, dim, keepdim=False: x.mean(axis=_axis(dim, x.ndim), keepdims=keepdim),
    "aten.amax.default": lambda x, dim=(), keepdim=False: x.max(axis=_axis(list(dim), x.ndim), keepdims=keepdim),
    "aten.gather.default": lambda x, dim, index: np.take_along_axis(x, index, axis=dim),
    "aten.scatter.value": lambda x, dim, index, value: _scatter(x, dim, index, value),
    "aten.index_select.default": lambda x, dim, index: np.take(x, index, axis=dim),
    "aten.argmax.default": lambda x, dim=None, keepdim=False: _arg_extreme(np.argmax, x, dim, keepdim),
    "aten.argmin.default": lambda x, dim=None, keepdim=False: _arg_extreme(np.argmin, x, dim, keepdim),
    "aten.var_mean.correction": lambda x, dim, correction=1, keepdim=False: (
        x.var(axis=_axis(dim, x.ndim), ddof=correction, keepdims=keepdim),
        x.mean(axis=_axis(dim, x.ndim), keepdims=keepdim)),
    "getitem": lambda t, i: t[i],
    "aten.view.default": lambda x, shape: x.reshape(shape),
    "aten.permute.default": lambda x, dims: np.transpose(x, dims),
    "aten.expand.default": lambda x, size: np.broadcast_to(x, [s if s != -1 else x.shape[i - len(size) + x.ndim]
                                                                for i, s in enumerate(size)]),
    "aten.unsqueeze.default": lambda x, dim: np.expand_dims(x, dim),
    "aten.squeeze.dim": lambda x, dim: np.squeeze(x, dim) if x.shape[dim] == 1 else x,
    "aten.slice.Tensor": _slice,
    "aten.select.int": lambda x, dim, index: np.take(x, index, axis=dim),
    "aten.split.Tensor": _split,
    "aten.cat.default": lambda xs, dim=0: np.concatenate(xs, axis=dim),
    "aten.full.default": lambda size, value, dtype=None: np.full(size, value),
    "aten.scalar_tensor.default": lambda value, dtype=None: np.asarray(value),
    "aten.ne.Scalar": lambda a, b: a != b,
    "aten.arange.start_step": lambda a, b, c=1, dtype=None: np.arange(a, b, c),
    "aten.mm.default": lambda a, b: a @ b,
}


class Builder:
    """g.input(name, array, shape=None), g.op(target, *args, dtype=None, shape=None, **kwargs),
    g.output(*nodes); then g.graph() and g.values (node name -> numpy value)."""

    def __init__(self, sizes=None):
        self.nodes, self.values, self.sizes = [], {}, dict(sizes or {})

    def input(self, name, array, shape=None):
        array = np.asarray(array)
        node = Node(name, "input", out=tensor_type(LOOM_OF[array.dtype], shape or list(array.shape)))
        self.nodes.append(node)
        self.values[name] = array
        return node

    def _value(self, a):
        if isinstance(a, Node):
            v = self.values[a.name]
            if isinstance(v, tuple):
                return tuple(x.astype(np.float64) if x.dtype.kind == "f" else x for x in v)
            return v.astype(np.float64) if v.dtype.kind == "f" else v
        if isinstance(a, (list, tuple)):
            return type(a)(self._value(x) for x in a)
        return a

    def op(self, target, *args, dtype=None, shape=None, **kwargs):
        got = NUMPY[target](*[self._value(a) for a in args], **kwargs)
        if "dtype" in kwargs and dtype is None:
            dtype = kwargs["dtype"]
        name = f"{target.split('.')[1] if '.' in target else target}_{len(self.nodes)}"
        if isinstance(got, tuple):
            dts = [self._dtype(args, g, dtype) for g in got]
            vals = tuple(np.asarray(g).astype(NP_DTYPES[d]) for g, d in zip(got, dts))
            out = tuple(tensor_type(d, list(v.shape)) for d, v in zip(dts, vals))
        else:
            d = self._dtype(args, got, dtype)
            vals = np.asarray(got).astype(NP_DTYPES[d])
            out = tensor_type(d, shape or list(vals.shape))
        node = Node(name, "op", target, tuple(args), kwargs, out)
        self.nodes.append(node)
        self.values[name] = vals
        return node

    def _dtype(self, args, got, dtype):
        if dtype:
            return dtype
        if np.asarray(got).dtype == np.bool_:
            return "bool"
        flat = [a for a in args if isinstance(a, Node)] + [x for a in args if isinstance(a, list) for x in a
                                                            if isinstance(x, Node)]
        dts = [a.out if not isinstance(a.out, tuple) else a.out[0] for a in flat]
        return dts[0].dtype if dts else LOOM_OF[np.asarray(got).dtype]

    def output(self, *nodes):
        self.nodes.append(Node("output", "output", args=(list(nodes),)))

    def graph(self):
        g = Graph(self.nodes)
        g.hints = dict(self.sizes)
        return g
