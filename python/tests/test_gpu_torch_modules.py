"""loom.torch on the GPU: every drop-in module against PyTorch's (forward, input and parameter
gradients, running statistics) in f32, f16 and bf16, NCHW and channels-last, odd shapes; the
custom ops under torch.library.opcheck and inside torch.compile(fullgraph=True); swap() on a
model, and on timm's ConvNeXt where timm is installed. Skipped without torch or a GPU."""
import copy

import pytest

import loom

torch = pytest.importorskip("torch")
if not torch.cuda.is_available() or not loom.gpu_available():
    pytest.skip("no GPU", allow_module_level=True)
import loom.torch  # noqa: E402
from loom.torch import nn as lnn  # noqa: E402

F = torch.nn.functional
from torch_checks import DTYPES, TOL, rel  # noqa: E402


def compare(stock, mine, x, dtype, check_buffers=True):
    """Forward and backward of `mine` on x (dtype) against `stock` on x in f32 (params f32)."""
    x_ref = x.detach().float().requires_grad_()
    x_in = x.detach().clone().requires_grad_()
    y_ref = stock(x_ref)
    y = mine(x_in)
    assert y.dtype == x.dtype and y.shape == x.shape
    assert rel(y, y_ref) < TOL[dtype], f"y: {rel(y, y_ref):.3g}"
    g = torch.randn_like(y_ref)
    y_ref.backward(g)
    y.backward(g.to(dtype))
    assert rel(x_in.grad, x_ref.grad) < TOL[dtype] * 2, f"dx: {rel(x_in.grad, x_ref.grad):.3g}"
    for (n, p_ref), (_, p) in zip(stock.named_parameters(), mine.named_parameters()):
        assert rel(p.grad, p_ref.grad) < TOL[dtype] * 2, f"d{n}: {rel(p.grad, p_ref.grad):.3g}"
    if check_buffers:
        for (n, b_ref), (_, b) in zip(stock.named_buffers(), mine.named_buffers()):
            if b.is_floating_point():
                assert rel(b, b_ref) < 1e-4, f"{n}: {rel(b, b_ref):.3g}"
            else:
                assert torch.equal(b, b_ref), n


def pair(cls, loom_cls, *args, **kw):
    stock = cls(*args, **kw).cuda()
    with torch.no_grad():
        for p in stock.parameters():
            p.copy_(torch.randn_like(p))
    mine = copy.deepcopy(stock)
    mine.__class__ = loom_cls
    return stock, mine


def image(shape, dtype, layout):
    x = torch.randn(*shape, device="cuda", dtype=dtype)
    return x.to(memory_format=torch.channels_last) if layout == "nhwc" else x


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 7, 1000), (1, 4096), (5, 1, 77)])
def test_layer_norm(dtype, shape):
    stock, mine = pair(torch.nn.LayerNorm, lnn.LayerNorm, shape[-1], eps=1e-6)
    compare(stock, mine, torch.randn(*shape, device="cuda", dtype=dtype), dtype)


def test_layer_norm_without_affine_and_2d_shape():
    stock, mine = pair(torch.nn.LayerNorm, lnn.LayerNorm, (6, 10), elementwise_affine=False)
    compare(stock, mine, torch.randn(4, 6, 10, device="cuda"), torch.float32)


