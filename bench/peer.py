#!/usr/bin/env python3
"""loom beside PyTorch eager and torch.compile, on the workloads of bench/workloads.txt.

For each workload: seeded inputs are made on the GPU and written as raw files; `loom bench
--json --inputs DIR --save-outputs DIR` runs as a subprocess on exactly those inputs; the same
computation runs in PyTorch eager (the reference loom's outputs are checked against) and under
torch.compile (default mode, compiled afresh for each workload), both timed with
triton.testing.do_bench (L2 flushed before each run, median). GB/s counts every input read once
and every output written once (in-place outputs too), on both sides alike.

Writes DIR/latest.md (table, machine, date, commit), DIR/results.json (everything) and
DIR/bench.png (GB/s against size per workload family). bench/run.sh is the one command to use
on the GPU machine; `python3 bench/peer.py --dry-run` needs neither torch nor a GPU.
"""
import argparse
import datetime
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_workloads import (DTYPE_BYTES, TOLERANCE, fusion_key, input_specs, loom_command,  # noqa: E402
                            numel, output_specs, parse_workloads, traffic_bytes)


# ---------------------------------------------------------------------------------------------
# The PyTorch side

def torch_side():
    """Imports torch lazily (the dry run needs none) and returns the namespace used below."""
    import torch
    import torch.nn.functional as F
    from triton.testing import do_bench
    return torch, F, do_bench


def torch_dtype(torch, name):
    return {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64,
            "i64": torch.int64}[name]


def layout_order(layout, rank):
    if layout in ("nchw", "contiguous"):
        return list(range(rank))
    if layout in ("nhwc", "channels_last"):
        return [0] + list(range(2, rank)) + [1]
    return [int(x) for x in layout.split(",")]


def make_inputs(torch, w, seed):
    """Seeded inputs on the GPU, logical shapes, stored in the workload's layouts."""
    out = []
    for i, (name, dt, shape, lo, hi) in enumerate(input_specs(w)):
        g = torch.Generator(device="cuda")
        g.manual_seed(seed * 1000 + i)
        if dt == "i64":  # indices, uniform in [lo, hi)
            t = torch.randint(int(lo), int(hi), shape, generator=g, device="cuda")
        else:
            t = torch.rand(shape, generator=g, device="cuda", dtype=torch_dtype(torch, dt))
            t.mul_(hi - lo).add_(lo)
        if name in w.layouts:
            order = layout_order(w.layouts[name], len(shape))
            inv = [order.index(d) for d in range(len(shape))]
            t = t.permute(order).contiguous().permute(inv)  # same values, that memory order
        out.append(t)
    return out


def write_raw(torch, t, path):
    """Logical row-major, little-endian, the dtype's own bits."""
    t.contiguous().reshape(-1).view(torch.uint8).cpu().numpy().tofile(path)


def read_raw(torch, path, dt, shape):
    import numpy as np
    a = np.fromfile(path, dtype=np.uint8)
    want = numel(shape) * DTYPE_BYTES[dt]
    if a.size != want:
        raise RuntimeError(f"{path} holds {a.size} bytes, expected {want}")
    return torch.from_numpy(a).cuda().view(torch_dtype(torch, dt)).reshape(shape)


