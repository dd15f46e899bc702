"""loom.torch's compiled extension on the GPU: that it is the path in use; every family's module
against PyTorch's in f32/f16/bf16, both layouts, odd and empty shapes; the fused activations of
timm's norm + activation modules, forward and backward; swap() on subclasses and its report;
batch norm's state (running statistics in place, momentum=None, a refused batch of one);
compile_fusion with and without a backward; torch.compile and CUDA graphs over the C++ ops.
Skipped without torch or a GPU."""
import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest

import loom

torch = pytest.importorskip("torch")
if not torch.cuda.is_available() or not loom.gpu_available():
    pytest.skip("no GPU", allow_module_level=True)
import loom.torch  # noqa: E402
from loom.torch import nn as lnn  # noqa: E402
from loom.torch import ops  # noqa: E402

if ops.EXTENSION is None:
    pytest.skip(f"loom.torch runs its ctypes path: {ops.WHY}", allow_module_level=True)

F = torch.nn.functional
from torch_checks import DTYPES, TOL, rel  # noqa: E402


def test_extension_is_the_path():
    assert ops.CUMULATIVE and ops.layer_norm.__module__ == "loom.torch.ops"
    assert ops.EXTENSION.__name__.startswith("loom_torch_")


def check(stock, mine, x, dtype):
    """mine (on x in dtype) against stock (on x in f32, params f32): y, dx, parameter grads, buffers."""
    x_ref = x.detach().float().requires_grad_()
    x_in = x.detach().clone().requires_grad_()
    y_ref, y = stock(x_ref), mine(x_in)
    assert y.dtype == x.dtype and y.shape == y_ref.shape
    assert rel(y, y_ref) < TOL[dtype], f"y: {rel(y, y_ref):.3g}"
    g = torch.randn_like(y_ref)
    y_ref.backward(g)
    y.backward(g.to(dtype))
    assert rel(x_in.grad, x_ref.grad) < TOL[dtype] * 2, f"dx: {rel(x_in.grad, x_ref.grad):.3g}"
    for (n, p_ref), (_, p) in zip(stock.named_parameters(), mine.named_parameters()):
        assert rel(p.grad, p_ref.grad) < TOL[dtype] * 2, f"d{n}: {rel(p.grad, p_ref.grad):.3g}"
    for (n, b_ref), (_, b) in zip(stock.named_buffers(), mine.named_buffers()):
        assert rel(b, b_ref) < 1e-4 if b.is_floating_point() else torch.equal(b, b_ref), n


def swapped(stock):
    with torch.no_grad():
        for p in stock.parameters():
            p.copy_(torch.randn_like(p))
    mine = copy.deepcopy(stock)
    assert loom.torch.swap(mine) == 1
    return mine


def image(shape, dtype, layout):
    x = torch.randn(*shape, device="cuda", dtype=dtype)
    return x.to(memory_format=torch.channels_last) if layout == "nhwc" else x


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("make,shape", [
    (lambda: torch.nn.GroupNorm(3, 12), (2, 12, 5, 7)),
    (lambda: torch.nn.BatchNorm2d(12), (3, 12, 1, 9)),
    (lambda: torch.nn.BatchNorm2d(12, momentum=None), (2, 12, 3, 3)),
    (lambda: torch.nn.InstanceNorm2d(12, affine=True), (2, 12, 5, 7)),
])
def test_spatial_families(dtype, layout, make, shape):
    stock = make().cuda()
    mine = swapped(stock)
    for _ in range(2):  # twice: the running statistics (the cumulative average's count too)
        check(stock, mine, image(shape, dtype, layout), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 5, 1001), (1, 64), (7, 3)])
def test_row_families(dtype, shape):
    for make in (lambda d: torch.nn.LayerNorm(d), lambda d: torch.nn.RMSNorm(d, eps=1e-5)):
        stock = make(shape[-1]).cuda()
        check(stock, swapped(stock), torch.randn(*shape, device="cuda", dtype=dtype), dtype)


@pytest.mark.parametrize("make,shape", [
    (lambda: torch.nn.LayerNorm(16), (0, 16)),
    (lambda: torch.nn.LayerNorm(16), (4, 0, 16)),
    (lambda: torch.nn.RMSNorm(16), (0, 16)),
    (lambda: torch.nn.GroupNorm(2, 8), (0, 8, 4, 4)),
    (lambda: torch.nn.BatchNorm2d(8), (0, 8, 4, 4)),
    (lambda: torch.nn.InstanceNorm2d(8), (0, 8, 4, 4)),
])
def test_empty_tensors(make, shape):
    stock = make().cuda()
    mine = swapped(stock)
    x = torch.randn(*shape, device="cuda", dtype=torch.float16, requires_grad=True)
    y = mine(x)
    assert y.shape == stock(x.float()).shape and y.numel() == 0
    y.sum().backward()
    assert x.grad.shape == x.shape
    for (n, b_ref), (_, b) in zip(stock.named_buffers(), mine.named_buffers()):
        assert torch.equal(b.float(), b_ref.float()), n


