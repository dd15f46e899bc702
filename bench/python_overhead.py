"""Host time per call of loom from Python (the package over the C ABI) on torch CUDA tensors,
beside the same op in PyTorch eager: back-to-back calls of a cached kernel on tiny inputs, so the
host is the bottleneck; one synchronize at the end.   python3 bench/python_overhead.py"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
import loom  # noqa: E402
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
    w = torch.randn(1024, device="cuda", dtype=torch.float16)
    b = torch.randn(1024, device="cuda", dtype=torch.float16)
    f = loom.Fusion.builtin("layer_norm", "f16")
    (y,) = f.run(x, w, b)
    out = (y,)
    stream = torch.cuda.current_stream().cuda_stream
    plan = next(iter(f._plans.values()))  # the structs of this signature, pointers written
    plan.launch((x, w, b), out, stream)
    raw = loom._lib.lib.loom_runner_run
    args = (plan.runner, plan.ins.array, plan.ins.count, plan.outs.array, plan.outs.count, stream)
    rows = [
        ("C ABI loom_runner_run alone (ctypes)", lambda: raw(*args)),
        ("loom f.run(x, w, b) (allocates y)", lambda: f.run(x, w, b)),
        ("loom f.run(..., out=, stream=)", lambda: f.run(x, w, b, out=out, stream=stream)),
        ("torch F.layer_norm (eager)", lambda: F.layer_norm(x, (1024,), w, b, 1e-5)),
    ]
    print(f"{'call':<40} {'us/call':>8}")
    for name, fn in rows:
        print(f"{name:<40} {per_call_us(fn):8.1f}")


if __name__ == "__main__":
    main()
