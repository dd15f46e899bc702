"""Where the time of a timm training step goes, stock norms against loom's (fp16 AMP, GradScaler,
SGD with momentum, as bench/torch_train.py trains): the wall time of a forward + backward
and the host time to enqueue it (from an idle GPU), the wall time of whole training steps back
to back, then torch.profiler's host ops over whole steps side by side (the ops whose host time or
count differs most), and loom's Python functions by own time (cProfile).
    python3 bench/torch_step_host.py [--model convnext_base] [--layout nhwc] [--batch 64]"""
import argparse
import copy
import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
import torch  # noqa: E402
import timm  # noqa: E402

import loom.torch  # noqa: E402


def fwd_bwd(model, x, y):
    with torch.autocast("cuda", dtype=torch.float16):
        loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()


def train_step(model, opt, scaler, x, y):
    with torch.autocast("cuda", dtype=torch.float16):
        loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()


def train_ms(model, opt, scaler, x, y, steps=10):
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(steps):
        train_step(model, opt, scaler, x, y)
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / steps * 1e3


def timed(model, x, y, steps=10):
    """(wall ms a step, host ms a step to enqueue forward + backward from an idle GPU)."""
    walls, hosts = [], []
    for _ in range(steps):
        model.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fwd_bwd(model, x, y)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        hosts.append((t1 - t0) * 1e3)
        walls.append((t2 - t0) * 1e3)
    walls.sort()
    hosts.sort()
    return walls[len(walls) // 2], hosts[len(hosts) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="convnext_base")
    ap.add_argument("--layout", default="nhwc")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    fmt = torch.channels_last if a.layout == "nhwc" else torch.contiguous_format
    base = timm.create_model(a.model, pretrained=False).cuda().to(memory_format=fmt)
    x = torch.randn(a.batch, 3, 224, 224, device="cuda").contiguous(memory_format=fmt)
    y = torch.randint(0, 1000, (a.batch,), device="cuda")
    models = {"torch": copy.deepcopy(base), "loom": copy.deepcopy(base)}
    print(f"{a.model} {a.layout} batch {a.batch}: swapped {loom.torch.swap(models['loom'])} modules")
    opts = {n: (torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9), torch.amp.GradScaler("cuda"))
            for n, m in models.items()}
    for n, m in models.items():
        for _ in range(3):
            train_step(m, *opts[n], x, y)
    for r in range(a.rounds):
        for name, m in models.items():
            wall, host = timed(m, x, y)
            step = train_ms(m, *opts[name], x, y)
            print(f"round {r} {name:<6} forward+backward: wall {wall:7.2f} ms, host enqueue {host:7.2f} ms; "
                  f"training step {step:7.2f} ms", flush=True)
    stats = {}
    for name, m in models.items():
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(3):
                train_step(m, *opts[name], x, y)
            torch.cuda.synchronize()
        stats[name] = {e.key: (e.self_cpu_time_total / 3e3, e.self_device_time_total / 3e3, e.count // 3)
                       for e in prof.key_averages()}
        print(f"== {name}: host self time {sum(v[0] for v in stats[name].values()):.1f} ms a step, "
              f"GPU {sum(v[1] for v in stats[name].values()):.1f} ms")
    none = (0.0, 0.0, 0)
    keys = set(stats["torch"]) | set(stats["loom"])
    for col, what in ((0, "host"), (1, "GPU")):
        delta = sorted(keys, key=lambda k: -abs(stats["loom"].get(k, none)[col] - stats["torch"].get(k, none)[col]))
        print(f"  {what + ' time, largest differences':<70} {'torch ms':>8} {'count':>6} {'loom ms':>8} {'count':>6}")
        for k in delta[:22]:
            t, lo = stats["torch"].get(k, none), stats["loom"].get(k, none)
            print(f"  {k[:70]:<70} {t[col]:8.2f} {t[2]:6d} {lo[col]:8.2f} {lo[2]:6d}")
    prof = cProfile.Profile()
    m = models["loom"]
    torch.cuda.synchronize()
    prof.enable()
    for _ in range(3):
        train_step(m, *opts["loom"], x, y)
    torch.cuda.synchronize()
    prof.disable()
    print("== loom: Python functions over 3 steps, by own time")
    pstats.Stats(prof).sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main()
