#!/usr/bin/env python3
"""PyTorch eager and torch.compile on the reductions of examples/fusions/{sum_all,column_sum}.loom,
timed as loom bench times (triton.testing.do_bench: L2 flushed, median), GB/s = input read once
+ output written once. Prints one line a workload; run beside `loom bench` in the same call."""
import sys

import torch
from triton.testing import do_bench

CASES = [
    ("sum_all N=67108864 f32", lambda: torch.randn(1 << 26, device="cuda"), lambda x: x.sum(), 4),
    ("column_sum M=65536 D=1024 f16", lambda: torch.randn(65536, 1024, device="cuda").half(),
     lambda x: x.sum(0, dtype=torch.float32), 4),
    ("column_sum M=1024 D=65536 f16", lambda: torch.randn(1024, 65536, device="cuda").half(),
     lambda x: x.sum(0, dtype=torch.float32), 4),
]

for name, make, fn, out_bytes in CASES:
    x = make()
    nbytes = x.numel() * x.element_size() + (fn(x).numel() * out_bytes)
    ms_e = do_bench(lambda: fn(x))
    cfn = torch.compile(fn)
    cfn(x)
    ms_c = do_bench(lambda: cfn(x))
    print(f"{name}: eager {ms_e*1e3:.1f} us {nbytes/ms_e/1e6:.0f} GB/s; "
          f"torch.compile {ms_c*1e3:.1f} us {nbytes/ms_c/1e6:.0f} GB/s", flush=True)
