"""loom.regions on graphs built by hand: which nodes loom takes and why the others stay, regions
without cycles, and each region's fusion, run by loom's float64 reference, against the values
numpy gives its outputs (PyTorch's rules: promotion, broadcasting, views, keepdim)."""
import numpy as np
import pytest

import loom
from loom.regions import Extent, partition
from loom.regions.graph import Node, tensor_type
from regions_builder import Builder

rng = np.random.default_rng(7)
TOL = {"f16": 2e-3, "f32": 1e-5, "f64": 1e-12, "i32": 0, "i64": 0, "bool": 0}


def run(b, *outs, regions=None, left=()):
    """Partitions b's graph with `outs` its outputs; checks each region's reference run against
    numpy, the count of regions and the nodes left (their name prefixes); returns the plan."""
    b.output(*outs)
    g = b.graph()
    plan = partition(g)
    for r in plan.regions:
        fusion = loom.Fusion.from_text(r.text)
        got = fusion.eval(*[b.values[n.name] for n in r.inputs])
        for n, v in zip(r.outputs, got):
            want = b.values[n.name]
            assert v.shape == want.shape, (r.text, n)
            # the region keeps f16 values in f32 where eager rounds each op's result: f16's tolerance
            tol = max(TOL[d] for d in [n.out.dtype] + [i.out.dtype for i in r.inputs])
            np.testing.assert_allclose(np.asarray(v, np.float64), np.asarray(want, np.float64), rtol=tol, atol=tol,
                                       err_msg=f"{n.name} of\n{r.text}")
    if regions is not None:
        assert len(plan.regions) == regions, [r.text for r in plan.regions]
    assert sorted(k.rsplit("_", 1)[0] for k in plan.left) == sorted(left), plan.left
    return plan


def f16(*shape):
    return rng.standard_normal(shape).astype(np.float16)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_extents_are_monomials():
    assert str(Extent.of("2*s0*s1/4")) == "s0*s1/2"
    assert Extent.of("s0") * 4 == Extent.of("4*s0")
    assert Extent.of("3*s0") - Extent.of("s0") == Extent.of("2*s0")
    assert Extent.of("s0").value({"s0": 6}) == 6
    with pytest.raises(ValueError, match="not a monomial"):
        Extent.of("s0+1")
    with pytest.raises(ValueError, match="not a monomial"):
        Extent.of("s0") + Extent.of("s1")


def test_a_bias_add_relu_and_row_sum_are_one_region_and_the_matmul_stays():
    b = Builder()
    x, bias = b.input("x", f16(6, 40)), b.input("bias", f16(40))
    a = b.op("aten.add.Tensor", x, bias)
    r = b.op("aten.relu.default", a)
    s = b.op("aten.sum.dim_IntList", r, [-1], True, dtype="f32")
    m = b.op("aten.mm.default", r, b.input("w", f16(40, 3)))
    plan = run(b, s, m, regions=1, left=["mm"])
    assert plan.left["mm_6"] == "loom has no op for `aten.mm.default`"
    assert [n.name for n in plan.regions[0].outputs] == ["relu_3", "sum_4"]


def test_promotion_of_numbers_and_rank_zero_tensors():
    b = Builder()
    x = b.input("x", f16(5, 7))
    s = b.input("s", np.array(3.0, np.float32))  # a rank-0 f32 does not raise f16's dtype
    y = b.op("aten.mul.Tensor", x, s, dtype="f16")
    z = b.op("aten.add.Tensor", y, 2.5, alpha=2)
    i = b.input("i", rng.integers(-5, 5, (5, 7)).astype(np.int64))
    q = b.op("aten.div.Tensor", i, 2, dtype="f32")  # true division of integers is a float
    c = b.op("aten.gt.Scalar", i, 1.5)  # an i64 compared in f32
    w = b.op("aten.where.self", c, q, z, dtype="f32")
    run(b, w, regions=1)


