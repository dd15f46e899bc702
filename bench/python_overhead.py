"""Host time per call of loom from Python on torch CUDA tensors, layer by layer, beside PyTorch
eager: back-to-back calls of a cached kernel on tiny inputs (the host is the bottleneck), one
synchronize at the end.   python3 bench/python_overhead.py"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
import loom  # noqa: E402
import loom.torch  # noqa: E402
import torch  # noqa: E402

F = torch.nn.functional


def per_call_us(fn, n=2000):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / n * 1e6


def main():
    x = torch.randn(4, 1024, device="cuda", dtype=torch.float16)
    w = torch.randn(1024, device="cuda")
    b = torch.randn(1024, device="cuda")
    f = loom.Fusion.op("layer_norm", x="f16", w="f32", b="f32", eps=1e-5)
    out = f.run(x, w, b)
    plan = next(iter(f._plans.values()))
    stream = torch.cuda.current_stream().cuda_stream
    raw = loom._lib.lib.loom_runner_run  # noqa
    args = (plan.runner, plan.ins.array, plan.ins.count, plan.outs.array, plan.outs.count, stream)
    xg = x.clone().requires_grad_()
    wg, bg = w.clone().requires_grad_(), b.clone().requires_grad_()
    mod = loom.torch.nn.LayerNorm(1024).cuda()
    ref = torch.nn.LayerNorm(1024).cuda().half()

    def fwd_bwd(m):
        def go():
            m(xg).sum().backward()
        return go

    def op_fwd_bwd():
        loom.torch.ops.layer_norm(xg, wg, bg, 1e-5)[0].sum().backward()

    rows = [
        ("C ABI loom_runner_run alone (ctypes)", lambda: raw(*args)),
        ("Fusion.run(..., out=, stream=)", lambda: f.run(x, w, b, out=out, stream=stream)),
        ("Fusion.run(x, w, b) (allocates)", lambda: f.run(x, w, b)),
        ("torch.ops.loom.layer_norm (no grad)", lambda: torch.ops.loom.layer_norm(x, w, b, 1e-5)),
        ("loom.torch.ops.layer_norm fwd+bwd", op_fwd_bwd),
        ("loom.torch.nn.LayerNorm fwd+bwd", fwd_bwd(mod)),
        ("torch F.layer_norm (no grad)", lambda: F.layer_norm(x, (1024,), w.half(), b.half(), 1e-5)),
        ("torch nn.LayerNorm fwd+bwd", fwd_bwd(ref)),
        ("torch x.sum().backward() alone", lambda: xg.sum().backward()),
    ]
    print(f"{'call':<42} {'us/call':>8}")
    for name, fn in rows:
        with torch.no_grad() if "no grad" in name or "Fusion" in name or "C ABI" in name else torch.enable_grad():
            print(f"{name:<42} {per_call_us(fn, 1000):8.1f}")


if __name__ == "__main__":
    main()