def test_batch_of_one_is_refused_before_any_state_is_written():
    m = swapped(torch.nn.BatchNorm2d(64).cuda())
    before = {k: v.clone() for k, v in m.state_dict().items()}
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        m(torch.randn(1, 64, 1, 1, device="cuda"))
    assert all(torch.equal(v, before[k]) for k, v in m.state_dict().items())


def test_running_statistics_written_in_place_by_the_kernel():
    m = swapped(torch.nn.BatchNorm2d(32).cuda())
    ptrs = (m.running_mean.data_ptr(), m.running_var.data_ptr())
    x = image((8, 32, 9, 9), torch.float16, "nhwc")
    m(x)  # (compiles)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        m(x)
        torch.cuda.synchronize()
    kernels = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    assert not any("copy" in k.lower() for k in kernels), kernels
    assert (m.running_mean.data_ptr(), m.running_var.data_ptr()) == ptrs


@pytest.mark.parametrize("act", ["relu", "silu", "gelu", "gelu_tanh", "sigmoid", "tanh"])
@pytest.mark.parametrize("family", ["group_norm", "layer_norm", "layer_norm_2d", "batch_norm"])
def test_fused_activation_against_pytorch(family, act):
    torch.manual_seed(0)
    fn = {"relu": F.relu, "silu": F.silu, "gelu": F.gelu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
          "sigmoid": torch.sigmoid, "tanh": torch.tanh}[act]
    x = image((4, 16, 5, 6), torch.float32, "nhwc") if family != "layer_norm" else torch.randn(6, 40, device="cuda")
    c = x.shape[1] if family != "layer_norm" else x.shape[-1]
    w = torch.randn(c, device="cuda", requires_grad=True)
    b = torch.randn(c, device="cuda", requires_grad=True)
    xs = x.detach().clone().requires_grad_()
    xr = x.detach().clone().requires_grad_()
    if family == "group_norm":
        y, ref = ops.group_norm(xs, w, b, 4, 1e-5, act), fn(F.group_norm(xr, 4, w, b, 1e-5))
    elif family == "layer_norm":
        y, ref = ops.layer_norm(xs, w, b, 1e-5, act), fn(F.layer_norm(xr, (c,), w, b, 1e-5))
    elif family == "layer_norm_2d":
        y = ops.layer_norm_2d(xs, w, b, 1e-6, act)
        ref = fn(F.layer_norm(xr.permute(0, 2, 3, 1), (c,), w, b, 1e-6).permute(0, 3, 1, 2))
    else:
        y = ops.batch_norm(xs, None, None, w, b, None, 0.1, 1e-5, act)
        ref = fn(F.batch_norm(xr, None, None, w, b, True, 0.1, 1e-5))
    assert rel(y, ref) < 1e-4
    g = torch.randn_like(ref)
    got = torch.autograd.grad(y, (xs, w, b), g)
    want = torch.autograd.grad(ref, (xr, w, b), g)
    for name, a, e in zip(("dx", "dw", "db"), got, want):
        assert rel(a, e) < 1e-3, (name, rel(a, e))


def test_swap_report_and_subclasses(capsys):
    class Plain(torch.nn.GroupNorm):  # keeps PyTorch's forward: swapped
        pass

    class Doubled(torch.nn.LayerNorm):  # its own math: left alone
        def forward(self, x):
            return 2 * super().forward(x)

    model = torch.nn.Sequential(Plain(2, 8), Doubled(8), torch.nn.LocalResponseNorm(2), torch.nn.Linear(8, 8)).cuda()
    r = loom.torch.swap(model, report=True)
    assert len(r) == 1 and isinstance(model[0], Plain) and type(model[1]) is Doubled
    out = capsys.readouterr().out
    assert "1 module(s) swapped" in out and "Doubled" in out and "overrides" in out and "LocalResponseNorm" in out
    x = torch.randn(3, 8, 4, 4, device="cuda")
    assert rel(model[0](x), F.group_norm(x, 2, model[0].weight, model[0].bias)) < 1e-5


def test_timm_norms_and_norm_act_modules():
    timm = pytest.importorskip("timm")
    from timm.layers import norm, norm_act
    mods = [norm.GroupNorm(16, 4), norm.GroupNorm1(16), norm.LayerNorm2d(16),
            norm_act.BatchNormAct2d(16), norm_act.GroupNormAct(16, 4, act_layer=torch.nn.SiLU),
            norm_act.GroupNorm1Act(16, act_layer=torch.nn.GELU), norm_act.LayerNormAct2d(16),
            norm_act.BatchNormAct2d(16, act_layer=torch.nn.LeakyReLU)]
    for stock in mods:
        stock = stock.cuda()
        mine = swapped(stock)
        assert isinstance(mine, type(stock)), type(stock)
        for dtype in (torch.float32, torch.bfloat16):
            check(stock, mine, image((2, 16, 5, 7), dtype, "nhwc"), dtype)
    ln = norm_act.LayerNormAct(40, act_layer=torch.nn.ReLU).cuda()
    check(ln, swapped(ln), torch.randn(5, 40, device="cuda"), torch.float32)


