"""aten's reductions, views and creation ops as loom ops. Views follow loom's rules: a reshape
splits or merges neighbouring dims, a slice steps by 1, and every size-1 axis is a broadcast axis."""
from .emit import BCAST, Unsupported, Val, compute_dtype, number_text
from .extent import Extent
from .graph import FLOATS, Node


def _dims(dims, rank):
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    return sorted({d % rank if rank else 0 for d in dims})


def _arg(node, i, key, default=None):
    if key in node.kwargs:
        return node.kwargs[key]
    return node.args[i] if len(node.args) > i else default


def _reduced(em, x, dims, keepdim, dtype, extra=""):
    v = em.cast(em.value(x), dtype)
    if v.rank == 0:
        raise Unsupported("a reduction of a scalar")
    if any(v.axes[d] == BCAST and v.shape[d] != 1 for d in dims):
        v = em.dense(v)
    axes = [BCAST if i in dims else a for i, a in enumerate(v.axes)] if keepdim else \
        [a for i, a in enumerate(v.axes) if i not in dims]
    attrs = f"dims=[{', '.join(map(str, dims))}]{extra}, keepdim={'true' if keepdim else 'false'}"
    return v, axes, attrs


def reduction(op):
    def emit(em, node):
        x = node.args[0]
        if not isinstance(x, Node):
            raise Unsupported("a reduction of a number")
        cd = compute_dtype(node.out.dtype)
        if cd == "bool" or (op == "mean" and cd not in FLOATS):
            raise Unsupported(f"`{op}` to {node.out.dtype}")
        dims = _dims(_arg(node, 1, "dim"), x.out.rank)
        keepdim = bool(_arg(node, 2, "keepdim", False))
        v, axes, attrs = _reduced(em, x, dims, keepdim, cd)
        return em.emit(node.name, f"{op}({v.name}, {attrs})", cd, axes)
    return emit


def arg_reduction(op):
    """argmax / argmin along one dim, or over every element (dim None: of x flattened)."""
    def emit(em, node):
        x = node.args[0]
        if not isinstance(x, Node) or x.out.dtype == "bool":
            raise Unsupported(f"`{op}` of a {'number' if not isinstance(x, Node) else 'bool tensor'}")
        v = em.value(x)
        dim, keepdim = _arg(node, 1, "dim"), bool(_arg(node, 2, "keepdim", False))
        if v.rank == 0:
            raise Unsupported(f"`{op}` of a scalar")
        if dim is None:
            numel = Extent(1)
            for e in v.shape:
                numel = numel * e
            v = reshape_to(em, v, [numel], f"{node.name}_flat")
            d = 0
        else:
            d = dim % v.rank
        if v.axes[d] == BCAST and v.shape[d] != 1:
            v = em.dense(v)
        axes = [BCAST if i == d else a for i, a in enumerate(v.axes)] if keepdim else \
            [a for i, a in enumerate(v.axes) if i != d]
        if dim is None and keepdim:
            axes = [BCAST] * x.out.rank
        out = em.emit(node.name if not (dim is None and keepdim) else f"{node.name}_1",
                      f"{op}({v.name}, dim={d}, keepdim={'true' if keepdim and dim is not None else 'false'})",
                      "i64", axes if not (dim is None and keepdim) else [])
        if dim is None and keepdim:
            for i in range(x.out.rank):
                out = em.emit(f"{node.name}_u", f"unsqueeze({out.name}, dim={i})", "i64", [BCAST] * (i + 1))
        return out
    return emit


# loom picks an element as a masked reduction over the dim, so a gather's work is the picks times
# the dim: a few picks a position (a target logit) are loom's, an embedding lookup is aten's.
MOST_PICKS = 16


def _few(extent):
    e = Extent.of(extent)
    return e.is_const and e.coef <= MOST_PICKS