def twins(torch, F, w, inputs):
    """(eager_fn, compile_fn, note): PyTorch's way to compute what loom's built-in computes, each
    returning the outputs in loom's order. eager is what a PyTorch user runs; compile_fn is what
    torch.compile is given (the same where that compiles; a plain formula otherwise)."""
    f = fusion_key(w)
    if f == "layer_norm_backward":
        def fn(dy, x, mean, rstd, wt, b):
            return tuple(torch.ops.aten.native_layer_norm_backward(
                dy, x, [x.shape[-1]], mean, rstd, wt, b, [True, True, True]))
        return fn, fn, "eager: aten.native_layer_norm_backward"
    if f == "rms_norm_backward":
        def formula(dy, x, rstd, wt):  # the exact derivative of F.rms_norm, in f32
            xh = x.float() * rstd
            wdy = dy.float() * wt.float()
            dx = rstd * (wdy - xh * (wdy * xh).mean(-1, keepdim=True))
            return dx.to(x.dtype), (dy.float() * xh).sum(0).to(wt.dtype)

        def fused(dy, x, rstd, wt):  # F.rms_norm's own backward, where this PyTorch has it
            return tuple(torch.ops.aten._fused_rms_norm_backward(dy, x, [x.shape[-1]], rstd, wt, [True, True]))
        try:
            got, want = fused(*inputs), formula(*inputs)
            if all(torch.allclose(g.float(), r.float(), rtol=5e-2, atol=5e-2) for g, r in zip(got, want)):
                return fused, fused, "eager: aten._fused_rms_norm_backward (F.rms_norm's backward)"
            why = "aten._fused_rms_norm_backward disagrees with the formula"
        except Exception as e:  # noqa: BLE001
            why = f"aten._fused_rms_norm_backward not usable here: {type(e).__name__}"
        return formula, formula, f"eager: the formula in f32 ({why})"
    if f == "softmax_backward":
        def fn(dy, y):
            return (torch.ops.aten._softmax_backward_data(dy, y, -1, y.dtype),)
        return fn, fn, "eager: aten._softmax_backward_data"
    if f == "log_softmax_backward":
        def fn(dy, y):
            return (torch.ops.aten._log_softmax_backward_data(dy, y, -1, y.dtype),)
        return fn, fn, "eager: aten._log_softmax_backward_data"
    if f == "batch_norm_backward":
        def fn(dy, x, mean, invstd, wt):
            return tuple(torch.ops.aten.native_batch_norm_backward(
                dy, x, wt, None, None, mean, invstd, True, 1e-5, [True, True, True]))
        return fn, fn, "eager: aten.native_batch_norm_backward"
    if f == "group_norm_backward":
        def fn(dy, x, mean, rstd, wt):  # f32 weight: in f32, as autocast runs group norm
            n, c = x.shape[0], x.shape[1]
            # Its CUDA kernels read NCHW: channels-last inputs are made contiguous first.
            dyf, xf = dy.float().contiguous(), x.float().contiguous()
            dx, dw, db = torch.ops.aten.native_group_norm_backward(
                dyf, xf, mean, rstd, wt, n, c, x[0, 0].numel(), 32, [True, True, True])
            return dx.to(x.dtype), dw, db
        return fn, fn, "eager: aten.native_group_norm_backward in f32 (autocast's dtype for group norm)"
    if f == "instance_norm_backward":
        def fn(dy, x, mean, rstd, wt):  # as PyTorch runs it: batch norm over [1, N*C, H, W]
            n, c = x.shape[0], x.shape[1]
            shape = (1, n * c) + tuple(x.shape[2:])
            dx, dw, db = torch.ops.aten.native_batch_norm_backward(
                dy.reshape(shape), x.reshape(shape), wt.repeat(n), None, None, mean.reshape(-1), rstd.reshape(-1),
                True, 1e-5, [True, True, True])
            return dx.reshape(x.shape), dw.reshape(n, c).sum(0), db.reshape(n, c).sum(0)
        return fn, fn, "eager: aten.native_batch_norm_backward over [1, N*C, H, W], as F.instance_norm"
    if f == "layer_norm_2d_backward":
        def fn(dy, x, mean, rstd, wt):  # timm's LayerNorm2d: layer norm over C of the NHWC view
            dx, dw, db = torch.ops.aten.native_layer_norm_backward(
                dy.permute(0, 2, 3, 1), x.permute(0, 2, 3, 1), [x.shape[1]], mean.permute(0, 2, 3, 1),
                rstd.permute(0, 2, 3, 1), wt, torch.zeros_like(wt), [True, True, True])
            return dx.permute(0, 3, 1, 2), dw, db
        return fn, fn, "eager: aten.native_layer_norm_backward over the NHWC view (timm LayerNorm2d)"
    if f == "lstm_cell_backward":
        aten = torch.ops.aten
        if hasattr(aten, "_thnn_fused_lstm_cell_backward_impl"):
            def fn(dhy, dcy, cx, cy, ws):  # (grad_gates, grad_cx, grad_bias)
                return tuple(aten._thnn_fused_lstm_cell_backward_impl(dhy, dcy, cx, cy, ws, True))
            return fn, fn, "eager: aten._thnn_fused_lstm_cell_backward_impl"
        def fn(dhy, dcy, cx, cy, ws):  # (grad_input_gates, grad_hidden_gates, grad_cx, grad_bias, grad_bias)
            g = aten._thnn_fused_lstm_cell_backward(dhy, dcy, cx, cy, ws, True)
            return g[0], g[2], g[3]
        return fn, fn, "eager: aten._thnn_fused_lstm_cell_backward"
    if f == "gru_cell_backward":
        def fn(dhy, ws):  # (grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias)
            return tuple(torch.ops.aten._thnn_fused_gru_cell_backward(dhy, ws, True))
        return fn, fn, "eager: aten._thnn_fused_gru_cell_backward"
    if f == "layer_norm_train":
        def fn(x, dy, wt, b):  # F.layer_norm's forward with its statistics, then its backward
            y, mean, rstd = torch.ops.aten.native_layer_norm(x, [x.shape[-1]], wt, b, 1e-5)
            dx, dw, db = torch.ops.aten.native_layer_norm_backward(dy, x, [x.shape[-1]], mean, rstd, wt, b,
                                                                   [True, True, True])
            return y, dx, dw, db
        return fn, fn, "eager: aten.native_layer_norm, then aten.native_layer_norm_backward"
    if f == "lstm_cell_train":
        aten = torch.ops.aten

        def fn(ig, hg, cx, bias, dcy):  # the fused cell with its workspace, then its backward without dhy
            # (the fused cell takes both biases or none: loom's one bias beside a zero one)
            hy, cy, ws = aten._thnn_fused_lstm_cell(ig, hg, cx, bias, torch.zeros_like(bias))
            # (the impl takes no undefined grad_hy: an absent one is zero, as loom's none)
            g, gcx, gb = aten._thnn_fused_lstm_cell_backward_impl(torch.zeros_like(cx), dcy, cx, cy, ws, True)
            return hy, cy, g, gcx, gb
        return fn, fn, "eager: aten._thnn_fused_lstm_cell, then aten._thnn_fused_lstm_cell_backward_impl"
    if f == "sum_all":
        def fn(x):
            return (x.sum(dtype=torch.float32),)
        return fn, fn, ""
    if f == "column_sum":
        def fn(x):
            return (x.sum(0, dtype=torch.float32),)
        return fn, fn, ""
    if f == "cross_entropy_backward":
        def fn(dloss, logits, target, lse):  # (softmax - one-hot) * dloss, from the forward's lse
            p = torch.exp(logits.float() - lse[:, None])
            hot = torch.nn.functional.one_hot(target, logits.shape[1]).float()
            return (((p - hot) * dloss.float()[:, None]).to(logits.dtype),)
        return fn, fn, "eager: exp, one_hot, sub, mul"
    if f == "cross_entropy_loss":
        def fn(logits, target):  # each row's loss in f32, as loom's
            return (F.cross_entropy(logits.float(), target.view(-1), reduction="none").view(-1, 1),)
        return fn, fn, ""
    if f == "predicted_class":
        def fn(logits):  # the largest probability of the softmax in f32, and the first largest logit
            return torch.softmax(logits.float(), -1).amax(-1), logits.argmax(-1)
        return fn, fn, ""
    if f == "argmax_rows":
        def fn(logits):
            return (logits.argmax(-1),)
        return fn, fn, ""
    if f == "column_var_mean":
        def fn(x):  # f32 statistics of f16 columns (eager reads an f32 copy; torch.compile fuses the cast)
            v, m = torch.var_mean(x.float(), 0, correction=0)
            return v, m
        return fn, fn, "torch.var_mean(x.float(), 0)"
    if f == "ln_colsum":
        def fn(x):  # layer norm in f32 without affine, then the column sums of that f32 result
            t4 = F.layer_norm(x.float(), (x.shape[-1],), eps=1e-5)
            return t4.to(x.dtype), t4.sum(0)
        return fn, fn, ""
    if f == "layer_norm":
        def fn(x, wt, b):
            return (F.layer_norm(x, (x.shape[-1],), wt, b, 1e-5),)
        return fn, fn, ""
    if f == "rms_norm":
        def fn(x, wt):
            return (F.rms_norm(x, (x.shape[-1],), wt, 1e-6),)
        return fn, fn, ""
    if f == "softmax":
        def fn(x):
            return (torch.softmax(x, -1),)
        return fn, fn, ""
    if f == "log_softmax":
        def fn(x):
            return (torch.log_softmax(x, -1),)
        return fn, fn, ""
    if f == "group_norm":
        def mixed(x, wt, b):  # f16 x with f32 affine: PyTorch's mixed-type kernel, f32 inside
            return (F.group_norm(x, 32, wt, b, 1e-5),)

        def amp(x, wt, b):  # what autocast does: f32 in and out, cast back
            return (F.group_norm(x.float(), 32, wt, b, 1e-5).to(x.dtype),)
        if inputs[0].dtype == inputs[1].dtype:
            return mixed, mixed, ""
        try:
            y = mixed(*inputs)[0]
            assert y.dtype == inputs[0].dtype
            return mixed, mixed, "group_norm mixed dtype (f16 x, f32 affine)"
        except Exception as e:  # noqa: BLE001 - an older PyTorch without the mixed kernel
            return amp, amp, f"group_norm via x.float() ({type(e).__name__})"
    if f == "group_norm_silu":  # examples/fusions/group_norm_silu.loom: a UNet block's norm and activation
        def fn(x, wt, b):  # an f16 model's own: f16 x, weight and bias (f32 inside)
            return (F.silu(F.group_norm(x, 32, wt, b, 1e-5)),)
        return fn, fn, "silu(group_norm(x)), x, weight and bias in one dtype"
    if f == "instance_norm":
        def fn(x, wt, b):
            return (F.instance_norm(x, None, None, wt, b, True, 0.1, 1e-5),)
        return fn, fn, ""
    if f == "batch_norm":
        def fn(x, rm, rv, wt, b):  # updates rm and rv in place, like loom's aliased outputs
            y = F.batch_norm(x, rm, rv, wt, b, True, 0.1, 1e-5)
            return (y, rm, rv)
        return fn, fn, ""
    if f == "layer_norm_2d":
        def fn(x, wt, b):  # timm's LayerNorm2d
            return (F.layer_norm(x.permute(0, 2, 3, 1), (x.shape[1],), wt, b, 1e-6).permute(0, 3, 1, 2),)
        return fn, fn, "timm LayerNorm2d (permute, layer_norm, permute)"
    if f == "lstm_cell":
        # What nn.LSTMCell runs on CUDA after its two GEMMs; only under torch.ops.aten in
        # recent PyTorch (torch._thnn_fused_lstm_cell is gone in 2.11).
        fused_op = getattr(torch.ops.aten, "_thnn_fused_lstm_cell", None) or getattr(torch, "_thnn_fused_lstm_cell", None)

        def fused(x, hg, cx, bi, bh):
            hy, cy, _ = fused_op(x, hg, cx, bi, bh)
            return (hy, cy)

        def formula(x, hg, cx, bi, bh):
            g = x.float() + hg.float() + bi.float() + bh.float()
            i, fg, c, o = g.chunk(4, 1)
            cy = torch.sigmoid(fg) * cx.float() + torch.sigmoid(i) * torch.tanh(c)
            hy = torch.sigmoid(o) * torch.tanh(cy)
            return (hy.to(x.dtype), cy.to(cx.dtype))
        if fused_op is None:
            return formula, formula, "eager and compile: the cell's formula in f32 (no fused cell op in this PyTorch)"
        return fused, formula, "eager: aten._thnn_fused_lstm_cell; compile: the cell's formula in f32"
    if f == "gru_cell":
        fused_op = getattr(torch.ops.aten, "_thnn_fused_gru_cell", None) or getattr(torch, "_thnn_fused_gru_cell", None)

        def fused(x, hg, hx, bi, bh):
            return (fused_op(x, hg, hx, bi, bh)[0],)

        def formula(x, hg, hx, bi, bh):
            ir, iz, inn = (x.float() + bi.float()).chunk(3, 1)
            hr, hz, hn = (hg.float() + bh.float()).chunk(3, 1)
            r, z = torch.sigmoid(ir + hr), torch.sigmoid(iz + hz)
            n = torch.tanh(inn + r * hn)
            return (((1 - z) * n + z * hx.float()).to(hx.dtype),)
        if fused_op is None:
            return formula, formula, "eager and compile: the cell's formula in f32 (no fused cell op in this PyTorch)"
        return fused, formula, "eager: aten._thnn_fused_gru_cell; compile: the cell's formula in f32"
    if f == "add":
        def fn(x, y):
            return (x + y,)
        return fn, fn, ""
    if f == "bias_gelu":
        def fn(x, b):
            return (F.gelu(x.float() + b.float(), approximate="tanh").to(x.dtype),)
        return fn, fn, ""
    raise ValueError(f"no PyTorch twin for `{f}`")


