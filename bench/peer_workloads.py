"""bench/peer.py's workloads and the tensors of each fusion: parsing the workload files, each
fusion's inputs and outputs, the bytes a run moves, and the `loom bench` command line. Needs
neither torch nor a GPU (peer.py --dry-run runs on this alone)."""
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

DTYPE_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i64": 8}
# loom's own tolerance table (reference/compare.cpp): ||loom - eager|| / ||eager|| must stay below.
TOLERANCE = {"f16": 2e-3, "bf16": 1.6e-2, "f32": 2e-5, "f64": 1e-12, "i64": 0.0}  # indices exactly


# ---------------------------------------------------------------------------------------------
# Workloads and the tensors of each fusion (no torch needed)

@dataclass
class Workload:
    name: str
    fusion: str
    dtype: str
    dims: dict  # insertion-ordered, as written
    layouts: dict  # input name -> "nchw" | "nhwc" | "0,2,3,1"
    tags: list = field(default_factory=list)
    line: int = 0

    def family(self):
        """(family key, x value): every dim but the last fixed; the last one is the x axis."""
        keys = list(self.dims)
        fixed = ",".join(f"{k}={self.dims[k]}" for k in keys[:-1])
        lay = ",".join(f"{k}={v}" for k, v in self.layouts.items()) or "-"
        return f"{self.fusion} {self.dtype} {fixed} {lay}", keys[-1], self.dims[keys[-1]]


def parse_layouts(text, where):
    out = {}
    if text == "-":
        return out
    last = None
    for item in text.split(","):
        if "=" in item:
            k, v = item.split("=", 1)
            out[k] = v
            last = k
        elif last is not None and item.strip().isdigit():
            out[last] += "," + item  # a permutation's further dims
        else:
            raise ValueError(f"{where}: bad layout item `{item}` in `{text}`")
    return out