def test_broadcasts_from_size_one_dims_and_expand():
    b = Builder()
    x = b.input("x", f32(4, 1, 6))
    y = b.input("y", f32(3, 1))
    a = b.op("aten.mul.Tensor", x, y)  # [4, 3, 6]
    e = b.op("aten.expand.default", b.input("r", f32(1, 6)), [3, 6])
    s = b.op("aten.sum.dim_IntList", e, [0])  # an expanded dim summed counts each copy
    t = b.op("aten.add.Tensor", a, s)
    run(b, t, regions=1)


def test_views_split_merge_permute_squeeze_slice_cat():
    b = Builder()
    x = b.input("x", f32(2, 12, 5))
    v = b.op("aten.view.default", x, [2, 3, 4, 5])
    p = b.op("aten.permute.default", v, [0, 3, 1, 2])
    u = b.op("aten.unsqueeze.default", p, 1)
    sq = b.op("aten.squeeze.dim", u, 1)
    sl = b.op("aten.slice.Tensor", sq, 2, 1, 9223372036854775807)
    n = b.op("aten.neg.default", sl)
    c = b.op("aten.cat.default", [n, sl], 2)
    se = b.op("aten.select.int", c, 3, -1)
    m = b.op("aten.view.default", b.op("aten.exp.default", se), [10, 4])
    plan = run(b, m, regions=1, left=["view"])  # the output's view: the framework's, of the region's exp
    assert [n.target for n in plan.regions[0].outputs] == ["aten.exp.default"]


def test_a_reshape_that_is_no_split_or_merge_stays_outside():
    b = Builder()
    x = b.input("x", f32(6, 4))
    e = b.op("aten.exp.default", x)
    v = b.op("aten.view.default", e, [4, 6])
    t = b.op("aten.tanh.default", v)
    plan = run(b, t, regions=2, left=["view"])
    assert "no split or merge" in plan.left["view_2"]


def test_layer_norm_decomposed_with_var_mean_is_one_region():
    b = Builder()
    x, w = b.input("x", f16(8, 33)), b.input("w", f16(33))
    xf = b.op("prims.convert_element_type.default", x, "f32", dtype="f32")
    vm = b.op("aten.var_mean.correction", xf, [1], correction=0, keepdim=True)
    var = b.op("getitem", vm, 0)
    mean = b.op("getitem", vm, 1)
    r = b.op("aten.rsqrt.default", b.op("aten.add.Tensor", var, 1e-5))
    y = b.op("aten.mul.Tensor", b.op("aten.sub.Tensor", xf, mean), r)
    y = b.op("aten.mul.Tensor", y, w)
    out = b.op("prims.convert_element_type.default", y, "f16", dtype="f16")
    plan = run(b, out, mean, r, regions=1)
    assert "var_mean(" in plan.regions[0].text


def test_run_time_sizes_are_loom_sizes():
    b = Builder({"s0": 5})
    x = b.input("x", f32(5, 8), shape=["s0", 8])
    v = b.op("aten.view.default", x, [5, 2, 4], shape=["s0", 2, 4])
    s = b.op("aten.amax.default", v, [2], True, shape=["s0", 2, 1])
    y = b.op("aten.sub.Tensor", v, s, shape=["s0", 2, 4])
    plan = run(b, b.op("aten.exp.default", y, shape=["s0", 2, 4]), regions=1)
    assert "in x: f32[s0, 8]" in plan.regions[0].text


def test_regions_leave_no_cycle():
    # x -> a (loom) -> mm (aten) -> c (loom, reads a and mm): c cannot join a's region.
    b = Builder()
    x = b.input("x", f32(4, 4))
    a = b.op("aten.exp.default", x)
    m = b.op("aten.mm.default", a, a)
    c = b.op("aten.add.Tensor", a, m)
    plan = run(b, c, regions=2, left=["mm"])
    assert [r.nodes[0].name for r in plan.regions] == ["exp_1", "add_3"]


