"""aten's pointwise ops as loom ops: each entry writes one node into an Emitter and returns its
value. Operands are cast to the node's compute dtype (the result's, or for comparisons the dtype
PyTorch promotes the operands to) and broadcast as PyTorch broadcasts."""
from .emit import Unsupported, compute_dtype
from .graph import FLOATS, Node

_UNARY = {
    "neg": "neg", "abs": "abs", "relu": "relu", "exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2",
    "sqrt": "sqrt", "rsqrt": "rsqrt", "reciprocal": "reciprocal", "tanh": "tanh", "sigmoid": "sigmoid",
    "silu": "silu", "sin": "sin", "cos": "cos", "erf": "erf", "floor": "floor", "ceil": "ceil", "round": "round",
}
_FLOAT_ONLY = {"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "reciprocal", "tanh", "sigmoid", "silu", "sin", "cos",
               "erf", "floor", "ceil", "round", "gelu", "gelu_tanh"}
_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "maximum": "max", "minimum": "min",
           "remainder": "remainder", "pow": "pow", "logical_and": "and", "logical_or": "or",
           "bitwise_and": "and", "bitwise_or": "or"}
_COMPARE = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}

_CATEGORY = {"bool": 0, "i32": 1, "i64": 1, "f16": 2, "bf16": 2, "f32": 2, "f64": 2}
_ORDER = {"bool": 0, "i32": 1, "i64": 2, "f16": 3, "bf16": 3, "f32": 4, "f64": 5}


def _join(a, b):
    if {a, b} == {"f16", "bf16"}:
        return "f32"
    return a if _ORDER[a] >= _ORDER[b] else b


def promoted(args):
    """The dtype PyTorch computes an op of these operands in (tensors of rank > 0 first, then
    rank-0 tensors, then Python numbers, each tier counting only where it raises the category)."""
    tiers = [[], [], []]
    for a in args:
        if isinstance(a, Node):
            tiers[0 if a.out.rank else 1].append(a.out.dtype)
        elif isinstance(a, bool):
            tiers[2].append("bool")
        elif isinstance(a, int):
            tiers[2].append("i64")
        elif isinstance(a, float):
            tiers[2].append("f32")
    result = None
    for tier in tiers:
        for dt in tier:
            if dt not in _CATEGORY:
                raise Unsupported(f"dtype {dt}")
        if not tier:
            continue
        top = max(_CATEGORY[d] for d in tier)
        if result is None or top > _CATEGORY[result]:
            best = None
            for d in tier:
                if _CATEGORY[d] == top:
                    best = d if best is None else _join(best, d)
            result = best
        elif top == _CATEGORY[result] and tier is tiers[0]:
            result = _join(result, max(tier, key=_ORDER.get))
    return result


def unary(op):
    def emit(em, node):
        r = node.out.dtype
        cd = compute_dtype(r)
        if op in _FLOAT_ONLY and cd not in FLOATS:
            raise Unsupported(f"`{op}` of {r} (loom's takes floats)")
        return em.pointwise(node.name, op, [em.operand(node.args[0], cd)], cd)
    return emit


def gelu(em, node):
    approx = node.kwargs.get("approximate", node.args[1] if len(node.args) > 1 else "none")
    op = {"none": "gelu", "tanh": "gelu_tanh"}.get(approx)
    if op is None:
        raise Unsupported(f"gelu approximate={approx!r}")
    return unary(op)(em, node)


def predicate(op):
    def emit(em, node):
        x = node.args[0]
        if not isinstance(x, Node) or x.out.dtype not in FLOATS:
            raise Unsupported(f"`{op}` of a non-float")
        return em.pointwise(node.name, op, [em.operand(x, compute_dtype(x.out.dtype))], "bool")
    return emit


