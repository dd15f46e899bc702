"""The hot path of Fusion.run for torch tensors: per input signature (dtype, sizes, strides,
device of each input) the loom_tensor structs are built once, and the output specs asked once;
a repeated call only writes the data pointers, allocates the outputs and launches."""

from . import tensors
from ._lib import check, lib


def torch_key(inputs):
    """The signature of torch inputs, or None where one is not a torch tensor."""
    key = []
    for t in inputs:
        if not tensors.is_torch(t):
            return None
        key.append((t.dtype, t.shape, t.stride(), t.get_device()))
    return tuple(key)


def current_stream(t):
    """torch's current stream on t's device, as a CUstream handle."""
    import torch
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # what Triton uses: no Stream object
    if raw is not None:
        return raw(t.get_device())
    return torch.cuda.current_stream(t.device).cuda_stream


class LaunchPlan:
    """One input signature: its structs, and its outputs' specs (allocated as torch tensors)."""

    def __init__(self, runner, inputs, in_names, specs, out_names):
        import torch
        self.runner = runner
        self.ins = tensors.Views([tensors.device_entry(t, f"input `{n}`") for t, n in zip(inputs, in_names)])
        self.specs = [(s["alias"], tuple(s["shape"]), tuple(s["strides"]),
                       getattr(torch, tensors.TORCH_DTYPE[s["dtype"]])) for s in specs]
        self.out_names = out_names
        self.outs = tensors.Views([(None, s["dtype"], s["shape"], s["strides"]) for s in specs])
        self.device = inputs[0].device
        # Output layouts known to be right (torch_key of the outputs -> their structs): the one
        # allocate() gives, and any other the checked path took once.
        out_key = tuple((dt, torch.Size(shape), strides, inputs[0].get_device()) for _, shape, strides, dt in self.specs)
        self.out_views = {out_key: self.outs}

    def allocate(self, inputs):
        import torch
        return tuple(inputs[a] if a >= 0 else torch.empty_strided(shape, strides, dtype=dt, device=self.device)
                     for a, shape, strides, dt in self.specs)

    def launch(self, inputs, out, stream, views=None):
        views = views or self.outs
        ins, outs = self.ins.array, views.array
        for i, t in enumerate(inputs):
            ins[i].data = t.data_ptr() or None
        for i, t in enumerate(out):
            outs[i].data = t.data_ptr() or None
        check(lib.loom_runner_run(self.runner, ins, self.ins.count, outs, views.count, stream))