def test_a_view_read_outside_is_made_again_there():
    b = Builder()
    x = b.input("x", f32(4, 6))
    e = b.op("aten.exp.default", x)
    v = b.op("aten.view.default", e, [24])
    t = b.op("aten.tanh.default", v)
    m = b.op("aten.mm.default", b.op("aten.view.default", v, [6, 4]), x)
    plan = run(b, t, m, regions=1, left=["mm", "view"])
    r = plan.regions[0]
    assert [n.name for n in r.outputs] == ["exp_1", "tanh_3"] and [n.name for n in r.replicas] == ["view_2"]


def test_ops_loom_has_not_and_dtypes_it_has_not_say_why():
    b = Builder()
    x = b.input("x", f32(3, 3))
    y = b.op("aten.pow.Tensor_Scalar", b.input("i", rng.integers(1, 4, (3, 3)).astype(np.int32)), 3)
    u8 = Node("u8", "input", out=tensor_type("u8", [3, 3]))
    host = Node("host", "input", out=tensor_type("f32", [3, 3], device="cpu"))
    b.nodes += [u8, host]
    e1 = Node("exp_u8", "op", "aten.exp.default", (u8,), out=tensor_type("f32", [3, 3]))
    e2 = Node("exp_host", "op", "aten.exp.default", (host,), out=tensor_type("f32", [3, 3], device="cpu"))
    b.nodes += [e1, e2]
    plan = run(b, y, e1, e2, b.op("aten.exp.default", x), regions=1, left=["pow", "exp", "exp"])
    assert plan.left["pow_2"] == "pow of integers"
    assert plan.left["exp_u8"] == "its input `u8` is dtype u8 (loom has bool, i32, i64, f16, bf16, f32, f64)"
    assert plan.left["exp_host"] == "it makes a tensor on cpu"


def test_softmax_and_its_backward_as_core_aten_writes_them():
    b = Builder()
    x, g = b.input("x", f16(6, 50)), b.input("g", f16(6, 50))
    xf = b.op("prims.convert_element_type.default", x, "f32", dtype="f32")
    m = b.op("aten.amax.default", xf, [-1], True)
    e = b.op("aten.exp.default", b.op("aten.sub.Tensor", xf, m))
    y = b.op("aten.div.Tensor", e, b.op("aten.sum.dim_IntList", e, [-1], True))
    gy = b.op("aten.mul.Tensor", b.op("prims.convert_element_type.default", g, "f32", dtype="f32"), y)
    dx = b.op("aten.sub.Tensor", gy, b.op("aten.mul.Tensor", y, b.op("aten.sum.dim_IntList", gy, [-1], True)))
    run(b, b.op("prims.convert_element_type.default", dx, "f16", dtype="f16"), regions=1)


def test_run_time_sizes_through_merges_slices_and_cat():
    b = Builder({"s0": 3})
    x = b.input("x", f32(3, 64), shape=["s0", 64])
    v = b.op("aten.view.default", x, [192], shape=["64*s0"])
    e = b.op("aten.exp.default", v, shape=["64*s0"])
    w = b.op("aten.view.default", e, [3, 8, 8], shape=["s0", 8, 8])
    half = b.op("aten.slice.Tensor", w, 2, 0, 4, shape=["s0", 8, 4])
    c = b.op("aten.cat.default", [w, half], 2, shape=["s0", 8, 12])
    t = b.op("aten.sum.default", c, shape=[])
    plan = run(b, t, regions=1)
    assert "reshape(x, shape=[64*s0])" in plan.regions[0].text


def test_clamps_rounding_division_and_logic():
    b = Builder()
    x, y = b.input("x", f32(4, 8) * 3), b.input("y", np.abs(f32(4, 8)) + 0.5)
    c = b.op("aten.clamp.default", x, min=-1.0, max=2.0)
    fl = b.op("aten.div.Tensor_mode", x, y, rounding_mode="floor")
    tr = b.op("aten.div.Tensor_mode", x, y, rounding_mode="trunc")
    no = b.op("aten.logical_not.default", b.op("aten.lt.Tensor", x, y))
    w = b.op("aten.where.self", no, c, b.op("aten.add.Tensor", fl, tr), dtype="f32")
    run(b, w, b.op("aten.maximum.default", x, y), regions=1)