def gather(em, node):
    """torch.gather(x, dim, index): an index of x's rank and extents outside dim (torch also
    takes smaller ones, which pick from x's start: left to aten)."""
    x, dim, index = node.args[0], node.args[1], _arg(node, 2, "index")
    if not isinstance(x, Node) or not isinstance(index, Node):
        raise Unsupported("`gather` of a number")
    v, i = em.dense(em.value(x)), em.value(index)
    if v.rank == 0 or i.rank != v.rank:
        raise Unsupported("`gather` of a scalar, or with an index of another rank")
    d = dim % v.rank
    if any(k != d and a != b for k, (a, b) in enumerate(zip(v.shape, i.shape))):
        raise Unsupported("`gather` with an index smaller than x outside dim")
    if not _few(i.shape[d]):
        raise Unsupported(f"`gather` of {i.shape[d]} elements a position (loom takes up to {MOST_PICKS})")
    return em.emit(node.name, f"gather({v.name}, {i.name}, dim={d})", v.dtype,
                   [i.axes[k] if k == d else v.axes[k] for k in range(v.rank)])


def index_select(em, node):
    x, dim, index = node.args[0], node.args[1], node.args[2]
    if not isinstance(x, Node) or not isinstance(index, Node):
        raise Unsupported("`index_select` of a number")
    v, i = em.dense(em.value(x)), em.value(index)
    if v.rank == 0 or i.rank != 1:
        raise Unsupported("`index_select` of a scalar, or with an index that is not 1-d")
    d = dim % v.rank
    if not _few(i.shape[0]):
        raise Unsupported(f"`index_select` of {i.shape[0]} slices (loom takes up to {MOST_PICKS})")
    return em.emit(node.name, f"index_select({v.name}, {i.name}, dim={d})", v.dtype,
                   [i.axes[0] if k == d else v.axes[k] for k in range(v.rank)])


def scatter(em, node):
    """torch.scatter(x, dim, index, value or src) of one element along dim for every other
    position (an index of x's rank, extent 1 along dim, x's extents elsewhere: nll_loss's backward
    writes its -1 so): where(iota along dim == index, value, x). Other scatters are aten's."""
    x, dim, index = node.args[0], node.args[1], node.args[2]
    other = node.args[3] if len(node.args) > 3 else node.kwargs.get("value", node.kwargs.get("src"))
    if node.kwargs.get("reduce") is not None or not isinstance(x, Node) or not isinstance(index, Node):
        raise Unsupported("`scatter` with a reduce, or of a number")
    v, i = em.dense(em.value(x)), em.value(index)
    d = dim % v.rank if v.rank else 0
    if v.rank == 0 or i.rank != v.rank or i.shape[d] != 1 or any(
            k != d and i.shape[k] != v.shape[k] for k in range(v.rank)):
        raise Unsupported("`scatter` of more than one element along dim")
    shape = ", ".join(str(e) for e in v.shape)
    at = em.emit(f"{node.name}_at", f"iota(dtype=i64, shape=[{shape}], dim={d})", "i64", list(v.shape))
    hit = em.pointwise(f"{node.name}_hit", "eq", [at, em.cast(i, "i64")], "bool")
    src = em.cast(em.value(other), v.dtype) if isinstance(other, Node) else em.operand(other, v.dtype)
    return em.pointwise(node.name, "where", [hit, src, v], v.dtype)


def _correction(node):
    c = node.kwargs.get("correction")
    if c is None and "unbiased" in node.kwargs:
        c = 1 if node.kwargs["unbiased"] else 0
    c = 1 if c is None else c
    if isinstance(c, float) and c.is_integer():
        c = int(c)
    if not isinstance(c, (int, float)) or c < 0:
        raise Unsupported(f"correction={c!r}")
    return c


def var_mean(em, node, results=("var", "mean")):
    x = node.args[0]
    cd = compute_dtype(x.out.dtype)
    if cd not in FLOATS:
        raise Unsupported("var_mean of a non-float")
    dims = _dims(_arg(node, 1, "dim"), x.out.rank)
    keepdim = bool(node.kwargs.get("keepdim", False))
    v, axes, attrs = _reduced(em, x, dims, keepdim, cd,
                              f", correction={number_text(_correction(node), 'f64')}")
    var, mean, _ = em.emit_many([f"{node.name}_var", f"{node.name}_mean", f"{node.name}_n"],
                                f"var_mean({v.name}, {attrs})", [(cd, axes), (cd, axes), ("i64", axes)])
    return (var, mean) if results == ("var", "mean") else var


