"""torch.compile(backend="loom") on the GPU against eager: pointwise chains with broadcasting and
mixed dtypes, reductions over every dim set, views, slices and cat, hand-written norms and
softmax, in-place ops on activations, forward and backward; a changing batch size on one
compile; a graph loom takes nothing of; CUDA graphs; the regions explain() reports. Skipped
without torch or a GPU."""
import itertools

import pytest

import loom

torch = pytest.importorskip("torch")
if not torch.cuda.is_available() or not loom.gpu_available():
    pytest.skip("no GPU", allow_module_level=True)
import loom.torch  # noqa: E402
from loom.torch import backend, ops  # noqa: E402

if ops.EXTENSION is None:
    pytest.skip(f"loom.torch runs its ctypes path: {ops.WHY}", allow_module_level=True)
from torch_checks import rel  # noqa: E402

TOL = {torch.float16: 5e-3, torch.bfloat16: 3e-2, torch.float32: 2e-5}


class Recorded:
    """The graphs backend="loom" compiles while it is entered."""

    def __enter__(self):
        self.rec = backend._Recorder()
        backend._recorders.append(self.rec)
        return self.rec

    def __exit__(self, *exc):
        backend._recorders.remove(self.rec)


def compare(fn, *inputs, backward=True, tol=None, dynamic=None, regions=True):
    """fn compiled with backend="loom" against fn in eager: outputs and input gradients; that loom
    ran at least one region (unless regions=False) and cut every graph without a failure."""
    torch._dynamo.reset()
    mine = torch.compile(fn, backend="loom", dynamic=dynamic)
    ref_in = [t.detach().clone().requires_grad_(t.requires_grad) for t in inputs]
    my_in = [t.detach().clone().requires_grad_(t.requires_grad) for t in inputs]
    with Recorded() as rec:
        want, got = fn(*ref_in), mine(*my_in)
        _compare_values(fn, want, got, ref_in, my_in, inputs, backward, tol)
    assert rec.failures == 0
    assert not regions or any(plan.regions for _, _, plan, _ in rec.graphs), fn
    return mine


def _compare_values(fn, want, got, ref_in, my_in, inputs, backward, tol):
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    for w, g in zip(want, got):
        assert g.shape == w.shape and g.dtype == w.dtype
        t = tol or TOL.get(w.dtype, 0)
        if w.dtype.is_floating_point:
            assert rel(g, w) <= t, (fn, rel(g, w))
        else:
            assert torch.equal(g, w)
    if backward and any(t.requires_grad for t in inputs):
        grads = [torch.randn_like(w) for w in want if w.dtype.is_floating_point]
        torch.autograd.backward([w for w in want if w.dtype.is_floating_point], grads)
        torch.autograd.backward([g for g in got if g.dtype.is_floating_point], grads)
        for a, b in zip(ref_in, my_in):
            if a.requires_grad:
                assert rel(b.grad, a.grad) <= (tol or TOL[a.dtype]) * 4, (fn, rel(b.grad, a.grad))


def explained(fn, *inputs, **kw):
    return loom.torch.explain(fn, *inputs, **kw)


def cuda(*shape, dtype=torch.float32, grad=True):
    return torch.randn(*shape, device="cuda", dtype=dtype, requires_grad=grad)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_pointwise_chain_with_broadcasts_and_mixed_dtypes(dtype):
    def fn(x, b, s):
        y = torch.sigmoid(x * 2.0 + b) - x.float().tanh() * s
        return torch.where(y > 0.1, y, y * 0.5).to(dtype), (x.abs() + 1).rsqrt()
    compare(fn, cuda(33, 1, 65, dtype=dtype), cuda(7, 1, dtype=torch.float32), cuda(65, dtype=dtype))


def test_reductions_over_every_dim_set():
    x = cuda(6, 7, 130)
    for k in (1, 2, 3):
        for dims in itertools.combinations(range(3), k):
            compare(lambda x, d=dims: (x.sum(d), x.mean(d, keepdim=True), x.amax(d),
                                       torch.var(x, d, correction=1)), x)


