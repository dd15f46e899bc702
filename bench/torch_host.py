"""Host time a call of loom.torch's modules beside PyTorch's own, with the GPU idle (small
tensors): no grad, forward with grad, forward + backward, per module, one process. Which path
loom.torch took (the compiled extension, or ctypes) is printed first; run it twice, the second
time with LOOM_TORCH_EXTENSION=0, for the two paths. `--python-function` adds LayerNorm through
a thin torch.autograd.Function over the extension's op (the other place autograd could live).

    python3 bench/torch_host.py [--calls 2000] [--rounds 7] [--python-function]
"""
import argparse
import copy
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
import torch  # noqa: E402

import loom.torch  # noqa: E402
from loom.torch import ops  # noqa: E402


def modules():
    cl = torch.channels_last
    yield "LayerNorm", torch.nn.LayerNorm(1024), lambda: torch.randn(4, 1024)
    yield "RMSNorm", torch.nn.RMSNorm(1024), lambda: torch.randn(4, 1024)
    yield "GroupNorm", torch.nn.GroupNorm(8, 64), lambda: torch.randn(2, 64, 8, 8).to(memory_format=cl)
    yield "BatchNorm2d", torch.nn.BatchNorm2d(64), lambda: torch.randn(2, 64, 8, 8).to(memory_format=cl)
    try:
        import timm
        yield "LayerNorm2d (timm)", timm.layers.LayerNorm2d(64), lambda: torch.randn(2, 64, 8, 8)
        yield "BatchNormAct2d (timm)", timm.layers.BatchNormAct2d(64), lambda: torch.randn(2, 64, 8, 8).to(memory_format=cl)
    except ImportError:
        pass


def round_us(fn, calls):
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / calls * 1e6


def paired_us(fns, calls, rounds):
    """Median µs a call of each of fns, their rounds taken in turn (the host drifts over seconds)."""
    for fn in fns:
        for _ in range(20):
            fn()
    torch.cuda.synchronize()
    times = [[] for _ in fns]
    for _ in range(rounds):
        for t, fn in zip(times, fns):
            t.append(round_us(fn, calls))
    return [statistics.median(t) for t in times]


def modes(m, x):
    xg = x.clone().requires_grad_()

    def no_grad():
        with torch.no_grad():
            m(x)

    def fwd_grad():
        m(xg)

    def fwd_bwd():
        m(xg).sum().backward()

    return {"no grad": no_grad, "fwd with grad": fwd_grad, "fwd+bwd": fwd_bwd}


class _PyLayerNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b):
        y, mean, rstd = torch.ops.loom.layer_norm(x, w, b, 1e-5)
        ctx.save_for_backward(x, w, b, mean, rstd)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, w, b, mean, rstd = ctx.saved_tensors
        return torch.ops.loom.layer_norm_backward(dy, x, mean, rstd, w, b)


class PyFunctionLayerNorm(torch.nn.LayerNorm):
    def forward(self, x):
        return _PyLayerNorm.apply(x, self.weight, self.bias)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--python-function", action="store_true")
    a = ap.parse_args()
    path = "compiled extension" if ops.EXTENSION is not None else f"ctypes ({ops.WHY})"
    print(f"loom.torch path: {path}; torch {torch.__version__}; {torch.cuda.get_device_name()}")
    print(f"{'module':24} {'mode':14} {'torch us':>9} {'loom us':>9} {'loom/torch':>10}")
    rows = list(modules())
    if a.python_function and ops.EXTENSION is not None:
        rows.append(("LayerNorm (py Function)", torch.nn.LayerNorm(1024), lambda: torch.randn(4, 1024)))
    for name, stock, make in rows:
        stock = stock.cuda().train()
        mine = copy.deepcopy(stock)
        if name.endswith("(py Function)"):
            mine.__class__ = PyFunctionLayerNorm
        else:
            assert loom.torch.swap(mine) == 1, name
        x = make().cuda()
        ms, ml = modes(stock, x), modes(mine, x)
        for mode in ms:
            t, lo = paired_us([ms[mode], ml[mode]], a.calls, a.rounds)
            print(f"{name:24} {mode:14} {t:9.1f} {lo:9.1f} {lo / t:10.2f}", flush=True)


if __name__ == "__main__":
    main()
