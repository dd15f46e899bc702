"""Data-parallel training with loom's norms, one process per GPU (as torchrun starts them; loom
runs on each process's own GPU): a timm model, stock and with loom.torch.swap, from the same
initial weights and the same per-rank batches, fp16 AMP, DistributedDataParallel over NCCL.
Prints each rank's losses for both, their largest difference, and images/s over all ranks.

    torchrun --nproc_per_node=2 bench/torch_ddp.py [--model convnext_atto] [--steps 12]
                                                  [--batch 32] [--res 160] [--layout nhwc]
"""
import argparse
import copy
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import timm  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

import loom  # noqa: E402
import loom.torch  # noqa: E402


def train(model, local, a, rank):
    fmt = torch.channels_last if a.layout == "nhwc" else torch.contiguous_format
    ddp = DDP(model, device_ids=[local])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda")
    g = torch.Generator(device="cuda").manual_seed(1000 + rank)  # each rank its own batches
    losses, t0 = [], None
    for step in range(a.steps):
        if step == a.steps // 3:
            torch.cuda.synchronize()
            dist.barrier()
            t0 = time.perf_counter()
        x = torch.randn(a.batch, 3, a.res, a.res, device="cuda", generator=g).contiguous(memory_format=fmt)
        y = torch.randint(0, 100, (a.batch,), device="cuda", generator=g)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = torch.nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.detach())
    torch.cuda.synchronize()
    dist.barrier()
    dt = time.perf_counter() - t0
    timed = a.steps - a.steps // 3
    return [v.item() for v in losses], timed * a.batch * dist.get_world_size() / dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="convnext_atto")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--res", type=int, default=160)
    ap.add_argument("--layout", default="nhwc")
    a = ap.parse_args()
    dist.init_process_group("nccl")
    rank, world, local = dist.get_rank(), dist.get_world_size(), int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    torch.manual_seed(0)  # the same initial weights on every rank
    fmt = torch.channels_last if a.layout == "nhwc" else torch.contiguous_format
    base = timm.create_model(a.model, pretrained=False, num_classes=100).cuda().to(memory_format=fmt)
    runs = {}
    for norms in ("torch", "loom"):
        model = copy.deepcopy(base)
        if norms == "loom":
            loom.torch.swap(model)
        runs[norms] = train(model, local, a, rank)
    assert loom.selected_device() == local, (loom.selected_device(), local)
    diff = max(abs(p - q) for p, q in zip(runs["torch"][0], runs["loom"][0]))
    lines = [f"rank {rank} (cuda:{local}, loom on GPU {loom.selected_device()}): max |loss torch - loom| "
             f"{diff:.2e}; losses torch {', '.join(f'{v:.4f}' for v in runs['torch'][0])}; "
             f"loom {', '.join(f'{v:.4f}' for v in runs['loom'][0])}"]
    every = [None] * world
    dist.all_gather_object(every, (lines[0], diff))
    if rank == 0:
        print(f"{a.model}, {world} GPUs, batch {a.batch} a GPU, {a.res}x{a.res}, {a.layout}, fp16 AMP, "
              f"{a.steps} steps (images/s over the last {a.steps - a.steps // 3}, all ranks)")
        for line, _ in every:
            print(line)
        print(f"images/s: torch {runs['torch'][1]:.1f}, loom {runs['loom'][1]:.1f}")
        worst = max(d for _, d in every)
        print(f"largest loss difference over ranks {worst:.2e}: {'ok' if worst < 2e-2 else 'MISMATCH'}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
