#!/usr/bin/env python3
"""What a kernel of a given size can reach: copy bandwidth against the bytes moved.

Times, the way bench/peer.py and `loom bench` do (triton.testing.do_bench: L2 flushed before
each launch, CUDA events around it, median), a device-to-device copy of B bytes read + B written
for a range of B by three kernels: PyTorch's `copy_`, the best of a small sweep of Triton copy
kernels, and loom's own pointwise kernel (bench/square.loom: y = x * x in f16, so the same
bytes). A normalization kernel moving the same bytes is judged against these, not only against
the 512 MiB copy. Run on the GPU machine from the repo root with .device carried:
  python3 bench/ceiling.py [--loom .device/bin/loom]
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


def ms_of(fn):
    return float(do_bench(fn, warmup=25, rep=100, return_mode="median"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loom", default=".device/bin/loom")
    ap.add_argument("--fusion", default="bench/square.loom")
    args = ap.parse_args()
    rows = []
    # Bytes read (= bytes written): the workloads' sizes, f16/bf16 N x D.
    for mb_read, label in [(8.4, "4096x1024"), (16.8, "4096x2048 / 32768x256"), (33.6, "4096x4096"),
                           (67.1, "4096x8192"), (134.2, "4096x16384"), (268.4, "32768x4096")]:
        n = int(mb_read * 1e6) // 2 // 1024 * 1024
        src = torch.randn(n, device="cuda", dtype=torch.float16)
        dst = torch.empty_like(src)
        bytes_moved = 4 * n
        t_torch = ms_of(lambda: dst.copy_(src))
        best = None
        for block, warps in [(1024, 4), (2048, 4), (4096, 4), (4096, 8), (8192, 8), (16384, 16)]:
            grid = (triton.cdiv(n, block),)
            f = lambda: copy_kernel[grid](src, dst, n, BLOCK=block, num_warps=warps)
            f()
            t = ms_of(f)
            if best is None or t < best[0]:
                best = (t, block, warps)
        loom = None
        try:
            out = subprocess.run([args.loom, "bench", args.fusion, "--dim", f"N={n}", "--json"],
                                 capture_output=True, text=True, timeout=120)
            j = json.loads(out.stdout.strip().splitlines()[-1])
            loom = {"GBps": round(j["gbps"]), "us": round(1e3 * j["time_ms"], 1), "grid": j["kernel"]["grid"],
                    "block": j["kernel"]["block"]} if j.get("ok") else j.get("error")
        except Exception as e:  # noqa: BLE001
            loom = f"error: {e}"
        gbps = lambda ms: bytes_moved / (ms * 1e6)
        r = {"read_MB": round(2 * n / 1e6, 1), "like": label, "torch_GBps": round(gbps(t_torch)),
             "triton_GBps": round(gbps(best[0])), "triton_cfg": f"BLOCK={best[1]} warps={best[2]}",
             "torch_us": round(1e3 * t_torch, 1), "loom": loom}
        rows.append(r)
        print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