def rel_l2(torch, got, ref):
    """loom's comparison (reference/compare.cpp): ||got - ref|| / ||ref|| over finite places, in
    float64, chunked so 2^31-element tensors fit; non-finite values must sit at the same places."""
    g = got.contiguous().reshape(-1)
    r = ref.contiguous().reshape(-1)
    if g.numel() != r.numel():
        return float("inf"), 0.0, -1
    num = den = 0.0
    max_abs = 0.0
    bad = 0
    step = 1 << 26
    for s in range(0, r.numel(), step):
        gc = g[s:s + step].double()
        rc = r[s:s + step].double()
        gf, rf = torch.isfinite(gc), torch.isfinite(rc)
        both = gf & rf
        same_nonfinite = (torch.isnan(gc) & torch.isnan(rc)) | (gc == rc)
        bad += int((~both & ~same_nonfinite).sum())
        d = torch.where(both, gc - rc, torch.zeros_like(gc))
        num += float((d * d).sum())
        den += float(torch.where(both, rc * rc, torch.zeros_like(rc)).sum())
        if d.numel():
            max_abs = max(max_abs, float(d.abs().max()))
    rel = math.sqrt(num) / max(math.sqrt(den), 1e-30) if den > 0 else math.sqrt(num)
    return rel, max_abs, bad