def binary(op, alpha_of=False):
    def emit(em, node):
        a, b = node.args[0], node.args[1]
        cd = compute_dtype(node.out.dtype)
        if op in ("and", "or"):
            if cd not in ("bool", "i32", "i64"):
                raise Unsupported(f"`{op}` of {cd}")
            if cd == "bool":  # logical_and of numbers: each nonzero is true
                return em.pointwise(node.name, op, [_truth(em, a), _truth(em, b)], "bool")
        if cd == "bool":
            raise Unsupported(f"`{op}` of bools")
        if op == "pow" and cd not in FLOATS:
            raise Unsupported("pow of integers")
        if op == "pow" and not isinstance(b, Node) and b == 2:
            va = em.operand(a, cd)
            return em.pointwise(node.name, "mul", [va, va], cd)
        va = em.operand(a, cd)
        vb = em.operand(b, cd)
        if alpha_of:
            vb = _scaled(em, node, vb)
        return em.pointwise(node.name, op, [va, vb], cd)
    return emit


def _scaled(em, node, v):
    """v times the node's `alpha` (add, sub, rsub), where it has one other than 1."""
    alpha = node.kwargs.get("alpha", 1)
    if alpha == 1:
        return v
    return em.pointwise(f"{node.name}_alpha", "mul", [v, em.operand(alpha, v.dtype)], v.dtype)


def _truth(em, arg):
    if isinstance(arg, Node) and arg.out.dtype == "bool":
        return em.value(arg)
    if not isinstance(arg, Node):
        return em.const(bool(arg), "bool")
    v = em.operand(arg, compute_dtype(arg.out.dtype))
    return em.pointwise(f"{v.name}_nz", "ne", [v, em.const(0, v.dtype)], "bool")


def div_mode(em, node):
    mode = node.kwargs.get("rounding_mode", node.args[2] if len(node.args) > 2 else None)
    cd = compute_dtype(node.out.dtype)
    if mode is None:
        return binary("div")(em, node)
    if cd not in FLOATS:
        if mode == "trunc":
            return binary("div")(em, node)
        raise Unsupported("floor division of integers")
    q = em.pointwise(f"{node.name}_q", "div", [em.operand(node.args[0], cd), em.operand(node.args[1], cd)], cd)
    if mode == "floor":
        return em.pointwise(node.name, "floor", [q], cd)
    if mode == "trunc":
        return _trunc(em, q, node.name)
    raise Unsupported(f"rounding_mode={mode!r}")


def _trunc(em, q, name):
    zero = em.const(0, q.dtype)
    neg = em.pointwise(f"{name}_neg", "lt", [q, zero], "bool")
    return em.pointwise(name, "where", [neg, em.pointwise(f"{name}_c", "ceil", [q], q.dtype),
                                        em.pointwise(f"{name}_f", "floor", [q], q.dtype)], q.dtype)


def compare(op):
    def emit(em, node):
        a, b = node.args[0], node.args[1]
        cd = compute_dtype(promoted([a, b]))
        return em.pointwise(node.name, op, [em.operand(a, cd), em.operand(b, cd)], "bool")
    return emit


def where(em, node):
    cond, a, b = node.args[:3]
    if not isinstance(cond, Node) or cond.out.dtype != "bool":
        raise Unsupported("where's condition is no bool tensor")
    cd = compute_dtype(node.out.dtype)
    return em.pointwise(node.name, "where", [em.value(cond), em.operand(a, cd), em.operand(b, cd)], cd)


def logical_not(em, node):
    return em.pointwise(node.name, "not", [_truth(em, node.args[0])], "bool")


def bitwise_not(em, node):
    if node.out.dtype != "bool":
        raise Unsupported("bitwise not of integers")
    return logical_not(em, node)


def clamp(em, node):
    lo = node.kwargs.get("min", node.args[1] if len(node.args) > 1 else None)
    hi = node.kwargs.get("max", node.args[2] if len(node.args) > 2 else None)
    return _clamp(em, node, lo, hi)


def clamp_min(em, node):
    return _clamp(em, node, node.args[1], None)


def clamp_max(em, node):
    return _clamp(em, node, None, node.args[1])


def _clamp(em, node, lo, hi):
    cd = compute_dtype(node.out.dtype)
    if cd == "bool":
        raise Unsupported("clamp of bools")
    v = em.operand(node.args[0], cd)
    if lo is not None:
        v = em.pointwise(f"{node.name}_lo" if hi is not None else node.name, "max", [v, em.operand(lo, cd)], cd)
    if hi is not None:
        v = em.pointwise(node.name, "min", [v, em.operand(hi, cd)], cd)
    return v


