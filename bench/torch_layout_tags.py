"""loom's torch ops under torch.compile with and without `torch.Tag.flexible_layout`: Inductor keeps
a custom op's input stride order by default and copies an input whose layout its own kernels
chose otherwise; the tag tells it loom takes any strides. Each variant runs in a fresh process:
a timm model with loom's norms swapped in (loom.torch.swap), fp16 AMP training steps under
torch.compile, then one profiled step (CUDA kernels a step and their CUDA time) and images/s over
the timed steps. (loom's ops carry no tag: measured, the tag changed no kernel, record
bench/results/2026-11-27-h100-torch-layout-tag.md.)

    python3 bench/torch_layout_tags.py [--model convnext_atto] [--batch 64] [--layouts nchw,nhwc]
                                       [--steps 15] [--rounds 1] [--variants stock,untagged,tagged]
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child(a):
    import torch
    # loom's ops defined without tags (Inductor's default constraint) or with flexible_layout.
    tagged = (torch.Tag.flexible_layout,) if a.variant == "tagged" else ()
    define = torch.library.Library.define

    def with_tags(self, schema, alias_analysis="", *, tags=()):
        return define(self, schema, alias_analysis, tags=tagged if self.ns == "loom" else tags)
    torch.library.Library.define = with_tags
    sys.path.insert(0, str(ROOT / "python"))
    import timm
    import loom.torch
    torch.manual_seed(0)
    model = timm.create_model(a.model, pretrained=False).cuda()
    fmt = torch.channels_last if a.layout == "nhwc" else torch.contiguous_format
    model = model.to(memory_format=fmt)
    swapped = 0 if a.variant == "stock" else loom.torch.swap(model)
    tags = [str(t) for t in torch.ops.loom.layer_norm.default.tags]
    cmodel = torch.compile(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda")
    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(a.batch, 3, 224, 224, device="cuda", generator=g).contiguous(memory_format=fmt)
    y = torch.randint(0, 1000, (a.batch,), device="cuda", generator=g)

    def step():
        with torch.autocast("cuda", dtype=torch.float16):
            loss = torch.nn.functional.cross_entropy(cmodel(x), y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    torch.cuda.synchronize()
    ips = a.steps * a.batch / (time.perf_counter() - t0)
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    kernels = 0
    cuda_us = 0.0
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        kernels += 1
        us = e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
        cuda_us += us
    print(json.dumps({"variant": a.variant, "layout": a.layout, "tags": tags, "swapped": swapped,
                      "images_s": round(ips, 1), "kernels": kernels, "cuda_ms": round(cuda_us / 1000, 3),
                      "loss": round(loss.item(), 4)}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="convnext_atto")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--layouts", default="nchw,nhwc")
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--variants", default="stock,untagged,tagged",
                    help="stock: no loom norms; untagged, tagged: loom's ops without and with the tag")
    ap.add_argument("--variant", help=argparse.SUPPRESS)
    ap.add_argument("--layout", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.variant:
        return child(a)
    print(f"{a.model}, batch {a.batch}, fp16 AMP, torch.compile; per variant a fresh process")
    for _ in range(a.rounds):
        for layout in a.layouts.split(","):
            for variant in a.variants.split(","):
                cmd = [sys.executable, __file__, "--variant", variant, "--layout", layout, "--model", a.model,
                       "--batch", str(a.batch), "--steps", str(a.steps)]
                p = subprocess.run(cmd, capture_output=True, text=True)
                line = (p.stdout.strip().splitlines() or [""])[-1]
                print(line if line.startswith("{") else f"{variant} {layout}: failed: {p.stderr.strip()[-400:]}",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