def compare_outputs(torch, w, got, ref):
    """[{name, rel, tol, ok, ...}] and an overall verdict."""
    rows = []
    for (name, dt, _), gt, rt in zip(output_specs(w), got, ref):
        rel, mx, bad = rel_l2(torch, gt, rt)
        tol = TOLERANCE[dt]
        rows.append({"output": name, "rel_l2": rel, "max_abs": mx, "bad_nonfinite": bad, "tol": tol,
                     "ok": bad == 0 and rel <= tol})
    return rows


def bench_ms(do_bench, fn):
    try:
        return float(do_bench(fn, warmup=25, rep=100, return_mode="median"))
    except TypeError:  # an older triton without return_mode
        return float(do_bench(fn, warmup=25, rep=100, quantiles=[0.5])[0])


def configure_dynamo(torch):
    cfg = torch._dynamo.config
    for k in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
              "accumulated_cache_size_limit"):
        if hasattr(cfg, k):
            setattr(cfg, k, 1 << 16)
    cfg.suppress_errors = False  # a failure to compile is reported, never run eagerly instead


# ---------------------------------------------------------------------------------------------
# One workload


def run_loom(args, w, io_dir, res):
    cmd = loom_command(args.loom, w, io_dir)
    res["loom_cmd"] = " ".join(cmd)
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.loom_timeout)
    except subprocess.TimeoutExpired:
        res["loom_error"] = f"timed out after {args.loom_timeout} s"
        return None
    res["loom_wall_s"] = round(time.perf_counter() - t0, 2)
    res["loom_rc"] = p.returncode
    js = None
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            try:
                js = json.loads(line)
            except json.JSONDecodeError:
                pass
            break
    if p.returncode != 0 or not js or not js.get("ok"):
        err = (js or {}).get("error") or p.stderr.strip().splitlines()[-1:] or [f"exit status {p.returncode}"]
        res["loom_error"] = err if isinstance(err, str) else err[0]
        res["loom_stderr"] = p.stderr[-4000:]
        return None
    res["loom"] = js
    return js


