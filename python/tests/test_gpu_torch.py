"""The package on the GPU with PyTorch (the GPU machine): runs on torch CUDA tensors against
PyTorch's own ops, in every float dtype, channels-last, odd shapes, on the caller's stream, in
place, and through __cuda_array_interface__. Skipped without torch or a GPU."""
import pytest

import loom

torch = pytest.importorskip("torch")
if not torch.cuda.is_available() or not loom.gpu_available():
    pytest.skip("no GPU", allow_module_level=True)
F = torch.nn.functional

TOL = {torch.float16: 4e-3, torch.bfloat16: 3e-2, torch.float32: 2e-5}


def close(got, want, dtype):
    got, want = got.double(), want.double()
    err = (got - want).norm() / max(want.norm(), 1e-30)
    assert err < TOL[dtype], f"relative error {err:.3g} over {TOL[dtype]}"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("shape", [(1, 1024), (1531, 1000), (3, 4096)])
def test_layer_norm(dtype, shape):
    name = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32"}[dtype]
    f = loom.Fusion.builtin("layer_norm", name)
    x = torch.randn(*shape, device="cuda", dtype=dtype)
    w = torch.randn(shape[1], device="cuda", dtype=dtype)
    b = torch.randn(shape[1], device="cuda", dtype=dtype)
    (y,) = f.run(x, w, b)
    torch.cuda.synchronize()
    assert y.dtype == dtype and y.shape == x.shape
    close(y, F.layer_norm(x.float(), (shape[1],), w.float(), b.float(), 1e-5), dtype)


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_group_norm_layouts(layout):
    f = loom.Fusion.builtin("group_norm", "f16")
    x = torch.randn(3, 64, 17, 19, device="cuda", dtype=torch.float16)
    if layout == "nhwc":
        x = x.to(memory_format=torch.channels_last)
    w = torch.randn(64, device="cuda")
    b = torch.randn(64, device="cuda")
    (y,) = f.run(x, w, b)
    torch.cuda.synchronize()
    close(y, F.group_norm(x.float(), 32, w, b, 1e-5), torch.float16)