@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm(dtype):
    stock, mine = pair(torch.nn.RMSNorm, lnn.RMSNorm, 2048, eps=1e-6)
    compare(stock, mine, torch.randn(3, 5, 2048, device="cuda", dtype=dtype), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_group_norm(dtype, layout):
    stock, mine = pair(torch.nn.GroupNorm, lnn.GroupNorm, 8, 64)
    compare(stock, mine, image((2, 64, 15, 17), dtype, layout), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_batch_norm_training_and_eval(dtype, layout):
    stock, mine = pair(torch.nn.BatchNorm2d, lnn.BatchNorm2d, 32)
    for _ in range(2):  # running statistics and num_batches_tracked over two steps
        compare(stock, mine, image((4, 32, 9, 11), dtype, layout), dtype)
    stock.eval()
    mine.eval()
    x = image((2, 32, 5, 7), dtype, layout)
    assert rel(mine(x), stock(x.float())) < TOL[dtype]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_instance_norm(dtype, layout):
    stock, mine = pair(torch.nn.InstanceNorm2d, lnn.InstanceNorm2d, 16, affine=True)
    compare(stock, mine, image((3, 16, 20, 21), dtype, layout), dtype)


class _StockLayerNorm2d(torch.nn.LayerNorm):  # timm's, as it computes
    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_layer_norm_2d(dtype, layout):
    stock, mine = pair(_StockLayerNorm2d, lnn.LayerNorm2d, 96, eps=1e-6)
    x = image((2, 96, 14, 13), dtype, layout)
    compare(stock, mine, x, dtype)
    # The output's layout is timm's (channels-last from either layout), so the layers after it
    # run as they do under timm; channels_last_out=False keeps an NCHW input's layout.
    with torch.no_grad():
        assert mine(x).stride() == stock(x.float()).stride()
        mine.channels_last_out = False
        y = mine(x)
        assert y.is_contiguous(memory_format=torch.channels_last if layout == "nhwc" else torch.contiguous_format)
        assert rel(y, stock(x.float())) < TOL[dtype]


def test_opcheck():
    x = torch.randn(6, 40, device="cuda", dtype=torch.float16)
    w, b = torch.randn(40, device="cuda"), torch.randn(40, device="cuda")
    torch.library.opcheck(torch.ops.loom.layer_norm.default, (x, w, b, 1e-5))
    img = image((2, 16, 5, 7), torch.float16, "nhwc")
    c = torch.randn(16, device="cuda")
    torch.library.opcheck(torch.ops.loom.group_norm.default, (img, c, c, 4, 1e-5))
    torch.library.opcheck(torch.ops.loom.layer_norm_2d.default, (img, c, c, 1e-6))


@pytest.mark.parametrize("in_compile", ["loom", "torch"])
def test_torch_compile_fullgraph(monkeypatch, in_compile):
    # (No conv bias before a norm: its gradient is zero, and rounding noise against noise. No TF32:
    # the compiled graph may pick other conv algorithms.)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    # (A GELU after each norm: a norm right after another's bias would make that bias's gradient zero.)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 32, 3, padding=1, bias=False), torch.nn.BatchNorm2d(32),
                                torch.nn.GELU(), torch.nn.InstanceNorm2d(32, affine=True),
                                torch.nn.Conv2d(32, 16, 1, bias=False), torch.nn.GELU(), torch.nn.GroupNorm(4, 16),
                                torch.nn.GELU()).cuda()
    ref = copy.deepcopy(model)
    assert loom.torch.swap(model, in_compile=in_compile) == 3
    compiled = torch.compile(model, fullgraph=True)
    x = torch.randn(4, 3, 12, 12, device="cuda")
    compiled(x), ref(x)  # (compiles; both models' running statistics take this batch)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        y, y_ref = compiled(x), ref(x)
        torch.cuda.synchronize()
    # loom's kernels in the compiled graph only where asked for (else Inductor's own).
    loom_kernels = [e.name for e in prof.events() if e.name.startswith("loom")]
    assert bool(loom_kernels) == (in_compile == "loom"), loom_kernels[:3]
    assert rel(y, y_ref) < 1e-4, rel(y, y_ref)
    g = torch.randn_like(y)
    (y * g).sum().backward()
    (y_ref * g).sum().backward()
    for (n, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
        assert rel(p.grad, q.grad) < 1e-3, (n, rel(p.grad, q.grad))
    for (n, b), (_, c) in zip(model.named_buffers(), ref.named_buffers()):
        assert torch.allclose(b.float(), c.float(), rtol=1e-4, atol=1e-5), n


def test_swap_keeps_parameters_and_state_dict():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.LayerNorm(8), torch.nn.RMSNorm(8)).cuda()
    params = [id(p) for p in model.parameters()]
    sd = {k: v.clone() for k, v in model.state_dict().items()}
    assert loom.torch.swap(model) == 2
    assert isinstance(model[1], lnn.LayerNorm) and isinstance(model[2], lnn.RMSNorm)
    assert [id(p) for p in model.parameters()] == params
    assert all(torch.equal(v, sd[k]) for k, v in model.state_dict().items())


def test_timm_convnext_swap():
    # loom's norms in ConvNeXt: in f32 as PyTorch's; under f16 autocast no further from an f32
    # run than PyTorch's own autocast run (whose norms compute and return f32).
    timm = pytest.importorskip("timm")
    torch.manual_seed(0)
    stock = timm.create_model("convnext_atto", pretrained=False).cuda()
    mine = copy.deepcopy(stock)
    assert loom.torch.swap(mine) > 0
    x = torch.randn(2, 3, 64, 64, device="cuda").to(memory_format=torch.channels_last)
    g = torch.randn(2, 1000, device="cuda")

    def grads(model, amp):
        model.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
            y = model(x)
        (y.float() * g).sum().backward()
        return y.float(), [p.grad.clone() for p in model.parameters()]

    y32, g32 = grads(stock, False)
    y, gm = grads(mine, False)
    assert rel(y, y32) < 1e-4
    assert max(rel(a, b) for a, b in zip(gm, g32)) < 1e-3
    ys, gs = grads(stock, True)
    ym, gm = grads(mine, True)
    assert rel(ym, y32) < 2 * rel(ys, y32) + 1e-3
    for i, (a, b, r) in enumerate(zip(gm, gs, g32)):
        assert rel(a, r) < 2 * rel(b, r) + 1e-2, f"parameter {i}: loom {rel(a, r):.3g}, torch {rel(b, r):.3g}"


def test_swap_only_some_kinds():
    # swap(only=...) takes the named families and leaves the rest PyTorch's / timm's; timm's
    # classes stay themselves (subclassed: isinstance holds).
    timm = pytest.importorskip("timm")
    model = torch.nn.Sequential(timm.layers.LayerNorm2d(8), timm.layers.LayerNorm(8), torch.nn.LayerNorm(8),
                                timm.layers.LayerNorm2d(8), torch.nn.GroupNorm(2, 8))
    assert loom.torch.swap(model, only="LayerNorm2d") == 2
    assert [type(m).__module__.split(".")[0] for m in model] == ["loom", "timm", "torch", "loom", "torch"]
    assert isinstance(model[0], timm.layers.LayerNorm2d) and isinstance(model[3], timm.layers.LayerNorm2d)
    # The LayerNorm2d are loom's already: the two LayerNorm (timm's, PyTorch's) are what is left.
    assert loom.torch.swap(model, only=["LayerNorm", "LayerNorm2d"]) == 2
    assert isinstance(model[1], timm.layers.LayerNorm) and isinstance(model[2], lnn.LayerNorm)
    assert not isinstance(model[4], lnn.GroupNorm)
    with pytest.raises(ValueError, match=r"only=\['LayerNorm3d'\] names no family"):
        loom.torch.swap(model, only={"LayerNorm3d"})


def _three_way(stock, mine, run):
    """f32 like PyTorch's; under autocast no further from the f32 run than PyTorch's own."""
    y32, g32 = run(stock, False)
    y, g = run(mine, False)
    assert rel(y, y32) < 1e-4
    assert max(rel(a, b) for a, b in zip(g, g32)) < 2e-3
    ys, gs = run(stock, True)
    ym, gm = run(mine, True)
    assert rel(ym, y32) < 2 * rel(ys, y32) + 1e-3
    for i, (a, b, r) in enumerate(zip(gm, gs, g32)):
        assert rel(a, r) < 2 * rel(b, r) + 1e-2, f"parameter {i}: loom {rel(a, r):.3g}, torch {rel(b, r):.3g}"


def test_llama_rms_norm():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=4, vocab_size=1000)
    torch.manual_seed(0)
    stock = transformers.LlamaModel(cfg).cuda()
    mine = copy.deepcopy(stock)
    assert loom.torch.swap(mine) == 5  # two a layer and the final norm
    ids = torch.randint(0, 1000, (3, 37), device="cuda")
    g = torch.randn(3, 37, 256, device="cuda")

    def run(model, amp):
        model.zero_grad()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            y = model(ids).last_hidden_state.float()
        (y * g).sum().backward()
        return y, [p.grad.clone() for p in model.parameters() if p.grad is not None]

    _three_way(stock, mine, run)


