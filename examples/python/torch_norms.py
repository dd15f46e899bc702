"""loom's norms inside a PyTorch model, the script to copy: swap a timm ConvNeXt's LayerNorm2d and
LayerNorm for loom's (same parameters and state dict, channels-last read as it is), train a few
AMP steps beside the stock model from the same weights, and compare losses; then the same model
under torch.compile and under CUDA graphs (mode="reduce-overhead"), and any loom fusion as a
callable on torch tensors. The first `import loom.torch` builds its C++ extension into loom's
cache (about a minute; later imports load it).
    python3 examples/python/torch_norms.py        (needs PyTorch with a GPU, and timm)"""
import copy

import torch
import timm

import loom.torch

torch.manual_seed(0)
stock = timm.create_model("convnext_atto", pretrained=False).cuda().to(memory_format=torch.channels_last)
mine = copy.deepcopy(stock)
print("extension:", "compiled" if loom.torch.ops.EXTENSION is not None else f"ctypes ({loom.torch.ops.WHY})")
loom.torch.swap(mine, report=True)  # what it swapped, what it left and why; also loom.torch.nn.* as layers

x = torch.randn(32, 3, 128, 128, device="cuda").to(memory_format=torch.channels_last)
y = torch.randint(0, 1000, (32,), device="cuda")
for model in (stock, mine):
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    losses = []
    for _ in range(5):
        with torch.autocast("cuda", dtype=torch.float16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(round(loss.item(), 4))
    print("loom " if model is mine else "torch", losses)
# Under torch.compile the swapped modules give Inductor PyTorch's own forward, which it fuses with
# the norms' neighbours (the stock model's graph):
compiled = torch.compile(mine)
print("compiled:", compiled(x).shape)
# Or loom's kernels in the compiled graph, as ops opaque to Inductor (no graph breaks), which wins
# where the norms are much of the step (group norm over channels-last images); CUDA graphs replay
# loom's launches with no Python host time a call, forward and backward:
loom.torch.swap(mine, in_compile="loom")
graphed = torch.compile(mine, mode="reduce-overhead")
for _ in range(3):
    with torch.autocast("cuda", dtype=torch.float16):
        graphed(x).float().mean().backward()
print("reduce-overhead: ok")
# Data-parallel training: one process per GPU (torchrun); loom runs on each process's own GPU,
# the one its first tensors are on (or loom.select_device(i) before any GPU work).

# Any fusion (loom text, a .loom file, a built-in) as a callable, with a backward fusion where given.
rms = loom.torch.compile_fusion("rms_norm", dtype="f16")
h = torch.randn(8, 4096, device="cuda", dtype=torch.float16)
(out,) = rms(h, torch.ones(4096, device="cuda", dtype=torch.float16))[:1]
print("compile_fusion:", out.shape, out.dtype)
