"""loom from Python, the script to copy: a fusion from the text format, its kernels, the float64
reference on numpy arrays, and (with PyTorch and a GPU) a run on CUDA tensors checked against
PyTorch.   python3 examples/python/basics.py"""
import loom

# A fusion in loom's text format: RMS norm over the last dim, bf16 in and out, f32 inside.
TEXT = """fusion rms_norm {
  in x: bf16[N, D]
  in w: bf16[D]
  t0: f32[N, D] = cast(x, to=f32)
  t1: f32[N, D] = mul(t0, t0)
  t2: f32[N, 1b] = mean(t1, dims=[1], keepdim=true)
  eps: f32[] = const(1e-06, dtype=f32)
  t3: f32[N, 1b] = add(t2, eps)
  t4: f32[N, 1b] = rsqrt(t3)
  t5: f32[N, D] = mul(t0, t4)
  t6: f32[D] = cast(w, to=f32)
  t7: f32[1b, D] = broadcast(t6, new=[true, false])
  t8: f32[N, D] = mul(t5, t7)
  y: bf16[N, D] = cast(t8, to=bf16)
  out y = y
}
"""
f = loom.Fusion.from_text(TEXT)
print(repr(f))
plan = f.segments({"N": 8192, "D": 4096})
print(f"{plan['kernels']} kernel(s); {plan['segments'][0]['params'][:100]}...")

try:
    import numpy as np
except ImportError:
    np = None
if np is not None:
    x = np.random.default_rng(0).standard_normal((4, 4096)).astype(np.float32)  # rounded to bf16
    (y,) = f.eval(x, np.ones(4096, np.float32))
    print("reference:", y.shape, y.dtype, y[0, :4])

try:
    import torch
except ImportError:
    torch = None
if torch is not None and torch.cuda.is_available() and loom.gpu_available():
    x = torch.randn(8192, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
    (y,) = f.run(x, w)  # on torch's current stream; compiles on the first call of these shapes
    ref = (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).bfloat16()
    err = ((y.float() - ref.float()).norm() / ref.float().norm()).item()
    print(f"GPU: relative error against PyTorch {err:.2e}")
else:
    print("(no PyTorch with a GPU here: the GPU run is skipped)")