def test_timm_resnet50_gn_swaps_every_norm():
    timm = pytest.importorskip("timm")
    model = timm.create_model("resnet50_gn", pretrained=False)
    n = sum(1 for m in model.modules() if isinstance(m, torch.nn.GroupNorm))
    assert n > 0 and loom.torch.swap(model) == n


def test_compile_fusion_forward_and_backward():
    f = loom.torch.compile_fusion("layer_norm", dtype="f32")
    x = torch.randn(33, 1000, device="cuda")
    w, b = torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda")
    (y,) = f(x, w, b)[:1]
    assert rel(y, F.layer_norm(x, (1000,), w, b)) < 1e-4
    fwd = loom.Fusion.op("layer_norm", x="f32", w="f32", b="f32", eps=1e-5)
    bwd = loom.Fusion.op("layer_norm_backward", x="f32", w="f32", b="f32")
    g = loom.torch.compile_fusion(fwd, backward=bwd)
    xs, ws, bs = (t.clone().requires_grad_() for t in (x, w, b))
    y, _, _ = g(xs, ws, bs)
    dy = torch.randn_like(y)
    got = torch.autograd.grad(y, (xs, ws, bs), dy)
    xr, wr, br = (t.clone().requires_grad_() for t in (x, w, b))
    want = torch.autograd.grad(F.layer_norm(xr, (1000,), wr, br), (xr, wr, br), dy)
    for a, e in zip(got, want):
        assert rel(a, e) < 1e-4
    with pytest.raises(ValueError, match="reads `q`"):
        loom.torch.compile_fusion(fwd, backward="fusion b {\n  in q: f32[N]\n  t: f32[N] = neg(q)\n  out dx = t\n}\n")


def test_compile_fusion_under_torch_compile():
    f = loom.torch.compile_fusion("layer_norm", dtype="f16")
    x = torch.randn(64, 512, device="cuda", dtype=torch.float16)
    w, b = torch.randn(512, device="cuda", dtype=torch.float16), torch.randn(512, device="cuda", dtype=torch.float16)
    fn = torch.compile(lambda x, w, b: f(x, w, b)[0] * 2, fullgraph=True)
    assert rel(fn(x, w, b), 2 * f(x, w, b)[0]) < 1e-3


def test_cuda_graph_capture_through_the_extension():
    m = swapped(torch.nn.GroupNorm(4, 32).cuda())
    x = image((4, 32, 16, 16), torch.float16, "nhwc")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        m(x)  # warm: compiled outside the capture
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = m(x)
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    assert rel(y, F.group_norm(x.float(), 4, m.weight, m.bias)) < 5e-3


def test_autograd_nodes_behave_as_pytorchs():
    m = swapped(torch.nn.LayerNorm(96).cuda())
    x = torch.randn(5, 96, device="cuda", requires_grad=True)
    y = m(x)
    assert y.grad_fn.name() == "loom::layer_norm_backward" and len(y.grad_fn.next_functions) == 3
    # retain_graph: the same gradient twice, accumulated; then the saved tensors are freed.
    y.sum().backward(retain_graph=True)
    first = x.grad.clone()
    y.sum().backward()
    assert rel(x.grad, 2 * first) < 1e-6
    with pytest.raises(RuntimeError, match="second time"):
        y.sum().backward()
    # x changed in place after the forward: PyTorch's version check, not a wrong gradient.
    x2 = torch.randn(5, 96, device="cuda")
    xg = x2.clone().requires_grad_()
    h = xg * 1
    y2 = m(h)
    h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y2.sum().backward()
    # Only the weight wants a gradient (a frozen input): dw and db as PyTorch's, no dx.
    m.zero_grad()
    stock = copy.deepcopy(m)
    stock.__class__ = torch.nn.LayerNorm
    m(x2).pow(2).sum().backward()
    stock(x2).pow(2).sum().backward()
    assert rel(m.weight.grad, stock.weight.grad) < 1e-4 and rel(m.bias.grad, stock.bias.grad) < 1e-4


@pytest.mark.parametrize("make,shape", [
    (lambda: torch.nn.RMSNorm(48, elementwise_affine=False), (7, 48)),
    (lambda: torch.nn.GroupNorm(4, 16, affine=False), (3, 16, 5, 5)),
    (lambda: torch.nn.BatchNorm2d(16, affine=False), (3, 16, 5, 5)),
    (lambda: torch.nn.InstanceNorm2d(16), (3, 16, 5, 5)),
])
def test_autograd_nodes_without_parameters(make, shape):
    stock = make().cuda()
    mine = copy.deepcopy(stock)
    assert loom.torch.swap(mine) == 1
    x = torch.randn(*shape, device="cuda")
    check(stock, mine, x, torch.float32)


def test_the_example_a_user_copies_runs():
    pytest.importorskip("timm")
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, str(root / "examples" / "python" / "torch_norms.py")], env=env,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "extension: compiled" in r.stdout and "reduce-overhead: ok" in r.stdout, r.stdout[-3000:]