def test_creation_ops_join_the_region_that_reads_them():
    b = Builder()
    x = b.input("x", f32(3, 5))
    f = b.op("aten.full.default", [3, 5], 2.0, dtype="f32")
    r = b.op("aten.arange.start_step", 0, 5, 1, dtype="i64")
    c = b.op("prims.convert_element_type.default", r, "f32", dtype="f32")
    y = b.op("aten.add.Tensor", b.op("aten.mul.Tensor", x, f), c)
    run(b, y, regions=1)


def test_backward_tails_threshold_and_sigmoid():
    b = Builder()
    g, x = b.input("g", f16(4, 9)), b.input("x", f16(4, 9))
    y = b.op("aten.sigmoid.default", x)
    d1 = b.op("aten.sigmoid_backward.default", g, y)
    d2 = b.op("aten.threshold_backward.default", d1, x, 0)
    s = b.op("aten.sum.dim_IntList", d2, [0], dtype="f16")
    run(b, d2, s, regions=1)


def test_split_results_are_read_through_getitem():
    b = Builder()
    gates = b.input("gates", f32(5, 12))
    parts = b.op("aten.split.Tensor", gates, 4, 1)
    i = b.op("aten.sigmoid.default", b.op("getitem", parts, 0))
    f = b.op("aten.tanh.default", b.op("getitem", parts, 2))
    run(b, b.op("aten.mul.Tensor", i, f), regions=1)


def _condensed_cycle(plan, graph):
    """Whether regions, each as one node, and the nodes outside them form a cycle."""
    where = {id(n): ("r", k) for k, r in enumerate(plan.regions) for n in r.nodes}
    key = lambda n: where.get(id(n), ("n", id(n)))  # noqa: E731
    edges = {}
    for n in graph.nodes:
        for p in n.inputs():
            if key(p) != key(n):
                edges.setdefault(key(p), set()).add(key(n))
    state = {}

    def visit(v):
        state[v] = 1
        for w in edges.get(v, ()):
            if state.get(w) == 1 or (w not in state and visit(w)):
                return True
        state[v] = 2
        return False
    return any(v not in state and visit(v) for v in list(edges))


def test_regions_of_unconnected_parts_still_leave_no_cycle():
    # {c1, c2} read w in common and {b, d} read x in common; b -> mm -> c1 and c2 -> mm -> d, so
    # the two pairs cannot both be regions.
    b = Builder()
    x, w = b.input("x", f32(4, 4)), b.input("w", f32(4, 4))
    e = b.op("aten.exp.default", x)
    m1 = b.op("aten.mm.default", e, e)
    c1 = b.op("aten.add.Tensor", m1, w)
    c2 = b.op("aten.mul.Tensor", w, 2.0)
    m2 = b.op("aten.mm.default", c2, c2)
    d = b.op("aten.add.Tensor", m2, x)
    plan = run(b, c1, d, left=["mm", "mm"])
    assert not _condensed_cycle(plan, b.graph())
    assert len(plan.regions) == 3


def test_a_region_loom_cannot_plan_leaves_the_node_its_planner_names():
    b = Builder()
    x = b.input("x", f32(4, 3, 10, 8))
    p = b.op("aten.permute.default", x, [0, 3, 1, 2])
    e = b.op("aten.exp.default", p)
    v = b.op("aten.view.default", e, [4, 240])
    s = b.op("aten.tanh.default", v)
    plan = run(b, s, left=["view"])
    assert plan.left["view_3"].startswith("loom's planner refuses its region: "), plan.left
    assert len(plan.regions) == 2


def test_a_flattened_batch_split_again_stays_a_framework_view():
    # A region whose one input is [s0*s1, 16] cannot know s0 and s1 from it: the view that splits
    # them again is the framework's, and the region reads its result.
    b = Builder({"s0": 2, "s1": 3})
    x = b.input("x", f32(6, 16), shape=["s0*s1", 16])
    v = b.op("aten.view.default", x, [2, 3, 16], shape=["s0", "s1", 16])
    g = b.op("aten.tanh.default", v, shape=["s0", "s1", 16])
    plan = run(b, g, regions=1, left=["view"])
    assert "determined by no input alone" in plan.left["view_1"]
    assert "in v: f32[s0, s1, 16]" in plan.regions[0].text.replace("view_1", "v")