def var(em, node):
    return var_mean(em, node, results=("var",))


def getitem(em, node):
    src, i = node.args
    got = em.vals.get(id(src)) if isinstance(src, Node) else None
    if not isinstance(got, tuple):
        raise Unsupported("a result of an op loom does not run")
    return got[i]


def _groups(src, dst, hints):
    """Pairs of (source dims, target dims) whose products match, or None."""
    groups, i, j = [], 0, 0
    while i < len(src) or j < len(dst):
        if i == len(src) or j == len(dst):
            return None
        gi, gj = [i], [j]
        pa, pb = src[i], dst[j]
        i, j = i + 1, j + 1
        while pa.value(hints) != pb.value(hints):
            if pa.value(hints) < pb.value(hints):
                if i == len(src):
                    return None
                pa, gi = pa * src[i], gi + [i]
                i += 1
            else:
                if j == len(dst):
                    return None
                pb, gj = pb * dst[j], gj + [j]
                j += 1
        if pa != pb or (len(gi) > 1 and len(gj) > 1):
            return None
        groups.append((gi, gj))
    return groups


def reshape_to(em, v, shape, name):
    """v as `shape` through loom's reshape: broadcast axes squeezed first, size-1 dims unsqueezed
    after, the rest split or merged."""
    v = em.dense(v)
    src = [e for e in v.shape if e != 1]
    dst = [e for e in shape if e != 1]
    if any(e.value(em.hints) == 0 for e in src + dst):
        raise Unsupported("a reshape of an empty tensor")
    if _groups(src, dst, em.hints) is None:
        raise Unsupported(f"a reshape from {list(v.shape)} to {list(shape)} that is no split or merge of dims")
    ones = [i for i, e in enumerate(v.shape) if e == 1]
    if ones:
        v = em.emit(f"{name}_s", f"squeeze({v.name}, dims=[{', '.join(map(str, ones))}])", v.dtype, src)
    if src != dst:
        v = em.emit(f"{name}_r", f"reshape({v.name}, shape=[{', '.join(map(str, dst))}])", v.dtype, dst)
    for i, e in enumerate(shape):
        if e == 1:
            v = em.emit(f"{name}_u", f"unsqueeze({v.name}, dim={i})", v.dtype, v.axes[:i] + [BCAST] + v.axes[i:])
    return v


def view(em, node):
    return reshape_to(em, em.value(node.args[0]), node.out.shape, node.name)


def expand(em, node):
    v = em.align(em.value(node.args[0]), node.out.rank)
    for a, s in zip(v.axes, node.out.shape):
        if a != BCAST and a != s:
            raise Unsupported("an expand of a dim that is not 1")
    return Val(v.name, v.dtype, v.axes, node.out.shape)


def permute(em, node):
    v = em.value(node.args[0])
    return _permuted(em, v, [d % v.rank for d in _arg(node, 1, "dims")], node.name)


def _permuted(em, v, order, name):
    if order == list(range(v.rank)):
        return v
    return em.emit(name, f"permute({v.name}, order=[{', '.join(map(str, order))}])", v.dtype,
                   [v.axes[d] for d in order], [v.shape[d] for d in order])


def transpose(em, node):
    v = em.value(node.args[0])
    if v.rank < 2:
        return v
    a, b = (_arg(node, 1, "dim0", 0) % v.rank, _arg(node, 2, "dim1", 1) % v.rank) if len(node.args) > 1 else (0, 1)
    order = list(range(v.rank))
    order[a], order[b] = order[b], order[a]
    return _permuted(em, v, order, node.name)


def squeeze(em, node):
    v = em.value(node.args[0])
    dims = _arg(node, 1, "dim")
    dims = range(v.rank) if dims is None else _dims(dims, v.rank)
    drop = [d for d in dims if v.shape[d] == 1]
    if not drop:
        return v
    return em.emit(node.name, f"squeeze({v.name}, dims=[{', '.join(map(str, drop))}])", v.dtype,
                   [a for i, a in enumerate(v.axes) if i not in drop], [s for i, s in enumerate(v.shape) if i not in drop])


