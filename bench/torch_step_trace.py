"""Host time inside loom's Python layers during real training steps (no profiler: perf_counter
around each layer, summed), per call and per step, to set beside bench/python_call_host.py's
times of the same calls alone.   python3 bench/torch_step_trace.py [--layout nhwc] [--steps 10]"""
import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch_step_host as host  # noqa: E402  (its path set-up, model and training step)
from torch_step_host import loom, timm, torch  # noqa: E402

from loom import _lib, fusion, launch  # noqa: E402
from loom.torch import ops  # noqa: E402

spent = collections.defaultdict(lambda: [0.0, 0])


def timed(name, fn):
    def wrapper(*args, **kw):
        t = time.perf_counter()
        try:
            return fn(*args, **kw)
        finally:
            s = spent[name(args) if callable(name) else name]
            s[0] += time.perf_counter() - t
            s[1] += 1
    return wrapper


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layout", default="nhwc")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--batch", type=int, default=64)
    a = ap.parse_args()
    fmt = torch.channels_last if a.layout == "nhwc" else torch.contiguous_format
    model = timm.create_model("convnext_base", pretrained=False).cuda().to(memory_format=fmt)
    loom.torch.swap(model)
    x = torch.randn(a.batch, 3, 224, 224, device="cuda").contiguous(memory_format=fmt)
    y = torch.randint(0, 1000, (a.batch,), device="cuda")
    opt, scaler = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9), torch.amp.GradScaler("cuda")
    for _ in range(3):
        host.train_step(model, opt, scaler, x, y)
    ops._Op.__call__ = timed(lambda args: "op " + args[0].qualname, ops._Op.__call__)
    fusion.Fusion.run = timed("Fusion.run", fusion.Fusion.run)
    launch.LaunchPlan.allocate = timed("LaunchPlan.allocate", launch.LaunchPlan.allocate)
    launch.LaunchPlan.launch = timed("LaunchPlan.launch", launch.LaunchPlan.launch)
    _lib.lib.loom_runner_run = timed("ctypes loom_runner_run", _lib.lib.loom_runner_run)
    torch.cuda.synchronize()
    walls, hosts = [], []
    for _ in range(a.steps):
        model.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        host.fwd_bwd(model, x, y)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        hosts.append(t1 - t0)
        walls.append(time.perf_counter() - t0)
    print(f"convnext_base {a.layout}, loom's norms, {a.steps} forward+backward: host enqueue "
          f"{sorted(hosts)[len(hosts) // 2] * 1e3:.2f} ms, wall {sorted(walls)[len(walls) // 2] * 1e3:.2f} ms (median)")
    print(f"  {'layer':<40} {'calls/step':>10} {'us/call':>8} {'ms/step':>8}")
    for k, (t, n) in sorted(spent.items(), key=lambda kv: -kv[1][0]):
        print(f"  {k:<40} {n / a.steps:10.0f} {t / n * 1e6:8.1f} {t / a.steps * 1e3:8.2f}")


if __name__ == "__main__":
    main()
