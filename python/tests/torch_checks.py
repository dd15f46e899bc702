"""What the GPU tests of loom.torch measure with: the relative error of a result against
PyTorch's (float64 norms), the tolerance each dtype is held to, and the dtypes every module runs."""
import torch

TOL = {torch.float16: 5e-3, torch.bfloat16: 4e-2, torch.float32: 1e-4}
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def rel(got, want):
    got, want = got.double(), want.double()
    return ((got - want).norm() / max(want.norm().item(), 1e-30)).item()