def test_resnet_batch_norm_training():
    timm = pytest.importorskip("timm")
    torch.manual_seed(0)
    stock = timm.create_model("resnet18", pretrained=False).cuda().to(memory_format=torch.channels_last)
    mine = copy.deepcopy(stock)
    assert loom.torch.swap(mine) == 20
    x = torch.randn(8, 3, 64, 64, device="cuda").to(memory_format=torch.channels_last)
    g = torch.randn(8, 1000, device="cuda")

    def run(model, amp):
        model.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
            y = model(x).float()
        (y * g).sum().backward()
        return y, [p.grad.clone() for p in model.parameters()]

    _three_way(stock, mine, run)
    # Four training steps each: the running statistics and counters alike.
    for (n, a), (_, b) in zip(mine.named_buffers(), stock.named_buffers()):
        if a.is_floating_point():
            assert rel(a, b) < 1e-3, n
        else:
            assert torch.equal(a, b), n


@pytest.mark.parametrize("make,shape,dtype,nhwc", [
    (lambda nn: nn.LayerNorm(1000), (1531, 1000), torch.float16, False),
    (lambda nn: nn.GroupNorm(8, 64), (3, 64, 17, 19), torch.float32, True),
    (lambda nn: nn.BatchNorm2d(64), (5, 64, 14, 14), torch.float32, False),
])
def test_training_step_in_a_cuda_graph(make, shape, dtype, nhwc):
    # Forward, backward and SGD captured in one CUDA graph (torch.cuda.graph's global mode, as
    # torch.compile's reduce-overhead mode records them): the backward's first launch on the
    # capture stream allocates loom's workspaces there; replays on fresh inputs match PyTorch's
    # module stepped the same way in eager.
    ref = make(torch.nn).cuda().to(dtype)
    mine = make(lnn).cuda().to(dtype)
    mine.load_state_dict(ref.state_dict())
    fmt = torch.channels_last if nhwc else torch.contiguous_format
    x = torch.randn(*shape, device="cuda", dtype=dtype).contiguous(memory_format=fmt)
    dy = torch.randn_like(x)
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (ref, mine)]

    def step(m, opt):
        opt.zero_grad(set_to_none=False)
        m(x).backward(dy)
        opt.step()

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step(mine, opts[1])
            step(ref, opts[0])
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):  # runs nothing
        step(mine, opts[1])
    for _ in range(3):
        x.copy_(torch.randn_like(x))
        dy.copy_(torch.randn_like(dy))
        g.replay()
        step(ref, opts[0])
        torch.cuda.synchronize()
        for p, q in zip(mine.parameters(), ref.parameters()):
            assert rel(p, q) < TOL[dtype]
        for b, c in zip(mine.buffers(), ref.buffers()):
            assert rel(b.float(), c.float()) < TOL[dtype]


