"""Host time of one norm call at a real model's shapes, piece by piece, loom beside PyTorch: each
call timed alone on the host (perf_counter around it, no synchronize inside; the GPU drained
every few calls so that no launch waits for a full queue); the median of many.
    python3 bench/python_call_host.py [--shape 64,56,56,128] [--calls 400]"""
import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
import torch  # noqa: E402

import loom  # noqa: E402
import loom.torch  # noqa: E402

F = torch.nn.functional


def host_us(fn, calls, drain=8):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    ts = []
    for i in range(calls):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
        if i % drain == drain - 1:
            torch.cuda.synchronize()
    ts.sort()
    return ts[len(ts) // 2] * 1e6, ts[len(ts) // 10] * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="64,56,56,128")
    ap.add_argument("--calls", type=int, default=400)
    a = ap.parse_args()
    shape = [int(s) for s in a.shape.split(",")]
    d = shape[-1]
    x = torch.randn(*shape, device="cuda", dtype=torch.float16)
    dy = torch.randn_like(x)
    w = torch.randn(d, device="cuda", requires_grad=True)
    b = torch.randn(d, device="cuda", requires_grad=True)
    xg = x.clone().requires_grad_()
    ln = loom.torch.nn.LayerNorm(d).cuda()
    ref = torch.nn.LayerNorm(d).cuda()
    y, mean, rstd = loom.torch.ops.layer_norm(x, w.detach(), b.detach(), 1e-6)
    fwd = loom.Fusion.op("layer_norm", x="f16", w="f32", b="f32", eps=1e-6, rank=x.dim())
    bwd = loom.Fusion.op("layer_norm_backward", x="f16", w="f32", b="f32", rank=x.dim())
    fwd.run(x, w.detach(), b.detach())
    bwd_outs = bwd.run(dy, x, mean, rstd, w.detach(), b.detach())
    plans = {"fwd": next(iter(fwd._plans.values())), "bwd": next(iter(bwd._plans.values()))}
    stream = torch.cuda.current_stream().cuda_stream
    raw = loom._lib.lib.loom_runner_run

    def raw_call(p):
        return lambda: raw(p.runner, p.ins.array, p.ins.count, p.outs.array, p.outs.count, stream)

    def autocast(fn):
        def run():
            with torch.autocast("cuda", dtype=torch.float16):
                return fn()
        return run

    def loom_step():
        ln(xg).backward(dy)

    def torch_step():
        with torch.autocast("cuda", dtype=torch.float16):
            out = ref(xg)
        out.backward(dy.float())

    from loom import launch
    from loom.torch import ops
    w16, b16 = w.detach().half(), b.detach().half()
    w16g, b16g = w16.clone().requires_grad_(), b16.clone().requires_grad_()
    fwd_in = (x, w.detach(), b.detach())
    fwd_out = plans["fwd"].allocate(fwd_in)
    keep = [x.new_empty((1,)) for _ in range(3)]

    class Nop(torch.autograd.Function):  # autograd.Function's own cost: outputs made once, viewed
        @staticmethod
        def forward(ctx, a, b_, c):
            ctx.save_for_backward(a, b_, c)
            out = tuple(k.view(1) for k in keep)
            ctx.mark_non_differentiable(*out[1:])
            return out

        @staticmethod
        def backward(ctx, *g):
            return None, None, None

    pieces = [
        ("ctypes loom_runner_run, forward", raw_call(plans["fwd"])),
        ("ctypes loom_runner_run, backward", raw_call(plans["bwd"])),
        ("Fusion.run forward (allocates)", lambda: fwd.run(x, w.detach(), b.detach())),
        ("Fusion.run backward (allocates)", lambda: bwd.run(dy, x, mean, rstd, w.detach(), b.detach())),
        ("loom.torch.ops.layer_norm, no grad", lambda: loom.torch.ops.layer_norm(x, w.detach(), b.detach(), 1e-6)),
        ("loom.torch.ops.layer_norm, grad (Fn.apply)", lambda: loom.torch.ops.layer_norm(xg, w, b, 1e-6)),
        ("loom.torch.ops.layer_norm_backward", lambda: loom.torch.ops.layer_norm_backward(dy, x, mean, rstd, w, b)),
        ("loom LayerNorm module fwd + backward", loom_step),
        ("torch F.layer_norm autocast, grad", autocast(lambda: F.layer_norm(xg, (d,), w, b, 1e-6))),
        ("torch LayerNorm module autocast fwd + backward", torch_step),
        ("torch F.layer_norm, weight f16, no grad", lambda: F.layer_norm(x, (d,), w16, b16, 1e-6)),
        ("torch F.layer_norm, weight f16, grad", lambda: F.layer_norm(xg, (d,), w16g, b16g, 1e-6)),
        ("piece: ops._fusion lookup", lambda: ops._fusion("layer_norm", x="f16", w="f32", b="f32", eps=1e-6,
                                                          rank=x.dim())),
        ("piece: launch.torch_key(x, w, b)", lambda: launch.torch_key(fwd_in)),
        ("piece: plan.allocate (forward)", lambda: plans["fwd"].allocate(fwd_in)),
        ("piece: launch.current_stream", lambda: launch.current_stream(x)),
        ("piece: plan.launch (forward)", lambda: plans["fwd"].launch(fwd_in, fwd_out, stream)),
        ("piece: Function.apply, 3 outputs, no kernel", lambda: Nop.apply(xg, w, b)),
        ("torch.empty_strided x1", lambda: torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="cuda")),
        ("torch.empty_strided x3", lambda: [torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="cuda")
                                            for _ in range(3)]),
    ]
    print(f"layer_norm over {shape} f16, weight f32; host us a call: median, 10th percentile")
    for name, fn in pieces:
        med, lo = host_us(fn, a.calls)
        print(f"  {name:<48} {med:8.1f} {lo:8.1f}", flush=True)


if __name__ == "__main__":
    main()