def unsqueeze(em, node):
    v = em.value(node.args[0])
    d = _arg(node, 1, "dim") % (v.rank + 1)
    return em.emit(node.name, f"unsqueeze({v.name}, dim={d})", v.dtype, v.axes[:d] + [BCAST] + v.axes[d:],
                   v.shape[:d] + [Extent(1)] + v.shape[d:])


def slice_of(em, v, dim, start, stop, name):
    v = em.dense(v)
    starts = ["0"] * v.rank
    stops = [str(s) for s in v.shape]
    starts[dim], stops[dim] = str(start), str(stop)
    axes = list(v.axes)
    axes[dim] = stop - start
    shape = list(v.shape)
    shape[dim] = stop - start
    out = em.emit(name, f"slice({v.name}, starts=[{', '.join(starts)}], stops=[{', '.join(stops)}])", v.dtype, axes, shape)
    return em.normalized(out)


def _slice_bounds(size, start, end, hints):
    """Start and stop of a slice as Extents: Python's clamping and negative bounds, by the size."""
    n = size.value(hints)

    def place(b, default):
        if b is None:
            return default
        if not isinstance(b, int):
            raise Unsupported("a slice bound known only at run time")
        if b < 0:
            b += n
        b = min(max(b, 0), n)
        if b == n:
            return size
        if not size.is_const and b != 0:
            raise Unsupported("a slice at a constant offset into a dim of run-time size")
        return Extent(b)
    lo, hi = place(start, Extent(0)), place(end, size)
    if lo.value(hints) >= hi.value(hints):
        raise Unsupported("an empty slice")
    return lo, hi


def slice_tensor(em, node):
    v = em.value(node.args[0])
    dim = _arg(node, 1, "dim", 0) % v.rank
    step = _arg(node, 4, "step", 1)
    if step != 1:
        raise Unsupported(f"a slice with step {step}")
    lo, hi = _slice_bounds(v.shape[dim], _arg(node, 2, "start"), _arg(node, 3, "end"), em.hints)
    if lo == 0 and hi == v.shape[dim]:
        return v
    return slice_of(em, v, dim, lo, hi, node.name)


def select(em, node):
    v = em.value(node.args[0])
    dim = _arg(node, 1, "dim") % v.rank
    index = _arg(node, 2, "index")
    lo, hi = _slice_bounds(v.shape[dim], index, (index + 1) if index != -1 else None, em.hints)
    s = slice_of(em, v, dim, lo, hi, f"{node.name}_sl")
    return em.emit(node.name, f"squeeze({s.name}, dims=[{dim}])", s.dtype,
                   s.axes[:dim] + s.axes[dim + 1:], s.shape[:dim] + s.shape[dim + 1:])


def split(em, node):
    v = em.value(node.args[0])
    dim = _arg(node, 2, "dim", 0) % v.rank
    size = v.shape[dim]
    parts, lo = [], Extent(0)
    for k, t in enumerate(node.out):
        hi = lo + t.shape[dim]
        parts.append(slice_of(em, v, dim, lo, hi, f"{node.name}_{k}") if (lo, hi) != (0, size) else v)
        lo = hi
    return tuple(parts)


def cat(em, node):
    pieces = [p for p in node.args[0]]
    dim = _arg(node, 1, "dim", 0) % node.out.rank
    cd = compute_dtype(node.out.dtype)
    vals = []
    for p in pieces:
        if not isinstance(p, Node) or p.out.rank != node.out.rank:
            raise Unsupported("a cat of tensors of other ranks")
        v = em.dense(em.cast(em.value(p), cd))
        if v.axes[dim] == BCAST:
            raise Unsupported("a cat of a size-1 piece")
        vals.append(v)
    axes = list(vals[0].axes)
    total = vals[0].shape[dim]
    for v in vals[1:]:
        if not total.same_sizes(v.shape[dim]):
            raise Unsupported("a cat of pieces whose sizes are not multiples of one size")
        total = total + v.shape[dim]
    axes[dim] = total
    return em.emit(node.name, f"concat({', '.join(v.name for v in vals)}, dim={dim})", cd, axes)


