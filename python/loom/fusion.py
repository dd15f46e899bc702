"""loom.Fusion: a fusion from loom's text format or a built-in; its segments and compile stages
(no GPU needed), the float64 reference on numpy arrays, and runs on GPU tensors."""
import ctypes
import json
from pathlib import Path

from . import launch, tensors
from ._lib import check, lib, take_string
from .errors import ArgumentError


class _Options:
    """A loom_options handle for one call: sizes, layouts, target, knobs."""

    def __init__(self, sizes=None, layouts=None, target=None, knobs=None):
        self.handle = ctypes.c_void_p()
        check(lib.loom_options_create(ctypes.byref(self.handle)))
        try:
            for k, v in (sizes or {}).items():
                check(lib.loom_options_set_size(self.handle, str(k).encode(), _whole(v, f"size {k}")))
            for k, v in (layouts or {}).items():
                check(lib.loom_options_set_layout(self.handle, str(k).encode(), _layout(v).encode()))
            if target is not None:
                sm, sms = target
                check(lib.loom_options_set_target(self.handle, _whole(sm, "target sm"), _whole(sms, "target SMs")))
            for k, v in (knobs or {}).items():
                check(lib.loom_options_set_knob(self.handle, str(k).encode(), _whole(int(v), f"knob {k}")))
        except BaseException:
            self.close()
            raise

    def close(self):
        if self.handle:
            lib.loom_options_free(self.handle)
            self.handle = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _whole(v, what):
    if isinstance(v, bool) or not isinstance(v, int):
        raise ArgumentError(f"{what}: {v!r} is not a whole number")
    return v


def _layout(v):
    return ",".join(str(d) for d in v) if isinstance(v, (list, tuple)) else str(v)


