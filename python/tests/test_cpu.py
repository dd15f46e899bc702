"""The Python package's CPU paths (CI: no GPU, no torch): text, built-ins, segments, dumps, the
float64 reference on numpy arrays, and every error as the right exception with loom's message."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import loom

TEXT = """fusion scale_add {
  in x: f32[N, D]
  in b: f32[D]
  t0: f32[1b, D] = broadcast(b, new=[true, false])
  t1: f32[N, D] = add(x, t0)
  s: f32[N] = sum(t1, dims=[1], keepdim=false)
  out y = t1
  out s = s
}
"""


def layer_norm_ref(x, w, b, eps=1e-5):
    x = x.astype(np.float64)
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps) * w + b


def test_library():
    assert loom.__version__.count(".") == 2
    names = [b["name"] for b in loom.builtins()]
    assert "layer_norm" in names and "gru_cell_backward" in names
    assert loom.gpu_available() in (True, False)


def test_text_round_trip_and_signature():
    f = loom.Fusion.from_text(TEXT)
    assert f.name == "scale_add" and f.inputs == ["x", "b"] and f.outputs == ["y", "s"]
    g = loom.Fusion.from_text(f.text)
    assert g.text == f.text
    sig = f.signature
    assert sig["inputs"][1] == {"name": "b", "dtype": "f32", "shape": ["D"]}
    assert sig["outputs"][0]["alias"] is None
    assert "scale_add(x: f32[N, D], b: f32[D])" in repr(f)


def test_from_file(tmp_path):
    p = tmp_path / "f.loom"
    p.write_text(TEXT)
    assert loom.Fusion.from_file(p).name == "scale_add"


def test_segments_and_dumps():
    f = loom.Fusion.builtin("group_norm", "f16")
    seg = f.segments({"N": 8}, layouts={"x": "nhwc"})
    assert seg["kernels"] == 1 and seg["segments"][0]["scheduler"] == "normalization"
    assert loom.Fusion.builtin("layer_norm_backward").segments({"N": 4096, "D": 1024})["kernels"] == 1
    assert ".target sm_80" in f.dump("ptx", target=(80, 108))
    assert "grid" not in f.dump("schedule", {"N": 32, "C": 128, "H": 256, "W": 256}, {"x": [0, 2, 3, 1]},
                                knobs={"LOOM_NO_GRID": 1}).split("tier ")[1][:10]
    assert f.dump("ir") == f.text
    assert "after pass" in f.dump("kir")


def test_eval_layer_norm_f32_strided():
    f = loom.Fusion.builtin("layer_norm", "f32")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 33)).astype(np.float32).T  # 33 x 64, column-major in memory
    w = rng.standard_normal(64).astype(np.float32)
    b = rng.standard_normal(64).astype(np.float32)
    (y,) = f.eval(x, w, b)
    assert y.dtype == np.float32 and y.shape == (33, 64)
    np.testing.assert_allclose(y, layer_norm_ref(x, w, b), rtol=1e-5, atol=1e-5)


def test_eval_f16_and_bf16():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 128)).astype(np.float16)
    w = rng.standard_normal(128).astype(np.float16)
    b = rng.standard_normal(128).astype(np.float16)
    (y,) = loom.Fusion.builtin("layer_norm", "f16").eval(x, w, b)
    assert y.dtype == np.float16
    np.testing.assert_allclose(y.astype(np.float32), layer_norm_ref(x, w, b), rtol=2e-3, atol=4e-3)
    # bf16 inputs from float arrays (rounded to bf16), bf16 outputs as float32.
    xr = rng.standard_normal((3, 256)).astype(np.float32)
    wr = rng.standard_normal(256).astype(np.float32)
    (y,) = loom.Fusion.builtin("rms_norm", "bf16").eval(xr, wr)
    assert y.dtype == np.float32 and y.shape == (3, 256)
    bits = (xr.view(np.uint32) + 0x7FFF + ((xr.view(np.uint32) >> 16) & 1)) >> 16 << 16
    xb = bits.astype(np.uint32).view(np.float32).astype(np.float64)
    wb = (((wr.view(np.uint32) + 0x7FFF + ((wr.view(np.uint32) >> 16) & 1)) >> 16 << 16)
          .astype(np.uint32).view(np.float32))
    ref = xb / np.sqrt((xb * xb).mean(-1, keepdims=True) + 1e-6) * wb
    np.testing.assert_allclose(y, ref, rtol=1e-2, atol=2e-2)


def test_eval_several_outputs_and_sizes():
    f = loom.Fusion.from_text(TEXT)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([1, 2, 3], np.float32)
    y, s = f.eval(x, b)
    np.testing.assert_array_equal(y, x + b)
    np.testing.assert_array_equal(s, (x + b).sum(1))
    with pytest.raises(loom.InputError, match="D=4"):
        f.eval(x, b, sizes={"D": 4})


def test_eval_zero_size_and_ints():
    f = loom.Fusion.from_text("fusion neg {\n  in x: i64[N]\n  t0: i64[N] = neg(x)\n  out y = t0\n}\n")
    (y,) = f.eval(np.array([3, -4, 5], np.int64))
    np.testing.assert_array_equal(y, [-3, 4, -5])
    (y,) = f.eval(np.zeros(0, np.int64))
    assert y.shape == (0,)


def test_errors():
    with pytest.raises(loom.InputError, match=r"<input>:2:9: error: expected a dtype"):
        loom.Fusion.from_text("fusion f {\n  in x: f99[N]\n}\n")
    with pytest.raises(loom.InputError, match="the built-ins are"):
        loom.Fusion.builtin("layer_nrom")
    with pytest.raises(loom.InputError, match="not a dtype"):
        loom.Fusion.builtin("layer_norm", "f8")
    f = loom.Fusion.builtin("group_norm")
    with pytest.raises(loom.InputError, match="has no input `y`"):
        f.segments(layouts={"y": "nhwc"})
    with pytest.raises(loom.InputError, match="permutation of 0..3"):
        f.dump("kir", layouts={"x": [0, 3, 3, 1]})
    with pytest.raises(loom.InputError, match="no tuning knob"):
        f.segments(knobs={"LOOM_TUNE_NOTHING": 1})
    with pytest.raises(loom.InputError, match="loom emits PTX for"):
        f.dump("ptx", target=(75, 40))
    with pytest.raises(loom.InputError, match="sizes must be 0 or more"):
        f.segments({"N": -1})
    assert f.segments({"N": 0})["kernels"] == 0  # a size of 0: no kernels, said as such
    assert f.segments({"N": 0})["rejections"] == ["N is 0: no kernels"]
    with pytest.raises(loom.ArgumentError, match="is not a whole number"):
        f.segments({"N": 2.5})
    with pytest.raises(loom.InputError, match="sass"):
        f.dump("sass")
    g = loom.Fusion.from_text(TEXT)
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(loom.ArgumentError, match="takes 2 inputs"):
        g.eval(x)
    with pytest.raises(loom.InputError, match="`b`"):
        g.eval(x, np.zeros(3, np.float16))
    with pytest.raises(loom.ArgumentError, match="has no loom dtype"):
        g.eval(x, np.zeros(3, np.complex64))
    # A LoomError is also the matching built-in exception.
    assert issubclass(loom.InputError, ValueError) and issubclass(loom.NoGpuError, RuntimeError)


@pytest.mark.skipif(loom.gpu_available(), reason="checks the no-GPU message")
def test_run_without_gpu():
    class Cai:
        def __init__(self, shape):
            self.__cuda_array_interface__ = {"shape": shape, "typestr": "<f4", "data": (4096, False),
                                             "strides": None, "version": 3}
    g = loom.Fusion.from_text(TEXT)
    with pytest.raises(loom.NoGpuError, match="no GPU found"):
        g.run(Cai((2, 3)), Cai((3,)), out=[Cai((2, 3)), Cai((2,))])
    with pytest.raises(loom.ArgumentError, match="give `out=`"):
        g.run(Cai((2, 3)), Cai((3,)))
    with pytest.raises(loom.ArgumentError, match="is no GPU tensor"):
        g.run(np.zeros((2, 3)), Cai((3,)), out=[])
    with pytest.raises(loom.NoGpuError, match="no GPU found"):
        loom.select_device(1)
    assert loom.selected_device() == 0


def test_library_not_found():
    env = dict(os.environ, LOOM_LIBRARY="/nonexistent/libloom.so.0")
    r = subprocess.run([sys.executable, "-c", "import loom"], env=env, capture_output=True, text=True,
                       cwd=Path(__file__).resolve().parents[1])
    assert r.returncode != 0 and "libloom.so.0 not found" in r.stderr and "LOOM_LIBRARY" in r.stderr


@pytest.mark.parametrize("act", ["relu", "silu", "gelu", "gelu_tanh", "sigmoid", "tanh"])
@pytest.mark.parametrize("op,extra,shape", [("layer_norm", {}, (3, 20)), ("group_norm", {"groups": 2}, (2, 6, 5)),
                                            ("layer_norm_2d", {}, (2, 6, 5)), ("batch_norm", {}, (3, 6, 4))])
def test_fused_activation_backward_is_the_forwards_gradient(op, extra, shape, act):
    # In float64 on the reference evaluator: the backward op with act= against central differences
    # of the forward op with act= (the activation's input recomputed from the statistics).
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(0)
    fwd = loom.Fusion.op(op, x="f64", w="f64", b="f64", act=act, rank=len(shape), **extra)
    bwd = loom.Fusion.op(op + "_backward", x="f64", w="f64", b="f64", act=act, rank=len(shape), **extra)
    c = shape[-1] if op == "layer_norm" else shape[1]
    x, w, b = rng.standard_normal(shape), rng.standard_normal(c), rng.standard_normal(c)
    dy, v = rng.standard_normal(shape), rng.standard_normal(shape)

    def run(f, **named):
        return dict(zip(f.outputs, f.eval(*[named[n] for n in f.inputs])))

    out = run(fwd, x=x, w=w, b=b)
    stats = {k: v for k, v in out.items() if k != "y"}
    if op == "batch_norm":
        stats = {"save_mean": out["save_mean"], "save_invstd": out["save_invstd"]}
    g = run(bwd, dy=dy, x=x, w=w, b=b, **stats)
    h = 1e-6
    numeric = (np.sum(dy * run(fwd, x=x + h * v, w=w, b=b)["y"]) - np.sum(dy * run(fwd, x=x - h * v, w=w, b=b)["y"])) / (2 * h)
    assert abs(np.sum(g["dx"] * v) - numeric) < 1e-5 * max(1.0, abs(numeric))
    u = rng.standard_normal(c)
    numeric_w = (np.sum(dy * run(fwd, x=x, w=w + h * u, b=b)["y"]) - np.sum(dy * run(fwd, x=x, w=w - h * u, b=b)["y"])) / (2 * h)
    assert abs(np.sum(g["dw"] * u) - numeric_w) < 1e-5 * max(1.0, abs(numeric_w))
    numeric_b = (np.sum(dy * run(fwd, x=x, w=w, b=b + h * u)["y"]) - np.sum(dy * run(fwd, x=x, w=w, b=b - h * u)["y"])) / (2 * h)
    assert abs(np.sum(g["db"] * u) - numeric_b) < 1e-5 * max(1.0, abs(numeric_b))


def test_framework_op_forms():
    # stats=0: y alone; batch norm's cumulative average reads num_batches_tracked (1 / its value).
    np = pytest.importorskip("numpy")
    assert loom.Fusion.op("layer_norm", x="f16", stats=0).outputs == ["y"]
    assert loom.Fusion.op("rms_norm", x="f16", stats=0).outputs == ["y"]
    f = loom.Fusion.op("batch_norm", x="f64", running="f64", cumulative=1, rank=3)
    assert f.inputs == ["x", "running_mean", "running_var", "num_batches_tracked"]
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 3, 5))
    rm, rv = rng.standard_normal(3), rng.random(3) + 0.5
    out = dict(zip(f.outputs, f.eval(x, rm, rv, np.array(4, dtype=np.int64))))
    mean, var = x.mean(axis=(0, 2)), x.var(axis=(0, 2), ddof=1)
    assert np.allclose(out["new_running_mean"], rm * 0.75 + mean * 0.25)
    assert np.allclose(out["new_running_var"], rv * 0.75 + var * 0.25)
    with pytest.raises(loom.InputError, match="act=swish is not an activation"):
        loom.Fusion.op("layer_norm", x="f16", act="swish")


def _philox4x32_10(ctr, key):
    # An independent Philox4x32-10 (Salmon et al. 2011), to check loom's against.
    m = 0xFFFFFFFF
    c, k = list(ctr), list(key)
    for r in range(10):
        if r:
            k = [(k[0] + 0x9E3779B9) & m, (k[1] + 0xBB67AE85) & m]
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & m, (p0 >> 32) ^ c[3] ^ k[1], p0 & m]
    return c


def test_eval_random_numbers_and_iota():
    f = loom.Fusion.from_text(
        "fusion noise {\n  in seed: i64[]\n  in offset: i64[]\n"
        "  u: f32[N, 3] = rand_uniform(seed, offset, dtype=f32, shape=[N, 3])\n"
        "  i: i32[N, 3] = iota(dtype=i32, shape=[N, 3], dim=0)\n  out u = u\n  out i = i\n}\n")
    seed, offset = (5 << 32) + 17, (1 << 32) - 2  # the counter's low word wraps into its high one
    u, i = f.eval(np.array(seed, np.int64), np.array(offset, np.int64), sizes={"N": 4})
    want = []
    for e in range(12):
        c = offset + e
        w = _philox4x32_10([c & 0xFFFFFFFF, c >> 32, 0, 0], [seed & 0xFFFFFFFF, seed >> 32])
        want.append((w[0] >> 8) * 2.0**-24)
    np.testing.assert_array_equal(u.reshape(-1), np.array(want, np.float32))
    np.testing.assert_array_equal(i, np.repeat(np.arange(4), 3).reshape(4, 3))