def _creation(em, node, body):
    if node.out.device != "cuda":
        raise Unsupported(f"a tensor made on {node.out.device}")
    cd = compute_dtype(node.out.dtype)
    shape = ", ".join(str(e) for e in node.out.shape)
    v = em.emit(node.name, body(cd, shape), cd, list(node.out.shape))
    return em.normalized(v)


def full(em, node):
    value = _arg(node, 1, "fill_value")
    if not isinstance(value, (bool, int, float)):
        raise Unsupported("a fill value known only at run time")
    if node.out.rank == 0:
        return em.const(value, compute_dtype(node.out.dtype))
    return _creation(em, node, lambda cd, shape: f"full(value={number_text(value, cd)}, dtype={cd}, shape=[{shape}])")


def scalar_tensor(em, node):
    value = node.args[0]
    if not isinstance(value, (bool, int, float)):
        raise Unsupported("a value known only at run time")
    return em.const(value, compute_dtype(node.out.dtype))


def arange(em, node, start=0, step=1):
    if node.out.rank != 1 or node.out.dtype == "bool":
        raise Unsupported("an arange loom cannot make")
    for b in (start, step):
        if not isinstance(b, (int, float)):
            raise Unsupported("an arange bound known only at run time")
    v = _creation(em, node, lambda cd, shape: f"iota(dtype={cd}, shape=[{shape}], dim=0)")
    cd = v.dtype
    if step != 1:
        v = em.pointwise(f"{node.name}_step", "mul", [v, em.const(step, cd)], cd)
    if start != 0:
        v = em.pointwise(f"{node.name}_start", "add", [v, em.const(start, cd)], cd)
    return v


def arange_end(em, node):
    return arange(em, node)


def arange_start(em, node):
    return arange(em, node, start=node.args[0], step=_arg(node, 2, "step", 1))


def iota(em, node):
    return arange(em, node, start=node.kwargs.get("start", 0), step=node.kwargs.get("step", 1))


_ENTRIES = (  # the function, and the aten ops it writes
    (var_mean, "aten.var_mean.correction aten.var_mean.dim"),
    (var, "aten.var.correction aten.var.dim"),
    (getitem, "getitem"),
    (view, "aten.view.default aten._unsafe_view.default aten.reshape.default"),
    (expand, "aten.expand.default"),
    (permute, "aten.permute.default"),
    (transpose, "aten.t.default aten.transpose.int"),
    (squeeze, "aten.squeeze.default aten.squeeze.dim aten.squeeze.dims"),
    (unsqueeze, "aten.unsqueeze.default"),
    (slice_tensor, "aten.slice.Tensor"),
    (select, "aten.select.int"),
    (split, "aten.split.Tensor aten.split_with_sizes.default"),
    (cat, "aten.cat.default"),
    (gather, "aten.gather.default"),
    (index_select, "aten.index_select.default"),
    (scatter, "aten.scatter.value aten.scatter.src"),
    (full, "aten.full.default aten.full_like.default"),
    (scalar_tensor, "aten.scalar_tensor.default"),
    (arange_end, "aten.arange.default"),
    (arange_start, "aten.arange.start aten.arange.start_step"),
    (iota, "prims.iota.default"),
)


def table():
    t = {f"aten.{name}.{overload}": reduction(name) for name in ("sum", "mean", "amax", "amin")
         for overload in ("default", "dim_IntList", "dim")}
    t.update({f"aten.{name}.default": arg_reduction(name) for name in ("argmax", "argmin")})
    t.update((target, fn) for fn, targets in _ENTRIES for target in targets.split())
    return t


VIEWS = {"aten.view.default", "aten._unsafe_view.default", "aten.reshape.default", "aten.expand.default",
         "aten.permute.default", "aten.t.default", "aten.transpose.int", "aten.squeeze.default", "aten.squeeze.dim",
         "aten.squeeze.dims", "aten.unsqueeze.default", "aten.slice.Tensor", "aten.select.int", "aten.split.Tensor",
         "aten.split_with_sizes.default"}
CREATIONS = {"aten.full.default", "aten.full_like.default", "aten.scalar_tensor.default", "aten.arange.default",
             "aten.arange.start", "aten.arange.start_step", "prims.iota.default"}
