"""Host time per call of loom from Python, for an old-vs-new table of two packages in one call:
   taskset -c 5 python3 bench/python_overhead_ab.py PYTHON_ROOT   (PYTHON_ROOT holds loom/; e.g. python,
or an old commit's python/ from git archive). Prints the minimum of 5 repetitions of 3000 calls per row."""
import sys, time, importlib
root = sys.argv[1]
sys.path.insert(0, root)
import loom, loom.torch, torch
x = torch.randn(4, 1024, device="cuda", dtype=torch.float16)
w = torch.randn(1024, device="cuda"); b = torch.randn(1024, device="cuda")
f = loom.Fusion.op("layer_norm", x="f16", w="f32", b="f32", eps=1e-5)
out = f.run(x, w, b)
stream = torch.cuda.current_stream().cuda_stream
xg = x.clone().requires_grad_(); wg, bg = w.clone().requires_grad_(), b.clone().requires_grad_()
mod = loom.torch.nn.LayerNorm(1024).cuda()
ref = torch.nn.LayerNorm(1024).cuda().half()
w16, b16 = w.half(), b.half()
dy = torch.randn_like(x)
def t(fn, n=3000):
    for _ in range(100): fn()
    torch.cuda.synchronize(); s = time.perf_counter()
    for _ in range(n): fn()
    torch.cuda.synchronize(); return (time.perf_counter() - s) / n * 1e6
rows = [("Fusion.run(out=, stream=)", lambda: f.run(x, w, b, out=out, stream=stream)),
        ("Fusion.run(x, w, b)", lambda: f.run(x, w, b)),
        ("loom.torch.ops.layer_norm (eager)", lambda: loom.torch.ops.layer_norm(x, w, b, 1e-5)),
        ("torch.ops.loom.layer_norm (dispatcher)", lambda: torch.ops.loom.layer_norm(x, w, b, 1e-5)),
        ("loom LayerNorm module fwd+bwd", lambda: mod(xg).backward(dy)),
        ("torch F.layer_norm (f16 weights)", lambda: torch.nn.functional.layer_norm(x, (1024,), w16, b16, 1e-5)),
        ("torch LayerNorm module fwd+bwd (f16)", lambda: ref(xg).backward(dy))]
res = {}
for rep in range(5):
    for name, fn in rows:
        ctx = torch.enable_grad() if "bwd" in name else torch.no_grad()  # fwd+bwd rows: with grad
        with ctx:
            res.setdefault(name, []).append(t(fn))
for name, v in res.items():
    print(f"{root} {name:<40} {min(v):7.1f} us")
