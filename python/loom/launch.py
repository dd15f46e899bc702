"""The hot path of Fusion.run for torch tensors: per input signature (dtype, sizes, strides,
device of each input) the loom_tensor structs are built once, and the output specs asked once;
a repeated call only writes the data pointers, allocates the outputs and launches."""

import ctypes
import threading

from . import tensors
from ._lib import Tensor, check, lib


def torch_key(inputs):
    """The signature of torch inputs, or None where one is not a torch tensor (tensors.is_torch's
    test: the same tensors take this path and device_entry's checks)."""
    cls = tensors.torch_tensor_type()
    if cls is None:
        return None
    key = []
    for t in inputs:
        if not isinstance(t, cls):
            return None
        key.append((t.dtype, t.shape, t.stride(), t.get_device()))
    return tuple(key)


def _data_slots(views):
    """A c_void_p over each struct's data field: written in place per call (no struct objects)."""
    off = Tensor.data.offset
    return [ctypes.c_void_p.from_buffer(views.array, i * ctypes.sizeof(Tensor) + off) for i in range(views.count)]


_RAW_STREAM = None


def current_stream(t):
    """torch's current stream on t's device, as a CUstream handle."""
    global _RAW_STREAM
    if _RAW_STREAM is None:
        import torch
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # what Triton uses: no Stream object
        _RAW_STREAM = raw or (lambda device: torch.cuda.current_stream(device).cuda_stream)
    return _RAW_STREAM(t.get_device())


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
        self.in_slots = _data_slots(self.ins)
        self.out_slots = {id(self.outs): _data_slots(self.outs)}
        self.empty = torch.empty_strided
        self.lock = threading.Lock()

    def call(self, inputs, stream=None):
        """Allocates the outputs, launches on `stream` (torch's current stream by default) and
        returns them: Fusion.run's path for a signature seen before."""
        out = self.allocate(inputs)
        self.launch(inputs, out, current_stream(inputs[0]) if stream is None else int(stream))
        return out

    def allocate(self, inputs):
        empty, dev = self.empty, self.device
        return tuple(inputs[a] if a >= 0 else empty(shape, strides, dtype=dt, device=dev)
                     for a, shape, strides, dt in self.specs)

    def launch(self, inputs, out, stream, views=None):
        views = views or self.outs
        # The structs are this plan's, shared by every thread that runs it: one call at a time.
        with self.lock:
            slots = self.out_slots.get(id(views))
            if slots is None:
                slots = self.out_slots[id(views)] = _data_slots(views)
            for s, t in zip(self.in_slots, inputs):
                s.value = t.data_ptr() or None
            for s, t in zip(slots, out):
                s.value = t.data_ptr() or None
            check(lib.loom_runner_run(self.runner, self.ins.array, self.ins.count, views.array, views.count, stream))
