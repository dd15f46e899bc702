"""Where a training step of a timm model goes with loom's norms and with PyTorch's: the GPU time
of the norm kernels (loom's, aten's) and of everything, and the host time per step, from
torch.profiler over a few AMP steps.   python3 bench/torch_profile_norms.py [--model convnext_base]
[--layout nhwc]"""
import argparse
import copy
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
import torch  # noqa: E402
import timm  # noqa: E402

import loom.torch  # noqa: E402


def step(model, x, y, opt):
    with torch.autocast("cuda", dtype=torch.float16):
        loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="convnext_base")
    ap.add_argument("--layout", default="nhwc")
    ap.add_argument("--batch", type=int, default=64)
    a = ap.parse_args()
    fmt = torch.channels_last if a.layout == "nhwc" else torch.contiguous_format
    base = timm.create_model(a.model, pretrained=False).cuda().to(memory_format=fmt)
    x = torch.randn(a.batch, 3, 224, 224, device="cuda").contiguous(memory_format=fmt)
    y = torch.randint(0, 1000, (a.batch,), device="cuda")
    for norms in ("torch", "loom"):
        model = copy.deepcopy(base)
        if norms == "loom":
            loom.torch.swap(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.001)
        for _ in range(3):
            step(model, x, y, opt)
        torch.cuda.synchronize()
        t = time.perf_counter()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(3):
                step(model, x, y, opt)
            torch.cuda.synchronize()
        wall = (time.perf_counter() - t) / 3 * 1e3
        ev = prof.key_averages()
        gpu = sum(e.device_time_total for e in ev if e.device_type == torch.autograd.DeviceType.CUDA) / 3e3
        rows = sorted((e for e in ev if e.device_type == torch.autograd.DeviceType.CUDA),
                      key=lambda e: -e.device_time_total)
        print(f"== {norms} norms, {a.model} {a.layout} batch {a.batch}: wall {wall:.1f} ms/step (profiled), "
              f"GPU kernels {gpu:.1f} ms/step")
        for e in rows[:12]:
            print(f"  {e.device_time_total / 3e3:8.2f} ms/step  {e.count // 3:5d}x  {e.key[:100]}")
        norm = [e for e in rows if "norm" in e.key.lower() or e.key.startswith("loom")]
        print(f"  norm kernels: {sum(e.device_time_total for e in norm) / 3e3:.2f} ms/step over "
              f"{sum(e.count for e in norm) // 3} launches")
        cpu = [e for e in ev if e.key.startswith("loom::")]
        for e in sorted(cpu, key=lambda e: -e.cpu_time_total)[:8]:
            print(f"  host {e.key:<32} {e.count // 3:4d}x  {e.cpu_time_total / max(1, e.count):8.1f} us/call")


if __name__ == "__main__":
    main()