def test_views_permutes_slices_and_cat():
    def fn(x):
        v = x.view(4, 3, 10, 8).permute(0, 3, 1, 2)
        s = v[:, 1:, :, 2:9] * 2
        c = torch.cat([s, s.exp()], dim=1)
        return c.reshape(4, -1).sum(-1), c.transpose(1, 2).contiguous()
    compare(fn, cuda(12, 80))


def layer_norm(x, w, b):
    mean = x.float().mean(-1, keepdim=True)
    var = ((x.float() - mean) ** 2).mean(-1, keepdim=True)
    return ((x.float() - mean) * torch.rsqrt(var + 1e-5) * w + b).to(x.dtype)


def rms_norm(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_hand_written_norms_and_softmax(dtype):
    x = cuda(64, 1000, dtype=dtype)
    compare(layer_norm, x, cuda(1000), cuda(1000))
    compare(rms_norm, x, cuda(1000, dtype=dtype))
    compare(lambda x: torch.softmax(x.float() / 3, dim=-1), x)
    compare(lambda x, r: torch.nn.functional.layer_norm(x + r, (1000,)).relu(), x, cuda(64, 1000, dtype=dtype))


def test_torch_norm_modules_decompose_into_loom_regions():
    m = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.LayerNorm(512), torch.nn.GELU(),
                            torch.nn.Linear(512, 256)).cuda()
    x = cuda(128, 256)
    e = explained(m, x)
    assert e.regions, str(e)
    left = {target for _, _, target, _ in e.left()}
    assert not any("layer_norm" in t or "gelu" in t for t in left), str(e)
    compare(m, x, tol=1e-4)


def test_in_place_ops_on_activations():
    def fn(x):
        y = torch.nn.functional.gelu(x * 3)  # (its backward reads x * 3, which stays as it was)
        y.add_(1).mul_(2.0)
        return y.tanh_()
    compare(fn, cuda(100, 37))


def test_a_changing_batch_size_needs_no_new_compile():
    def fn(x, w):
        return layer_norm(x, w, w).relu()
    w = cuda(384, grad=False)
    torch._dynamo.reset()
    counts = []
    mine = torch.compile(fn, backend="loom", dynamic=True)
    for n in (8, 24, 100, 7):
        x = torch.randn(n, 384, device="cuda")
        assert rel(mine(x, w), fn(x, w)) <= 1e-5
        counts.append(torch._dynamo.utils.counters["stats"]["unique_graphs"])
    assert counts[-1] == counts[0], counts


def test_a_graph_with_nothing_for_loom():
    def fn(a, b):
        return a @ b
    a, b = cuda(64, 32), cuda(32, 16)
    e = explained(fn, a, b)
    assert not e.regions and any("mm" in t for _, _, t, _ in e.left()), str(e)
    compare(fn, a, b, regions=False)


def test_explain_lists_regions_kernels_and_what_stays():
    def fn(x, w):
        h = torch.nn.functional.gelu(x @ w)
        return torch.softmax(h + x[:, :64], -1)
    x, w = cuda(256, 128), cuda(128, 64)
    e = explained(fn, x, w)
    text = str(e)
    assert "forward graph" in text and "backward graph" in text and "left to aten: mm" in text, text
    assert e.kernel_count() >= 1
    compare(fn, x, w)


def test_reduce_overhead_replays_loom_launches():
    def fn(x, w):
        return layer_norm(x, w, w).sigmoid()
    torch._dynamo.reset()
    mine = torch.compile(fn, backend="loom", mode="reduce-overhead")
    x, w = torch.randn(512, 768, device="cuda"), torch.randn(768, device="cuda")
    for _ in range(3):
        torch.compiler.cudagraph_mark_step_begin()
        got = mine(x, w)
    assert rel(got, fn(x, w)) <= 1e-5
