#!/usr/bin/env python3
"""What a kernel of a given size can reach: copy bandwidth against the bytes moved.

Times, the way bench/peer.py and `loom bench` do (triton.testing.do_bench: L2 flushed before
each launch, CUDA events around it, median), a device-to-device copy of B bytes read + B written
for a range of B by three kernels: PyTorch's `copy_`, the best of a small sweep of Triton copy
kernels, and loom's own pointwise kernel (bench/square.loom: y = x * x in f16, so the same
bytes). A normalization kernel moving the same bytes is judged against these, not only against
the 512 MiB copy. Run on the GPU machine from the repo root with .device carried:
  python3 bench/ceiling.py [--loom .device/bin/loom]
With --add DT:N,... it times instead an add of two N-element DT vectors into a third (two
tensors read, one written: the traffic of a backward norm's x and dy in, dx out) by PyTorch's
`torch.add(out=)`, the best of a sweep of Triton add kernels, and loom's `add` built-in: the
ceiling of a kernel moving a backward workload's bytes in the same proportions.
"""
import argparse
import json
import subprocess

import torch
import triton
import triton.language as tl
from triton.testing import do_bench


@triton.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=m), mask=m)


@triton.jit
def add_kernel(a, b, c, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(c + offs, tl.load(a + offs, mask=m) + tl.load(b + offs, mask=m), mask=m)


DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}


def ms_of(fn):
    return float(do_bench(fn, warmup=25, rep=100, return_mode="median"))


def best_triton(kernel, args, n):
    """(ms, BLOCK, warps): the fastest of a small sweep of one-tile-per-program launches."""
    best = None
    for block, warps in [(1024, 4), (2048, 4), (4096, 4), (4096, 8), (8192, 8), (16384, 16)]:
        grid = (triton.cdiv(n, block),)
        f = lambda: kernel[grid](*args, n, BLOCK=block, num_warps=warps)
        f()
        t = ms_of(f)
        if best is None or t < best[0]:
            best = (t, block, warps)
    return best


def loom_bench(loom, fusion, extra):
    try:
        out = subprocess.run([loom, "bench", fusion, *extra, "--json"],
                             capture_output=True, text=True, timeout=120)
        j = json.loads(out.stdout.strip().splitlines()[-1])
        return {"GBps": round(j["gbps"]), "us": round(1e3 * j["time_ms"], 1), "grid": j["kernel"]["grid"],
                "block": j["kernel"]["block"]} if j.get("ok") else j.get("error")
    except Exception as e:  # noqa: BLE001
        return f"error: {e}"


def adds(loom, specs):
    """Two-in, one-out pointwise adds of the given dtypes and element counts."""
    for spec in specs.split(","):
        dt, n = spec.split(":")
        n = int(n)
        a = torch.randn(n, device="cuda", dtype=DTYPES[dt])
        b = torch.randn_like(a)
        c = torch.empty_like(a)
        bytes_moved = 3 * n * a.element_size()
        gbps = lambda ms: round(bytes_moved / (ms * 1e6))
        t_torch = ms_of(lambda: torch.add(a, b, out=c))
        best = best_triton(add_kernel, (a, b, c), n)
        r = {"dtype": dt, "elements": n, "MB_moved": round(bytes_moved / 1e6, 1), "torch_GBps": gbps(t_torch),
             "triton_GBps": gbps(best[0]), "triton_cfg": f"BLOCK={best[1]} warps={best[2]}",
             "loom": loom_bench(loom, "add", ["--dtype", dt, "--dim", f"N={n}"])}
        print(json.dumps(r), flush=True)
        del a, b, c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loom", default=".device/bin/loom")
    ap.add_argument("--fusion", default="bench/square.loom")
    ap.add_argument("--add", default=None, help="DT:N,... two-in one-out adds instead of copies")
    args = ap.parse_args()
    if args.add:
        adds(args.loom, args.add)
        return
    rows = []
    # Bytes read (= bytes written): the workloads' sizes, f16/bf16 N x D.
    for mb_read, label in [(8.4, "4096x1024"), (16.8, "4096x2048 / 32768x256"), (33.6, "4096x4096"),
                           (67.1, "4096x8192"), (134.2, "4096x16384"), (268.4, "32768x4096")]:
        n = int(mb_read * 1e6) // 2 // 1024 * 1024
        src = torch.randn(n, device="cuda", dtype=torch.float16)
        dst = torch.empty_like(src)
        bytes_moved = 4 * n
        t_torch = ms_of(lambda: dst.copy_(src))
        best = best_triton(copy_kernel, (src, dst), n)
        loom = loom_bench(args.loom, args.fusion, ["--dim", f"N={n}"])
        gbps = lambda ms: bytes_moved / (ms * 1e6)
        r = {"read_MB": round(2 * n / 1e6, 1), "like": label, "torch_GBps": round(gbps(t_torch)),
             "triton_GBps": round(gbps(best[0])), "triton_cfg": f"BLOCK={best[1]} warps={best[2]}",
             "torch_us": round(1e3 * t_torch, 1), "loom": loom}
        rows.append(r)
        print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
