"""loom's ops inside CUDA graphs (what torch.compile(mode="reduce-overhead") records): each
scenario captured after warm-up, replayed on new inputs, and checked against PyTorch's own
modules. Prints one line per scenario: ok, or the error. python3 bench/torch_cuda_graphs.py"""
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
import torch  # noqa: E402

import loom.torch  # noqa: E402


def rel(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / max(b.norm(), 1e-30)).item()


def capture(fn, warm=3):
    """fn() warmed up on a side stream, then captured; returns (graph, its outputs)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warm):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn()
    return g, out


def forward_only():
    ref = torch.nn.LayerNorm(1024, device="cuda", dtype=torch.float16)
    m = loom.torch.nn.LayerNorm(1024, device="cuda", dtype=torch.float16)
    m.load_state_dict(ref.state_dict())
    x = torch.randn(4096, 1024, device="cuda", dtype=torch.float16)
    g, y = capture(lambda: m(x))
    errs = []
    for _ in range(3):
        x.copy_(torch.randn_like(x))
        g.replay()
        torch.cuda.synchronize()
        errs.append(rel(y, ref(x)))
    return max(errs) < 4e-3, f"rel err {max(errs):.2e}"


def train_step(make, shape, dtype, nhwc=False):
    """Forward, backward and SGD of a norm module in one graph (PyTorch's whole-network capture),
    replayed on new inputs, against the same steps of PyTorch's module in eager."""
    ref = make(torch.nn).cuda().to(dtype)
    m = make(loom.torch.nn).cuda().to(dtype)
    m.load_state_dict(ref.state_dict())
    fmt = torch.channels_last if nhwc else torch.contiguous_format
    x = torch.randn(*shape, device="cuda", dtype=dtype).contiguous(memory_format=fmt)
    dy = torch.randn_like(x)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    ropt = torch.optim.SGD(ref.parameters(), lr=0.1)

    def step():
        opt.zero_grad(set_to_none=False)
        m(x).backward(dy)
        opt.step()

    g, _ = capture(step)
    for _ in range(3):  # the 3 warm-up steps moved m's weights (a capture runs nothing): catch ref up
        ropt.zero_grad(set_to_none=False)
        ref(x).backward(dy)
        ropt.step()
    errs = []
    for _ in range(3):
        x.copy_(torch.randn_like(x))
        dy.copy_(torch.randn_like(dy))
        g.replay()
        ropt.zero_grad(set_to_none=False)
        ref(x).backward(dy)
        ropt.step()
        torch.cuda.synchronize()
        errs.append(max(rel(p, q) for p, q in zip(m.parameters(), ref.parameters())))
    tol = 2e-2 if dtype != torch.float32 else 1e-4
    return max(errs) < tol, f"weights after each replayed step, rel err {max(errs):.2e}"


def atto_pair():
    """timm convnext_atto stock, and a copy of it with loom's norms under torch.compile's
    reduce-overhead mode (CUDA graphs)."""
    import timm
    torch.manual_seed(0)
    base = timm.create_model("convnext_atto", pretrained=False, num_classes=10).cuda()
    model = timm.create_model("convnext_atto", pretrained=False, num_classes=10).cuda()
    model.load_state_dict(base.state_dict())
    loom.torch.swap(model)
    return base, torch.compile(model, mode="reduce-overhead")


def compiled_reduce_overhead():
    base, cm = atto_pair()
    x = torch.randn(16, 3, 128, 128, device="cuda")
    errs = []
    for _ in range(5):
        x.copy_(torch.randn_like(x))
        with torch.autocast("cuda", dtype=torch.float16):
            got = cm(x)
            want = base(x)
        torch.cuda.synchronize()
        errs.append(rel(got.float(), want.float()))
    return max(errs) < 2e-2, f"logits rel err {max(errs):.2e} (5 calls)"


def compiled_reduce_overhead_training():
    base, cm = atto_pair()
    losses = {}
    for name, m in (("torch", base), ("loom", cm)):
        opt = torch.optim.SGD(m.parameters(), lr=0.01)
        g = torch.Generator(device="cuda").manual_seed(5)
        losses[name] = []
        for _ in range(8):
            x = torch.randn(16, 3, 128, 128, device="cuda", generator=g)
            y = torch.randint(0, 10, (16,), device="cuda", generator=g)
            with torch.autocast("cuda", dtype=torch.float16):
                loss = torch.nn.functional.cross_entropy(m(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses[name].append(loss.item())
    diff = max(abs(a - b) for a, b in zip(losses["torch"], losses["loom"]))
    return diff < 2e-2, f"8 training steps, largest loss difference from eager torch {diff:.2e}"


SCENARIOS = [
    ("LayerNorm forward, captured and replayed", forward_only),
    ("LayerNorm f16 train step (fwd, bwd, SGD) in one graph",
     lambda: train_step(lambda nn: nn.LayerNorm(1024), (4096, 1024), torch.float16)),
    ("RMSNorm bf16 train step in one graph",
     lambda: train_step(lambda nn: nn.RMSNorm(4096), (512, 4096), torch.bfloat16)),
    ("GroupNorm f32 NHWC train step in one graph",
     lambda: train_step(lambda nn: nn.GroupNorm(8, 64), (4, 64, 17, 19), torch.float32, nhwc=True)),
    ("BatchNorm2d f32 train step in one graph",
     lambda: train_step(lambda nn: nn.BatchNorm2d(64), (8, 64, 28, 28), torch.float32)),
    ("torch.compile(mode='reduce-overhead') convnext_atto forward, AMP", compiled_reduce_overhead),
    ("torch.compile(mode='reduce-overhead') convnext_atto training, AMP", compiled_reduce_overhead_training),
]


def main():
    # Each scenario in a process of its own: a capture that fails leaves the process's CUDA state
    # (its RNG, its streams) unusable for the next.
    if len(sys.argv) > 1:
        name, fn = SCENARIOS[int(sys.argv[1])]
        try:
            ok, what = fn()
            print(f"{'ok  ' if ok else 'BAD '} {name}: {what}", flush=True)
            return 0 if ok else 1
        except Exception as e:  # noqa: BLE001 (the scenario reports its own failure)
            print(f"FAIL {name}: {type(e).__name__}: {str(e).splitlines()[0][:300]}", flush=True)
            traceback.print_exc(limit=6, file=sys.stdout)
            return 1
    import subprocess
    bad = 0
    for i in range(len(SCENARIOS)):
        r = subprocess.run([sys.executable, __file__, str(i)], capture_output=True, text=True)
        lines = [ln for ln in (r.stdout + r.stderr).splitlines() if "Warning" not in ln and "warn(" not in ln]
        print("\n".join(lines[-12:] if r.returncode else lines[-1:]), flush=True)
        bad += r.returncode != 0
    print(f"{len(SCENARIOS) - bad} of {len(SCENARIOS)} scenarios ok")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