def run_workload(args, w, torch, F, do_bench, res):
    io_dir = Path(args.io_dir) / w.name
    shutil.rmtree(io_dir, ignore_errors=True)
    io_dir.mkdir(parents=True)
    try:
        inputs = make_inputs(torch, w, args.seed)
        specs = input_specs(w)
        with open(io_dir / "inputs.txt", "w") as m:
            for (name, dt, shape, _, _), t in zip(specs, inputs):
                write_raw(torch, t, io_dir / f"input.{name}.bin")
                m.write(f"{name} {dt} {','.join(map(str, shape))} input.{name}.bin\n")
        res["bytes"] = traffic_bytes(w)

        # loom, on exactly these inputs (before the eager run touches in-place ones).
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        js = run_loom(args, w, io_dir, res)
        loom_out = None
        if js:
            if js.get("bytes") != res["bytes"]:
                res.setdefault("notes", []).append(f"loom counts {js.get('bytes')} bytes, peer {res['bytes']}")
            try:
                loom_out = [read_raw(torch, io_dir / f"output.{n}.bin", dt, shape)
                            for n, dt, shape in output_specs(w)]
            except Exception as e:  # noqa: BLE001
                res["agreement_error"] = f"reading loom's outputs: {short(e)}"
        shutil.rmtree(io_dir, ignore_errors=True)

        # Batch norm updates its running statistics in place: the reference and the compiled
        # function's first run get copies of the pristine inputs; timing runs may mutate.
        inplace = w.fusion == "batch_norm"
        pristine = [t.clone() for t in inputs] if inplace else inputs

        def fresh():
            return [t.clone() for t in pristine] if inplace else inputs

        eager, compiled_src, note = twins(torch, F, w, fresh())
        if note:
            res.setdefault("notes", []).append(note)
        ref = None
        try:
            ref = list(eager(*fresh()))
            torch.cuda.synchronize()
            if loom_out is not None:
                res["agreement"] = compare_outputs(torch, w, loom_out, ref)
            res["eager_ms"] = bench_ms(do_bench, lambda: eager(*inputs))
            res["eager_gbps"] = res["bytes"] / (res["eager_ms"] * 1e6)
        except Exception as e:  # noqa: BLE001
            res["eager_error"] = f"{type(e).__name__}: {short(e, 300)}"
        loom_out = None

        if args.no_compile:
            res["compile_error"] = "skipped (--no-compile)"
        elif time.perf_counter() - args.t_start > args.budget_s * args.compile_budget_share:
            res["compile_error"] = "skipped: time budget spent (raise --budget-s)"
        else:
            try:
                torch._dynamo.reset()
                cfn = torch.compile(compiled_src, fullgraph=True, dynamic=False)
                t0 = time.perf_counter()
                c_out = cfn(*fresh())
                torch.cuda.synchronize()
                res["compile_s"] = round(time.perf_counter() - t0, 2)
                if ref is not None:
                    res["compile_vs_eager"] = max(r["rel_l2"] for r in compare_outputs(torch, w, c_out, ref))
                del c_out
                res["compile_ms"] = bench_ms(do_bench, lambda: cfn(*inputs))
                res["compile_gbps"] = res["bytes"] / (res["compile_ms"] * 1e6)
            except Exception as e:  # noqa: BLE001
                res["compile_error"] = f"{type(e).__name__}: {short(e, 300)}"
            torch._dynamo.reset()
        del ref, inputs, pristine
    finally:
        shutil.rmtree(io_dir, ignore_errors=True)
        torch.cuda.empty_cache()