class Fusion:
    """An immutable fusion. Build one with Fusion.from_text, Fusion.from_file or Fusion.builtin."""

    def __init__(self, handle):
        self._h = handle
        self._sig = json.loads(take_string(lib.loom_fusion_signature_json, self._h))
        self._runners = {}
        self._plans = {}  # torch input signature -> launch.LaunchPlan

    @classmethod
    def from_text(cls, text):
        data = text.encode("utf-8")
        h = ctypes.c_void_p()
        check(lib.loom_fusion_from_text(data, len(data), ctypes.byref(h)))
        return cls(h)

    @classmethod
    def from_file(cls, path):
        return cls.from_text(Path(path).read_text(encoding="utf-8"))

    @classmethod
    def builtin(cls, name, dtype=None):
        """A built-in (loom.builtins() lists them) with its main tensors in `dtype`."""
        h = ctypes.c_void_p()
        check(lib.loom_fusion_builtin(str(name).encode(), None if dtype is None else str(dtype).encode(),
                                      ctypes.byref(h)))
        return cls(h)

    @classmethod
    def op(cls, name, **params):
        """A framework op (loom.ops() lists them: a norm's forward with the statistics its backward
        reads, or that backward) with its parameters: Fusion.op("layer_norm", x="f16", w="f32",
        b="none", eps=1e-6)."""
        text = ",".join(f"{k}={'none' if v is None else repr(v) if isinstance(v, float) else v}"
                        for k, v in params.items())
        h = ctypes.c_void_p()
        check(lib.loom_fusion_op(str(name).encode(), text.encode(), ctypes.byref(h)))
        return cls(h)

    def __del__(self):
        for r in getattr(self, "_runners", {}).values():
            lib.loom_runner_free(r)
        if getattr(self, "_h", None):
            lib.loom_fusion_free(self._h)
            self._h = None

    @property
    def name(self):
        return self._sig["name"]

    @property
    def signature(self):
        """{name, symbols, inputs: [{name, dtype, shape}], outputs: [{..., alias}], sizes}."""
        return json.loads(json.dumps(self._sig))

    @property
    def inputs(self):
        return [i["name"] for i in self._sig["inputs"]]

    @property
    def outputs(self):
        return [o["name"] for o in self._sig["outputs"]]

    @property
    def text(self):
        """The fusion in loom's text format."""
        return take_string(lib.loom_fusion_text, self._h)

    def __str__(self):
        return self.text

    def __repr__(self):
        ins = ", ".join(f"{i['name']}: {i['dtype']}[{', '.join(i['shape'])}]" for i in self._sig["inputs"])
        return f"<loom.Fusion {self.name}({ins})>"

    def segments(self, sizes=None, layouts=None, target=None, knobs=None):
        """The kernels it runs as (`loom segment --json`), for these sizes ({"N": 4096}), input
        layouts ({"x": "nhwc"} or a dim order), target ((sm, SMs), default (90, 132)) and knobs."""
        with _Options(sizes, layouts, target, knobs) as o:
            return json.loads(take_string(lib.loom_fusion_segments_json, self._h, o.handle))

    def dump(self, stage, sizes=None, layouts=None, target=None, knobs=None):
        """One stage of compiling it: ir, domains, segments, schedule, kernel, kir, llvm or ptx."""
        with _Options(sizes, layouts, target, knobs) as o:
            return take_string(lib.loom_fusion_dump, self._h, str(stage).encode(), o.handle)

    def eval(self, *arrays, sizes=None):
        """The float64 reference on numpy arrays (any strides), one per input in order; returns a
        tuple of numpy arrays, one per output (bf16 as float32)."""
        import numpy as np
        if len(arrays) != len(self._sig["inputs"]):
            raise ArgumentError(f"fusion `{self.name}` takes {len(self._sig['inputs'])} inputs "
                                f"({', '.join(self.inputs)}), {len(arrays)} given")
        keep, entries = [], []
        for a, spec in zip(arrays, self._sig["inputs"]):
            arr, entry = tensors.host_entry(np, a, spec["dtype"], f"input `{spec['name']}`")
            keep.append(arr)
            entries.append(entry)
        views = tensors.Views(entries)
        res = ctypes.c_void_p()
        with _Options(sizes) as o:
            check(lib.loom_fusion_eval(self._h, views.array, views.count, o.handle, ctypes.byref(res)))
        try:
            out = []
            for i in range(lib.loom_results_count(res)):
                t = tensors.Tensor()
                check(lib.loom_results_get(res, i, ctypes.byref(t)))
                out.append(tensors.host_result(np, t))
            return tuple(out)
        finally:
            lib.loom_results_free(res)

    def _runner(self, sizes, knobs):
        key = (tuple(sorted((sizes or {}).items())), tuple(sorted((knobs or {}).items())))
        if key not in self._runners:
            h = ctypes.c_void_p()
            with _Options(sizes, None, None, knobs) as o:
                check(lib.loom_runner_create(self._h, o.handle, ctypes.byref(h)))
            self._runners[key] = h
        return self._runners[key]

    def output_specs(self, *inputs, sizes=None, knobs=None):
        """What a run on these GPU tensors writes: {outputs: [{name, dtype, shape, strides, alias}],
        kernels}; compiles on the first call of each input signature."""
        views = tensors.Views([tensors.device_entry(t, f"input `{n}`") for t, n in zip(inputs, self.inputs)])
        return json.loads(take_string(lib.loom_runner_outputs_json, self._runner(sizes, knobs), views.array,
                                      len(inputs)))

    def run(self, *inputs, out=None, stream=None, sizes=None, knobs=None):
        """Runs on GPU tensors (torch CUDA tensors, or __cuda_array_interface__ objects), one per input,
        any strides, no copies. Outputs: `out` (a sequence, one per output) or, for torch inputs, fresh
        torch tensors; an output written in place is its input. Launches on `stream` (a CUstream
        handle), by default torch's current stream (or the legacy default stream). Returns the
        outputs, a tuple."""
        if len(inputs) != len(self._sig["inputs"]):
            raise ArgumentError(f"fusion `{self.name}` takes {len(self._sig['inputs'])} inputs "
                                f"({', '.join(self.inputs)}), {len(inputs)} given")
        key = launch.torch_key(inputs)
        if key is not None:
            if out is None and not sizes and not knobs:  # the common call: one dict lookup to the launch
                plan = self._plans.get(key)
                if plan is not None:
                    return plan.call(inputs, stream)
            return self._run_torch(key, inputs, out, stream, sizes, knobs)
        if out is None:
            raise ArgumentError("give `out=` (one GPU tensor per output) when the inputs are not torch tensors")
        ins = tensors.Views([tensors.device_entry(t, f"input `{n}`") for t, n in zip(inputs, self.inputs)])
        out = tuple(out)
        if len(out) != len(self.outputs):
            raise ArgumentError(f"fusion `{self.name}` has {len(self.outputs)} outputs, {len(out)} given")
        outs = tensors.Views([tensors.device_entry(t, f"output `{n}`") for t, n in zip(out, self.outputs)])
        check(lib.loom_runner_run(self._runner(sizes, knobs), ins.array, ins.count, outs.array, outs.count,
                                  int(stream or 0)))
        return out

    def _run_torch(self, key, inputs, out, stream, sizes, knobs):
        # Plans of runs without sizes or knobs are kept under the inputs' signature alone.
        pkey = (key, tuple(sorted((sizes or {}).items())), tuple(sorted((knobs or {}).items()))) \
            if sizes or knobs else key
        plan = self._plans.get(pkey)
        if plan is None:
            specs = self.output_specs(*inputs, sizes=sizes, knobs=knobs)["outputs"]
            plan = launch.LaunchPlan(self._runner(sizes, knobs), inputs, self.inputs, specs, self.outputs)
            self._plans[pkey] = plan
        if out is None:  # outputs in the layout the plan allocates: no check of theirs
            return plan.call(inputs, stream)
        out = tuple(out)
        if len(out) != len(self.outputs):
            raise ArgumentError(f"fusion `{self.name}` has {len(self.outputs)} outputs, {len(out)} given")
        stream = launch.current_stream(inputs[0]) if stream is None else int(stream)
        okey = launch.torch_key(out)
        if okey not in plan.out_views:
            # Outputs of another layout than this signature allocates: the checked path takes them
            # (and their structs are kept for the next call like them) or says why not.
            outs = tensors.Views([tensors.device_entry(t, f"output `{n}`") for t, n in zip(out, self.outputs)])
            with plan.lock:
                for i, t in enumerate(inputs):
                    plan.ins.array[i].data = t.data_ptr() or None
                check(lib.loom_runner_run(plan.runner, plan.ins.array, plan.ins.count, outs.array, outs.count,
                                          stream))
            if okey is not None:
                plan.out_views[okey] = outs
            return out
        plan.launch(inputs, out, stream, plan.out_views[okey])
        return out