def parse_workloads(path):
    wls = []
    for n, raw in enumerate(Path(path).read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        cols = line.split()
        where = f"{path}:{n}"
        if len(cols) not in (5, 6):
            raise ValueError(f"{where}: expected `name fusion dtype dims layouts [tags]`, got `{raw}`")
        name, fusion, dtype, dims_s, lay_s = cols[:5]
        if dtype not in DTYPE_BYTES:
            raise ValueError(f"{where}: unknown dtype `{dtype}`")
        dims = {}
        for item in dims_s.split(","):
            k, _, v = item.partition("=")
            if not k or not v.isdigit():
                raise ValueError(f"{where}: dims must look like N=4096,D=1024, got `{dims_s}`")
            dims[k] = int(v)
        tags = cols[5].split(",") if len(cols) == 6 else []
        wl = Workload(name, fusion, dtype, dims, parse_layouts(lay_s, where), tags, n)
        input_specs(wl)  # fails early on an unknown fusion or missing dim
        wls.append(wl)
    names = [w.name for w in wls]
    dup = {x for x in names if names.count(x) > 1}
    if dup:
        raise ValueError(f"{path}: workload names must be unique: {sorted(dup)}")
    return wls


def fusion_key(w):
    """The built-in's name, or a text-format fusion file's (examples/fusions/ln_colsum.loom ->
    ln_colsum), which picks the PyTorch twin."""
    return Path(w.fusion).stem if w.fusion.endswith(".loom") else w.fusion


def _need(w, *keys):
    missing = [k for k in keys if k not in w.dims]
    if missing:
        raise ValueError(f"workload {w.name}: fusion {w.fusion} needs dims {keys}, missing {missing}")
    return [w.dims[k] for k in keys]


def input_specs(w):
    """The fusion's inputs in loom's order: (name, dtype, shape, lo, hi) with values U[lo, hi)
    (running variances positive, as loom's own random inputs)."""
    t = w.dtype
    f = fusion_key(w)
    if f == "ln_colsum":  # examples/fusions/ln_colsum.loom: two kernels
        n, d = _need(w, "N", "D")
        return [("x", t, [n, d], -1.0, 1.0)]
    if f in ("layer_norm_backward", "rms_norm_backward", "softmax_backward", "log_softmax_backward"):
        n, d = _need(w, "N", "D")
        g = [("dy", t, [n, d], -1.0, 1.0)]
        if f == "softmax_backward":
            return g + [("y", t, [n, d], 0.0, 1.0)]
        if f == "log_softmax_backward":  # y: the forward's log-probabilities
            return g + [("y", t, [n, d], -8.0, 0.0)]
        stats = [("rstd", "f32", [n, 1], 0.5, 1.5)]
        if f == "layer_norm_backward":
            return g + [("x", t, [n, d], -1.0, 1.0), ("mean", "f32", [n, 1], -0.1, 0.1)] + stats + \
                [("w", t, [d], -1.0, 1.0), ("b", t, [d], -1.0, 1.0)]
        return g + [("x", t, [n, d], -1.0, 1.0)] + stats + [("w", t, [d], -1.0, 1.0)]
    if f in ("group_norm_backward", "batch_norm_backward", "instance_norm_backward", "layer_norm_2d_backward"):
        n, c, h, wd = _need(w, "N", "C", "H", "W")
        img = [("dy", t, [n, c, h, wd], -1.0, 1.0), ("x", t, [n, c, h, wd], -1.0, 1.0)]
        stats = {"group_norm_backward": [n, 32], "batch_norm_backward": [c], "instance_norm_backward": [n, c],
                 "layer_norm_2d_backward": [n, 1, h, wd]}[f]
        pt = t if f == "layer_norm_2d_backward" else "f32"
        names = ("save_mean", "save_invstd") if f == "batch_norm_backward" else ("mean", "rstd")
        return img + [(names[0], "f32", stats, -0.1, 0.1), (names[1], "f32", stats, 0.5, 1.5),
                      ("w", pt, [c], -1.0, 1.0)]
    if f in ("lstm_cell_backward", "gru_cell_backward"):
        # Incoming gradients, and PyTorch's fused cell's saved workspace: activated gates in
        # (0, 1) (an LSTM's g gate in (-1, 1) as well), then for the GRU hx and the hidden n-gate.
        b, h = _need(w, "B", "H")
        if f == "gru_cell_backward":
            return [("dhy", t, [b, h], -1.0, 1.0), ("workspace", t, [b, 5 * h], 0.0, 1.0)]
        return [("dhy", t, [b, h], -1.0, 1.0), ("dcy", t, [b, h], -1.0, 1.0), ("cx", t, [b, h], -1.0, 1.0),
                ("cy", t, [b, h], -1.0, 1.0), ("workspace", t, [b, 4 * h], 0.0, 1.0)]
    if f == "layer_norm_train":  # examples/fusions/layer_norm_train.loom: forward and backward in calls
        n, d = _need(w, "N", "D")
        return [("x", t, [n, d], -1.0, 1.0), ("dy", t, [n, d], -1.0, 1.0), ("w", t, [d], -1.0, 1.0),
                ("b", t, [d], -1.0, 1.0)]
    if f == "lstm_cell_train":  # examples/fusions/lstm_cell_train.loom: the cell, then dgates from dcy
        b, h = _need(w, "B", "H")
        return [("input_gates", t, [b, 4 * h], -1.0, 1.0), ("hidden_gates", t, [b, 4 * h], -1.0, 1.0),
                ("cx", t, [b, h], -1.0, 1.0), ("bias", t, [4 * h], -1.0, 1.0), ("dcy", t, [b, h], -1.0, 1.0)]
    if f == "sum_all":  # examples/fusions/sum_all.loom: every element to one value
        (n,) = _need(w, "N")
        return [("x", t, [n], -1.0, 1.0)]
    if f == "cross_entropy_backward":  # bench/cases/cross_entropy_backward.loom: lse near a row's own
        n, v = _need(w, "N", "V")
        return [("dloss", t, [n], -1.0, 1.0), ("logits", t, [n, v], -1.0, 1.0), ("target", "i64", [n], 0, v),
                ("lse", "f32", [n], 11.0, 12.0)]
    if f == "cross_entropy_loss":  # bench/cases/cross_entropy_loss.loom: a target a row, in [0, V)
        n, v = _need(w, "N", "V")
        return [("logits", t, [n, v], -1.0, 1.0), ("target", "i64", [n, 1], 0, v)]
    if f in ("predicted_class", "argmax_rows"):  # a row's class (and its probability) from its logits
        n, v = _need(w, "N", "V")
        return [("logits", t, [n, v], -1.0, 1.0)]
    if f in ("column_sum", "column_var_mean"):  # examples/fusions/column_*.loom: down the columns, in f32
        m, d = _need(w, "M", "D")
        return [("x", t, [m, d], -1.0, 1.0)]
    if f in ("layer_norm", "rms_norm", "softmax", "log_softmax", "bias_gelu"):
        n, d = _need(w, "N", "D")
        x = [("x", t, [n, d], -1.0, 1.0)]
        return {
            "layer_norm": x + [("w", t, [d], -1.0, 1.0), ("b", t, [d], -1.0, 1.0)],
            "rms_norm": x + [("w", t, [d], -1.0, 1.0)],
            "softmax": x,
            "log_softmax": x,
            "bias_gelu": x + [("b", t, [d], -1.0, 1.0)],
        }[f]
    if f in ("group_norm", "group_norm_silu", "instance_norm", "layer_norm_2d", "batch_norm"):
        n, c, h, wd = _need(w, "N", "C", "H", "W")
        x = ("x", t, [n, c, h, wd], -1.0, 1.0)
        pt = t if f in ("layer_norm_2d", "group_norm_silu") else "f32"
        aff = [("w", pt, [c], -1.0, 1.0), ("b", pt, [c], -1.0, 1.0)]
        if f == "batch_norm":
            return [x, ("running_mean", "f32", [c], -1.0, 1.0), ("running_var", "f32", [c], 0.5, 1.0)] + aff
        return [x] + aff
    if f in ("lstm_cell", "gru_cell"):
        b, h = _need(w, "B", "H")
        g = 4 if f == "lstm_cell" else 3
        state = "cx" if f == "lstm_cell" else "hx"
        return [("x", t, [b, g * h], -1.0, 1.0), ("hidden_gates", t, [b, g * h], -1.0, 1.0),
                (state, t, [b, h], -1.0, 1.0), ("b_ih", t, [g * h], -1.0, 1.0),
                ("b_hh", t, [g * h], -1.0, 1.0)]
    if f == "add":
        (n,) = _need(w, "N")
        return [("x", t, [n], -1.0, 1.0), ("y", t, [n], -1.0, 1.0)]
    raise ValueError(f"workload {w.name}: no PyTorch twin for fusion `{f}` in bench/peer.py")


def output_specs(w):
    """The fusion's outputs in loom's order: (name, dtype, shape)."""
    ins = {s[0]: s for s in input_specs(w)}
    f = fusion_key(w)
    if f == "ln_colsum":
        return [("y", w.dtype, ins["x"][2]), ("colsum", "f32", ins["x"][2][1:])]
    if f in ("layer_norm_backward", "rms_norm_backward"):
        n, d = ins["x"][2]
        grads = [("dx", w.dtype, [n, d]), ("dw", w.dtype, [d])]
        return grads + [("db", w.dtype, [d])] if f == "layer_norm_backward" else grads
    if f in ("softmax_backward", "log_softmax_backward"):
        return [("dx", w.dtype, ins["dy"][2])]
    if f in ("group_norm_backward", "batch_norm_backward", "instance_norm_backward", "layer_norm_2d_backward"):
        c = ins["x"][2][1]
        pt = ins["w"][1]
        return [("dx", w.dtype, ins["x"][2]), ("dw", pt, [c]), ("db", pt, [c])]
    if f == "lstm_cell_backward":
        b, h = ins["cx"][2]
        return [("dgates", w.dtype, [b, 4 * h]), ("dcx", w.dtype, [b, h]), ("dbias", w.dtype, [4 * h])]
    if f == "gru_cell_backward":
        b, h = ins["dhy"][2]
        return [("dinput_gates", w.dtype, [b, 3 * h]), ("dhidden_gates", w.dtype, [b, 3 * h]),
                ("dhx", w.dtype, [b, h]), ("dinput_bias", w.dtype, [3 * h]), ("dhidden_bias", w.dtype, [3 * h])]
    if f == "layer_norm_train":
        n, d = ins["x"][2]
        return [("y", w.dtype, [n, d]), ("dx", w.dtype, [n, d]), ("dw", w.dtype, [d]), ("db", w.dtype, [d])]
    if f == "lstm_cell_train":
        b, h = ins["cx"][2]
        return [("hy", w.dtype, [b, h]), ("cy", w.dtype, [b, h]), ("dgates", w.dtype, [b, 4 * h]),
                ("dcx", w.dtype, [b, h]), ("dbias", w.dtype, [4 * h])]
    if f == "sum_all":
        return [("s", "f32", [])]
    if f == "column_sum":
        return [("s", "f32", ins["x"][2][1:])]
    if f == "cross_entropy_backward":
        return [("dlogits", w.dtype, ins["logits"][2])]
    if f == "cross_entropy_loss":
        return [("loss", "f32", [ins["logits"][2][0], 1])]
    if f == "predicted_class":
        return [("prob", "f32", ins["logits"][2][:1]), ("class", "i64", ins["logits"][2][:1])]
    if f == "argmax_rows":
        return [("class", "i64", ins["logits"][2][:1])]
    if f == "column_var_mean":
        return [("var", "f32", ins["x"][2][1:]), ("mean", "f32", ins["x"][2][1:])]
    if f == "batch_norm":
        c = ins["x"][2][1]
        return [("y", w.dtype, ins["x"][2]), ("new_running_mean", "f32", [c]), ("new_running_var", "f32", [c])]
    if f == "lstm_cell":
        return [("hy", w.dtype, ins["cx"][2]), ("cy", w.dtype, ins["cx"][2])]
    if f == "gru_cell":
        return [("hy", w.dtype, ins["hx"][2])]
    if f == "add":
        return [("z", w.dtype, ins["x"][2])]
    return [("y", w.dtype, ins["x"][2])]


def numel(shape):
    return math.prod(shape)


def traffic_bytes(w):
    """Every input read once plus every output written once, in-place ones too."""
    return (sum(numel(s[2]) * DTYPE_BYTES[s[1]] for s in input_specs(w)) +
            sum(numel(s[2]) * DTYPE_BYTES[s[1]] for s in output_specs(w)))


def loom_command(loom, w, io_dir=None):
    cmd = [str(loom), "bench", w.fusion, "--json"]
    if not w.fusion.endswith(".loom"):  # a file's dtypes are written in it
        cmd[3:3] = ["--dtype", w.dtype]
    for k, v in w.dims.items():
        cmd += ["--dim", f"{k}={v}"]
    for k, v in w.layouts.items():
        cmd += ["--layout", f"{k}={v}"]
    if io_dir is not None:
        cmd += ["--inputs", str(io_dir), "--save-outputs", str(io_dir)]
    return cmd