def test_rms_norm_on_a_side_stream():
    f = loom.Fusion.builtin("rms_norm", "bf16")
    x = torch.randn(4097, 2048, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(2048, device="cuda", dtype=torch.bfloat16)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        (y,) = f.run(x, w)  # torch's current stream: s
    s.synchronize()
    ref = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()
    close(y, ref, torch.bfloat16)


def test_batch_norm_updates_running_stats_in_place():
    f = loom.Fusion.builtin("batch_norm", "f32")
    x = torch.randn(8, 16, 9, 11, device="cuda")
    rm, rv = torch.randn(16, device="cuda"), torch.rand(16, device="cuda") + 0.5
    w, b = torch.randn(16, device="cuda"), torch.randn(16, device="cuda")
    rm_t, rv_t = rm.clone(), rv.clone()
    y, new_rm, new_rv = f.run(x, rm, rv, w, b)
    torch.cuda.synchronize()
    assert new_rm.data_ptr() == rm.data_ptr() and new_rv.data_ptr() == rv.data_ptr()
    ref = F.batch_norm(x, rm_t, rv_t, w, b, training=True, momentum=0.1, eps=1e-5)
    close(y, ref, torch.float32)
    close(rm, rm_t, torch.float32)
    close(rv, rv_t, torch.float32)


def test_layer_norm_backward_outputs_and_specs():
    f = loom.Fusion.builtin("layer_norm_backward", "f16")
    N, D = 333, 768
    x = torch.randn(N, D, device="cuda", dtype=torch.float16, requires_grad=True)
    w = torch.randn(D, device="cuda", dtype=torch.float16, requires_grad=True)
    b = torch.randn(D, device="cuda", dtype=torch.float16, requires_grad=True)
    dy = torch.randn(N, D, device="cuda", dtype=torch.float16)
    xf = x.detach().float()
    mean = xf.mean(-1, keepdim=True)
    rstd = torch.rsqrt(xf.var(-1, unbiased=False, keepdim=True) + 1e-5)
    specs = f.output_specs(dy, x.detach(), mean, rstd, w.detach(), b.detach())
    assert [o["name"] for o in specs["outputs"]] == ["dx", "dw", "db"] and specs["kernels"] == 1
    dx, dw, db = f.run(dy, x.detach(), mean, rstd, w.detach(), b.detach())
    y = F.layer_norm(x.float(), (D,), w.float(), b.float(), 1e-5)
    y.backward(dy.float())
    torch.cuda.synchronize()
    close(dx, x.grad, torch.float16)
    # dw and db: sums over 333 rows in another order than PyTorch's (f32 either way).
    assert (dw.double() - w.grad.double()).norm() / w.grad.double().norm() < 1e-4
    assert (db.double() - b.grad.double()).norm() / b.grad.double().norm() < 1e-4


def test_cuda_array_interface_with_out():
    class Cai:  # anything with __cuda_array_interface__ (CuPy, Numba, ...)
        def __init__(self, t):
            self.t = t
            self.__cuda_array_interface__ = t.__cuda_array_interface__
    f = loom.Fusion.builtin("add", "f32")
    a = torch.randn(70, device="cuda")[::2]  # strided: every other element
    b = torch.randn(35, device="cuda")
    out = torch.empty(35, device="cuda")
    f.run(Cai(a), Cai(b), out=[Cai(out)])
    torch.cuda.synchronize()
    torch.testing.assert_close(out, a + b)
    # A pointer the driver knows as no GPU's (host memory dressed as a GPU array) is refused
    # before any launch, naming the argument.
    host = torch.randn(35)
    fake = Cai(b)
    fake.__cuda_array_interface__ = dict(b.__cuda_array_interface__, data=(host.data_ptr(), False))
    with pytest.raises(loom.InputError, match=r"input `y`: Cai at 0x[0-9a-f]+: .*is no memory the CUDA driver knows"):
        f.run(Cai(a), fake, out=[Cai(out)])
    # Page-locked host memory: every GPU reaches it, and loom reads it there.
    pinned = b.cpu().pin_memory()
    held = Cai(b)
    held.__cuda_array_interface__ = dict(b.__cuda_array_interface__, data=(pinned.data_ptr(), False))
    f.run(Cai(a), held, out=[Cai(out)])
    torch.cuda.synchronize()
    torch.testing.assert_close(out, a + b)
    # An empty view is not asked for its GPU (it may point past its allocation).
    e = torch.empty(0, device="cuda")
    g = torch.empty(0, device="cuda")
    f.run(Cai(e), Cai(e), out=[Cai(g)])


def test_errors():
    f = loom.Fusion.builtin("layer_norm", "f16")
    x = torch.randn(4, 1024, device="cuda", dtype=torch.float16)
    w = torch.randn(1024, device="cuda", dtype=torch.float16)
    with pytest.raises(loom.ArgumentError, match="on cpu"):
        f.run(x.cpu(), w, w)
    with pytest.raises(loom.InputError, match="`w`"):
        f.run(x, w[:1000], w)
    with pytest.raises(loom.InputError, match="`w`"):
        f.run(x, w.float(), w)
    with pytest.raises(loom.InputError, match="output `y`"):
        f.run(x, w, w, out=[torch.empty(4, 1000, device="cuda", dtype=torch.float16)])


def test_repeated_calls_new_pointers_and_out():
    # The hot path reuses one signature's structs: each call must see its own tensors.
    f = loom.Fusion.builtin("layer_norm", "f32")
    for rows in [5, 7, 5, 5]:
        x = torch.randn(rows, 256, device="cuda")
        w, b = torch.randn(256, device="cuda"), torch.randn(256, device="cuda")
        (y,) = f.run(x, w, b)
        y2 = torch.full_like(y, float("nan"))
        f.run(x, w, b, out=[y2])
        wide = torch.empty(rows, 512, device="cuda")[:, ::2]  # other strides than loom writes
        with pytest.raises(loom.InputError, match="output `y`"):
            f.run(x, w, b, out=[wide])
        torch.cuda.synchronize()
        ref = F.layer_norm(x, (256,), w, b, 1e-5)
        close(y, ref, torch.float32)
        close(y2, ref, torch.float32)


def test_threads_sharing_one_fusion():
    """Threads running one fusion (one plan, one set of launch structs) each get their own
    inputs' results: the plan's calls take turns."""
    import threading
    f = loom.Fusion.builtin("layer_norm", "f32")
    f.run(*[torch.randn(s, device="cuda") for s in ((64, 1000), (1000,), (1000,))])  # compiled once
    errors = []

    def work(seed):
        try:
            g = torch.Generator(device="cuda").manual_seed(seed)
            stream = torch.cuda.Stream()
            with torch.cuda.stream(stream):
                for _ in range(50):
                    x = torch.randn(64, 1000, device="cuda", generator=g)
                    w = torch.randn(1000, device="cuda", generator=g)
                    b = torch.randn(1000, device="cuda", generator=g)
                    (y,) = f.run(x, w, b)
                    want = F.layer_norm(x, (1000,), w, b, 1e-5)
                    stream.synchronize()
                    close(y, want, torch.float32)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


_ON_LAST_GPU = r"""
import sys
import torch
import loom
import loom.torch
F = torch.nn.functional
n = torch.cuda.device_count()
dev = torch.device("cuda", n - 1)
if sys.argv[1] == "set_device":
    torch.cuda.set_device(dev)  # as a data-parallel process does; else cuda:0 stays current
assert loom.selected_device() == 0  # nothing chosen yet
f = loom.Fusion.builtin("layer_norm", "f16")
x = torch.randn(1531, 1000, device=dev, dtype=torch.float16)
w, b = torch.randn(1000, device=dev, dtype=torch.float16), torch.randn(1000, device=dev, dtype=torch.float16)
(y,) = f.run(x, w, b)
want = F.layer_norm(x.float(), (1000,), w.float(), b.float(), 1e-5)
assert y.device == dev and (y.double() - want.double()).norm() / want.double().norm() < 4e-3
assert loom.selected_device() == n - 1
# The module's backward runs on autograd's thread for that GPU.
ref = torch.nn.LayerNorm(1000, device=dev)
mod = loom.torch.nn.LayerNorm(1000, device=dev)
with torch.no_grad():
    ref.weight.normal_()
    ref.bias.normal_()
mod.load_state_dict(ref.state_dict())
x0, dy = torch.randn(64, 1000, device=dev), torch.randn(64, 1000, device=dev)
xs = [x0.clone().requires_grad_() for _ in range(2)]
for m, xi in zip((ref, mod), xs):
    m(xi).backward(dy)
torch.cuda.synchronize(dev)
for g_ref, g in ((xs[0].grad, xs[1].grad), (ref.weight.grad, mod.weight.grad)):
    assert (g - g_ref).norm() / g_ref.norm() < 1e-4, (g - g_ref).norm() / g_ref.norm()
if n > 1:
    try:
        f.run(x.to("cuda:0"), w.to("cuda:0"), b.to("cuda:0"))
        raise SystemExit("a tensor on another GPU was taken")
    except loom.InputError as e:
        assert f"loom runs on GPU {n - 1} in this process" in str(e) and "cuda:0" in str(e), str(e)
print("ok")
"""


@pytest.mark.parametrize("how", ["set_device", "tensors_only"])
def test_runs_on_the_last_gpu_in_a_process_of_its_own(how):
    # loom runs on one GPU a process (the first one it works on): a fresh process takes the
    # machine's last GPU, as rank N-1 of a data-parallel job would (cuda:0 where there is one).
    import os
    import subprocess
    import sys
    from pathlib import Path
    r = subprocess.run([sys.executable, "-c", _ON_LAST_GPU, how], capture_output=True, text=True,
                       cwd=Path(__file__).resolve().parents[1], env=dict(os.environ), timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr
