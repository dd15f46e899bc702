"""torch.compile(model, backend="loom"), the script to copy: loom takes the model's own
pointwise, reduction and view regions (its norms, activations, residual adds, softmax and the
backward's pointwise tails, all decomposed by PyTorch so they fuse with their neighbours); matrix
products, convolutions and attention stay with aten. explain() shows what loom took, its kernels,
and what stayed outside and why. A training step beside eager from the same weights; then a
changing batch size on one compile (dynamic=True) and CUDA graphs (mode="reduce-overhead").
    python3 examples/python/compile_backend.py        (needs PyTorch with a GPU)"""
import copy

import torch

import loom.torch  # registers the backend "loom"


class Block(torch.nn.Module):
    """A pre-norm MLP block: x + W2(gelu(W1(layer_norm(x))))."""

    def __init__(self, d=512):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)
        self.up, self.down = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


torch.manual_seed(0)
stock = torch.nn.Sequential(Block(), Block()).cuda()
mine = torch.compile(copy.deepcopy(stock), backend="loom")
x = torch.randn(64, 128, 512, device="cuda")

print(loom.torch.explain(copy.deepcopy(stock), x))  # regions, loom's kernels, what aten keeps

for name, model in (("eager", stock), ("loom", mine)):
    params = stock.parameters() if model is stock else mine.parameters()
    opt = torch.optim.SGD(params, lr=0.01)
    losses = []
    for _ in range(3):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(round(loss.item(), 4))
    print(f"{name:5}", losses)

# Batch sizes as loom's run-time sizes: one compile for all of them.
dyn = torch.compile(copy.deepcopy(stock), backend="loom", dynamic=True)
with torch.no_grad():
    for n in (8, 24, 100):
        print("batch", n, dyn(torch.randn(n, 128, 512, device="cuda")).shape)

# CUDA graphs around the compiled forward and backward: loom's launches replay with no Python.
graphed = torch.compile(copy.deepcopy(stock), backend="loom", mode="reduce-overhead")
for _ in range(3):
    torch.compiler.cudagraph_mark_step_begin()
    y = graphed(x)
print("reduce-overhead:", y.shape)