def rsub(em, node):
    cd = compute_dtype(node.out.dtype)
    x = _scaled(em, node, em.operand(node.args[0], cd))
    return em.pointwise(node.name, "sub", [em.operand(node.args[1], cd), x], cd)


def sigmoid_backward(em, node):
    cd = compute_dtype(node.out.dtype)
    g, y = em.operand(node.args[0], cd), em.operand(node.args[1], cd)
    one_minus = em.pointwise(f"{node.name}_1my", "sub", [em.const(1, cd), y], cd)
    gy = em.pointwise(f"{node.name}_gy", "mul", [g, y], cd)
    return em.pointwise(node.name, "mul", [gy, one_minus], cd)


def tanh_backward(em, node):
    cd = compute_dtype(node.out.dtype)
    g, y = em.operand(node.args[0], cd), em.operand(node.args[1], cd)
    yy = em.pointwise(f"{node.name}_yy", "mul", [y, y], cd)
    one_minus = em.pointwise(f"{node.name}_1myy", "sub", [em.const(1, cd), yy], cd)
    return em.pointwise(node.name, "mul", [g, one_minus], cd)


def threshold_backward(em, node):
    g, x, threshold = node.args[:3]
    cd = compute_dtype(node.out.dtype)
    xd = compute_dtype(promoted([x, threshold]))
    below = em.pointwise(f"{node.name}_le", "le", [em.operand(x, xd), em.operand(threshold, xd)], "bool")
    return em.pointwise(node.name, "where", [below, em.const(0, cd), em.operand(g, cd)], cd)


def cast(em, node):
    """convert_element_type and _to_copy: a rounding to the target dtype, then back to compute."""
    x = node.args[0]
    device = node.kwargs.get("device")
    if device is not None and not str(device).startswith("cuda"):
        raise Unsupported(f"a copy to {device}")
    r = node.out.dtype
    if not isinstance(x, Node):
        raise Unsupported("a cast of a number")
    v = em.value(x)
    if v.dtype == compute_dtype(r) and x.out.dtype == r:
        return v
    if r == "bool":
        src = em.cast(v, compute_dtype(x.out.dtype))
        return em.pointwise(node.name, "ne", [src, em.const(0, src.dtype)], "bool")
    rounded = em.cast(v, r)
    return em.cast(rounded, compute_dtype(r))


def identity(em, node):
    return em.value(node.args[0])


_ENTRIES = (  # the function, and the aten ops it writes
    (gelu, "aten.gelu.default"),
    (predicate("isnan"), "aten.isnan.default"),
    (predicate("isinf"), "aten.isinf.default"),
    (div_mode, "aten.div.Tensor_mode aten.div.Scalar_mode"),
    (where, "aten.where.self aten.where.ScalarSelf aten.where.ScalarOther aten.where.Scalar"),
    (logical_not, "aten.logical_not.default"),
    (bitwise_not, "aten.bitwise_not.default"),
    (clamp, "aten.clamp.default aten.clamp.Tensor"),
    (clamp_min, "aten.clamp_min.default"),
    (clamp_max, "aten.clamp_max.default"),
    (rsub, "aten.rsub.Scalar aten.rsub.Tensor"),
    (sigmoid_backward, "aten.sigmoid_backward.default"),
    (tanh_backward, "aten.tanh_backward.default"),
    (threshold_backward, "aten.threshold_backward.default"),
    (cast, "prims.convert_element_type.default aten._to_copy.default"),
    (identity, "aten.clone.default aten.alias.default aten.lift_fresh_copy.default aten.detach.default"),
)


def table():
    t = {f"aten.{name}.default": unary(op) for name, op in _UNARY.items()}
    for name, op in _BINARY.items():
        for overload in ("Tensor", "Scalar", "Tensor_Tensor", "Tensor_Scalar", "default"):
            t[f"aten.{name}.{overload}"] = binary(op, name in ("add", "sub"))
    for name, op in _COMPARE.items():
        t[f"aten.{name}.Tensor"] = t[f"aten.{name}.Scalar"] = compare(op)
    t.update((target, fn) for fn, targets in _ENTRIES for target in targets.split())
    return t


IDENTITIES = {f"aten.{n}.default" for n in ("clone", "alias", "lift_fresh_copy", "detach")}