def test_double_backward_is_refused_not_silently_zero():
    # loom's norms are differentiable once: a gradient penalty (create_graph=True, then a backward
    # through the gradient) raises instead of dropping loom's part of the second derivative.
    m = lnn.LayerNorm(64).cuda()
    x = torch.randn(8, 64, device="cuda", requires_grad=True)
    with pytest.raises(RuntimeError, match="once"):
        (g,) = torch.autograd.grad(m(x).pow(3).sum(), x, create_graph=True)
        g.sum().backward()
    # The backward op called directly on tensors that want a gradient refuses to give one.
    with torch.no_grad():
        _, mean, rstd = torch.ops.loom.layer_norm(x, m.weight, m.bias, 1e-5)
        dy = torch.randn(8, 64, device="cuda")
        dx, dw, db = torch.ops.loom.layer_norm_backward(dy, x, mean, rstd, m.weight, m.bias)
    ref_dx = torch.autograd.grad(torch.nn.functional.layer_norm(x, (64,), m.weight, m.bias), x, dy)[0]
    assert rel(dx, ref_dx) < 1e-4
    with pytest.raises(RuntimeError, match="has no derivative"):
        dx, _, _ = torch.ops.loom.layer_norm_backward(dy.requires_grad_(), x, mean, rstd, m.weight, m.bias)
        dx.sum().backward()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_forward_and_backward_against_pytorch(dtype, reduction, smoothing):
    n, c = 1000, 50257
    x = torch.randn(n, c, device="cuda", dtype=dtype)
    t = torch.randint(0, c, (n,), device="cuda")
    t[::7] = -100  # ignored rows
    xs, xr = x.clone().requires_grad_(), x.clone().requires_grad_()
    got = loom.torch.cross_entropy(xs, t, reduction=reduction, label_smoothing=smoothing)
    want = F.cross_entropy(xr.float(), t, reduction=reduction, label_smoothing=smoothing).to(dtype)
    assert got.dtype == dtype and got.shape == want.shape
    assert rel(got, want) < TOL[dtype]
    g = torch.randn_like(got)
    (dx,) = torch.autograd.grad(got, xs, g)
    (dr,) = torch.autograd.grad(want, xr, g)
    assert rel(dx, dr) < 2 * TOL[dtype]
    m = loom.torch.CrossEntropyLoss(reduction=reduction, label_smoothing=smoothing)
    assert rel(m(x, t), want) < TOL[dtype]
    # Class weights go to PyTorch's own.
    w = torch.rand(c, device="cuda")
    assert rel(loom.torch.cross_entropy(x.float(), t, weight=w), F.cross_entropy(x.float(), t, weight=w)) < 1e-5
