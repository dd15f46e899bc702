"""timm convnext_base training with loom's norms (loom.torch.swap: its LayerNorm2d and LayerNorm)
beside the stock model, fp16 AMP, from the same initial weights and the same batches: losses step
by step, and train images/s, eager and torch.compile, NCHW and channels-last, in one process.

    python3 bench/torch_convnext.py [--steps 20] [--batch 64] [--modes eager,compile,graphs]
                                    [--layouts nchw,nhwc] [--rounds R] [--swap all,LayerNorm2d]

--swap: which of loom's drop-ins each loom model takes, one model per entry: `all` (every norm:
convnext_base's 5 LayerNorm2d and 36 LayerNorm) or names for loom.torch.swap(only=...) joined
by `+` (LayerNorm2d: only the 5 norms over the channels of NCHW images, the issue's measure).
A `/keep` suffix sets channels_last_out = False on loom's LayerNorm2d modules (an NCHW input's
output stays NCHW instead of timm's channels-last).

--modes: `graphs` is torch.compile(mode="reduce-overhead"), whose CUDA graphs replay loom's
launches (and everything else) with no Python: the host cost of loom's op calls is paid at
capture only.

--rounds R runs the torch/loom pair R times in turn (the host of the GPU machine drifts between
runs: images/s of one pair are comparable, of separate runs less so).
"""
import argparse
import copy
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
import torch  # noqa: E402
import timm  # noqa: E402

import loom.torch  # noqa: E402


def train(model, batches, labels, steps, timed_from):
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)  # 0.05 diverged by step 20
    scaler = torch.amp.GradScaler("cuda")
    losses = []
    t0 = None
    for i in range(steps):
        if i == timed_from:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        x = batches[i % len(batches)]
        with torch.autocast("cuda", dtype=torch.float16):
            loss = torch.nn.functional.cross_entropy(model(x), labels[i % len(labels)])
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.detach())
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    return [v.item() for v in losses], (steps - timed_from) * batches[0].shape[0] / dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--modes", default="eager,compile")
    ap.add_argument("--layouts", default="nchw,nhwc")
    ap.add_argument("--model", default="convnext_base")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--swap", default="all")
    a = ap.parse_args()
    torch.manual_seed(0)
    base = timm.create_model(a.model, pretrained=False).cuda()
    state = copy.deepcopy(base.state_dict())
    g = torch.Generator(device="cuda").manual_seed(1)
    batches = [torch.randn(a.batch, 3, 224, 224, device="cuda", generator=g) for _ in range(4)]
    labels = [torch.randint(0, 1000, (a.batch,), device="cuda", generator=g) for _ in range(4)]
    timed_from = min(5, a.steps - 1)
    print(f"{a.model}, batch {a.batch}, fp16 AMP, {a.steps} steps (images/s over steps {timed_from}..{a.steps - 1}); "
          f"torch {torch.__version__}, timm {timm.__version__}, {torch.cuda.get_device_name()}")
    print(f"{'layout':<6} {'mode':<8} {'norms':<16} {'images/s':>9} {'loss 0':>8} {'loss 5':>8} {'loss last':>9} "
          f"{'max |dloss|':>11} {'swapped':>7}")
    for layout in a.layouts.split(","):
        fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format
        xs = [b.contiguous(memory_format=fmt) for b in batches]
        for mode in a.modes.split(","):
            ref = None
            for norms in ("torch", *(f"loom:{v}" for v in a.swap.split(","))) * a.rounds:
                model = timm.create_model(a.model, pretrained=False).cuda()
                model.load_state_dict(state)
                model = model.to(memory_format=fmt)
                spec, _, keep = norms[5:].partition("/")
                only = None if spec == "all" else spec.split("+")
                n = 0 if norms == "torch" else loom.torch.swap(model, only=only)
                if keep == "keep":
                    for m in model.modules():
                        if isinstance(m, loom.torch.nn.LayerNorm2d) or \
                                getattr(type(m), "_loom_family", None) is loom.torch.nn.layer_norm_2d_forward:
                            m.channels_last_out = False
                run = torch.compile(model) if mode == "compile" else \
                    torch.compile(model, mode="reduce-overhead") if mode == "graphs" else model
                losses, ips = train(run, xs, labels, a.steps, timed_from)
                if ref is None:
                    ref = losses
                diff = max(abs(p - q) for p, q in zip(losses, ref))
                print(f"{layout:<6} {mode:<8} {norms:<16} {ips:9.1f} {losses[0]:8.4f} {losses[min(5, a.steps - 1)]:8.4f} "
                      f"{losses[-1]:9.4f} {diff:11.4f} {n:7d}", flush=True)
                del model, run
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