def test_argmax_and_argmin_join_a_softmax_region_along_any_dim():
    b = Builder()
    x = b.input("x", f32(6, 40))
    b.values["x"][1, 3] = b.values["x"][1, 7] = 9.0  # a tie: the first wins
    b.values["x"][2, 5] = np.nan                     # a NaN wins
    m = b.op("aten.amax.default", x, [-1], True)
    e = b.op("aten.exp.default", b.op("aten.sub.Tensor", x, m))
    y = b.op("aten.div.Tensor", e, b.op("aten.sum.dim_IntList", e, [-1], True))
    hi = b.op("aten.argmax.default", x, -1, True)
    lo = b.op("aten.argmin.default", x, 0)
    flat = b.op("aten.argmax.default", x)
    flat_kept = b.op("aten.argmax.default", x, None, True)
    plan = run(b, y, hi, lo, flat, flat_kept, regions=1)
    text = plan.regions[0].text
    assert "argmax(" in text and "argmin(" in text


def test_a_target_logit_gathered_beside_its_logsumexp_is_one_region():
    b = Builder()
    x = b.input("x", f32(6, 40))
    t = b.input("t", np.array([[3], [0], [39], [7], [7], [21]], np.int64))
    m = b.op("aten.amax.default", x, [-1], True)
    s = b.op("aten.sum.dim_IntList", b.op("aten.exp.default", b.op("aten.sub.Tensor", x, m)), [-1], True)
    lse = b.op("aten.add.Tensor", b.op("aten.log.default", s), m)
    loss = b.op("aten.sub.Tensor", lse, b.op("aten.gather.default", x, 1, t))
    rows = b.op("aten.index_select.default", x, 0, b.input("r", np.array([5, 0, 5], np.int64)))
    plan = run(b, loss, rows, regions=1)
    text = plan.regions[0].text
    assert "gather(" in text and "index_select(" in text


def test_an_embedding_lookup_stays_with_aten():
    b = Builder()
    table = b.input("table", f32(1000, 8))
    tokens = b.input("tokens", np.arange(0, 1000, 31, dtype=np.int64))  # 33 lookups
    y = b.op("aten.index_select.default", table, 0, tokens)
    plan = run(b, b.op("aten.relu.default", y), regions=1, left=["index_select"])
    assert "index_select(" not in plan.regions[0].text


def test_nll_loss_backward_as_decomposed_is_one_region():
    # torch's decomposition of nll_loss_backward: -1 scattered at each row's target, masked where
    # the target is ignored, times the row's gradient; then log_softmax's backward.
    b = Builder()
    x = b.input("x", f32(6, 40))
    t = b.input("t", np.array([[3], [0], [39], [7], [-100], [21]], np.int64))
    g = b.input("g", f32(6, 1))
    keep = b.op("aten.ne.Scalar", t, -100)
    safe = b.op("aten.where.self", keep, t, b.op("aten.scalar_tensor.default", 0, dtype="i64"), dtype="i64")
    zeros = b.op("aten.full.default", [6, 40], 0.0, dtype="f32")
    hot = b.op("aten.scatter.value", zeros, 1, safe, -1.0)
    dnll = b.op("aten.mul.Tensor", b.op("aten.where.self", keep, hot, b.op("aten.scalar_tensor.default", 0.0, dtype="f32"),
                                        dtype="f32"), g)
    logp = b.op("aten.sub.Tensor", x, b.op("aten.amax.default", x, [1], True))
    p = b.op("aten.exp.default", logp)
    dx = b.op("aten.sub.Tensor", dnll, b.op("aten.mul.Tensor", p, b.op("aten.sum.dim_IntList", dnll, [1], True)))
    plan = run(b, dx, regions=1)
    assert "iota(" in plan.regions[0].text and "where(" in plan.regions[0].text