# ---------------------------------------------------------------------------------------------
# Reporting

from peer_report import fmt_num, print_table, save_all, short, table_row, why  # noqa: E402  (bench/peer_report.py)


# ---------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("filter", nargs="?", default="", help="regular expression on workload names")
    ap.add_argument("--workloads", default=str(ROOT / "bench" / "workloads.txt"))
    ap.add_argument("--loom", default=None, help="the loom CLI (default .device/bin/loom, else build/bin/loom)")
    ap.add_argument("--out", default=os.environ.get("OUT") or "/tmp/loom-bench-results")
    ap.add_argument("--io-dir", default=None, help="scratch for raw tensors (default /dev/shm/loom-bench)")
    ap.add_argument("--quick", action="store_true", help="only workloads tagged `quick`")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--budget-s", type=float, default=480.0,
                    help="stop starting workloads after this many seconds (default 480)")
    ap.add_argument("--compile-budget-share", type=float, default=0.8,
                    help="skip torch.compile once this share of the budget is spent (default 0.8)")
    ap.add_argument("--loom-timeout", type=float, default=120.0, help="seconds for one `loom bench` (default 120)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dry-run", action="store_true", help="print the plan; needs no torch and no GPU")
    args = ap.parse_args()
    args.t_start = time.perf_counter()
    if args.loom is None:
        dev = ROOT / ".device" / "bin" / "loom"
        args.loom = str(dev if dev.exists() else ROOT / "build" / "bin" / "loom")

    wls = parse_workloads(args.workloads)
    if args.quick:
        wls = [w for w in wls if "quick" in w.tags]
    if args.filter:
        rx = re.compile(args.filter)
        wls = [w for w in wls if rx.search(w.name)]
    if not wls:
        sys.exit(f"no workload matches (filter `{args.filter}`, quick={args.quick})")

    if args.dry_run:
        total = 0
        for w in wls:
            b = traffic_bytes(w)
            total += b
            ins = ", ".join(f"{n} {dt}[{','.join(map(str, s))}]" for n, dt, s, _, _ in input_specs(w))
            outs = ", ".join(f"{n} {dt}[{','.join(map(str, s))}]" for n, dt, s in output_specs(w))
            print(f"{w.name}: {b / 1e6:.1f} MB moved; inputs {ins}; outputs {outs}")
            print("   " + " ".join(loom_command(args.loom, w, "IO_DIR")))
        print(f"{len(wls)} workloads, {total / 1e9:.2f} GB of traffic per pass; out dir {args.out}")
        return 0

    torch, F, do_bench = torch_side()
    import triton
    configure_dynamo(torch)
    if args.io_dir is None:
        # RAM-backed scratch when it has room for the largest workload's files (inputs + outputs).
        shm = Path("/dev/shm")
        need = max(traffic_bytes(w) for w in wls) + (1 << 30)
        roomy = shm.is_dir() and shutil.disk_usage(shm).free > need
        args.io_dir = str(shm / "loom-bench") if roomy else "/tmp/loom-bench"
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "gpu": torch.cuda.get_device_name(),
        "commit": os.environ.get("LOOM_COMMIT") or git_commit(),
        "torch": torch.__version__, "triton": triton.__version__,
        "mode": ("quick" if args.quick else "full") + (f", filter `{args.filter}`" if args.filter else ""),
        "loom": args.loom,
    }
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,memory.total", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        meta["driver"] = "driver " + smi.stdout.strip().replace(", ", ", memory ")
    except Exception:  # noqa: BLE001
        pass
    # Copy bandwidth through PyTorch, the same method as everything else here.
    src = torch.empty(512 << 20, dtype=torch.uint8, device="cuda").fill_(1)
    dst = torch.empty_like(src)
    ms = bench_ms(do_bench, lambda: dst.copy_(src))
    meta["copy_gbps_torch"] = 2 * src.numel() / (ms * 1e6)
    del src, dst
    torch.cuda.empty_cache()
    print(f"{meta['gpu']}, torch {meta['torch']}, triton {meta['triton']}, commit {meta['commit']}")
    print(f"copy bandwidth (torch, 512 MiB): {meta['copy_gbps_torch']:.0f} GB/s; {len(wls)} workloads; "
          f"loom: {args.loom}")

    results = []
    for k, w in enumerate(wls):
        res = {"name": w.name, "fusion": w.fusion, "dtype": w.dtype, "dims": w.dims, "layouts": w.layouts}
        if time.perf_counter() - args.t_start > args.budget_s:
            res["error"] = f"not run: the {args.budget_s:.0f} s budget was spent"
            results.append(res)
            continue
        t0 = time.perf_counter()
        try:
            run_workload(args, w, torch, F, do_bench, res)
        except Exception as e:  # noqa: BLE001 - one workload's failure must not stop the rest
            res["error"] = f"{type(e).__name__}: {short(e, 300)}"
            try:
                torch.cuda.empty_cache()
            except Exception:  # noqa: BLE001
                pass
        res["wall_s"] = round(time.perf_counter() - t0, 1)
        if res.get("loom", {}).get("copy", {}).get("gbps"):
            meta["copy_gbps_loom"] = res["loom"]["copy"]["gbps"]
        results.append(res)
        x = table_row(res)
        print(f"[{k + 1}/{len(wls)} {time.perf_counter() - args.t_start:5.0f}s] {w.name}: loom {x['loom GB/s']}, "
              f"eager {x['eager GB/s']}, compile {x['compile GB/s']} GB/s, {x['agreement']}"
              + (f"  [{short(why(res), 140)}]" if why(res) else ""), flush=True)
        save_all(args, meta, results, wls)
    save_all(args, meta, results, wls, final=True)
    print()
    print(f"# {meta['gpu']}, commit {meta['commit']}, {meta['date']}; copy bandwidth loom "
          f"{fmt_num(meta.get('copy_gbps_loom'))} GB/s, torch {meta['copy_gbps_torch']:.0f} GB/s")
    print_table(results)
    print(f"\nwrote {Path(args.out) / 'latest.md'} and results.json ({meta['wall_s']} s)")
    mismatches = [r["name"] for r in results if any(not a["ok"] for a in r.get("agreement", []))]
    if mismatches:
        print(f"MISMATCH between loom and PyTorch eager: {', '.join(mismatches)}")
        return 1
    return 0


def git_commit():
    try:
        p = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                           text=True, timeout=10)
        return p.stdout.strip() or "unknown"
    except Exception:  # noqa: BLE001
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
