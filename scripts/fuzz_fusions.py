#!/usr/bin/env python3
"""Seeded random fusions in loom's text format, through every CPU stage: no GPU needed.

Each case writes a fusion of one to three inputs (rank 1 to 4, f16, bf16 or f32, any memory
order) built from random pointwise ops, casts, reductions over random dims (kept as size-1
dims and used again, as normalizations do), broadcasts, permutes, and outputs of any of those.
It then runs `loom segment`, `loom dump --stage ptx` (every kernel through ptxas) and `loom
eval` (the float64 reference) on small sizes, and fails on a crash, an internal error or PTX that
ptxas rejects, or on a kernel that iterates more elements than any value holds (rows
repeated for nothing). With --run (on the GPU machine) `loom run` replaces eval, --batch cases
to a `loom run --batch` process (one CUDA context for many cases), and a mismatch against
the reference fails too. --jobs runs cases (and batches) in parallel. Group norm's shape is among the steps: C split into 4 x C/4 by a
reshape, statistics over some split dims, applied, and reshaped back. Some fusions read gate
matrices as slices, as the LSTM and GRU cells do. A fusion loom refuses with a user error (say, a reduction over atoms another
reduction splits) is counted as refused, with the first line of its message.

    python3 scripts/fuzz_fusions.py [--seed S] [--cases N] [--budget-s T] [--keep DIR] [--jobs J]
                                    [--run [--batch B]] [--symbolic]

--symbolic runs every other case (with --run, every other batch) under LOOM_TUNE_SYMBOLIC=1:
kernels that take their leading size at run time.

A failure prints the fusion's file (under --keep, or a temporary directory it keeps) and the
command that reproduces it.
"""
import argparse
import concurrent.futures
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_compile  # noqa: E402  (ptxas over every kernel a dump prints)

UNARY = ["neg", "abs", "relu", "exp", "tanh", "sigmoid", "silu", "sqrt", "rsqrt", "log", "gelu", "erf",
         "exp2", "log2", "reciprocal", "sin", "cos", "gelu_tanh", "floor", "ceil", "round"]
BINARY = ["add", "sub", "mul", "div", "max", "min"]
# With a constant second operand (rank 0, stretched over the first).
SCALAR = [("mul", "0.5"), ("add", "-3"), ("div", "7"), ("sub", "1e-05"), ("pow", "2"), ("pow", "0.5"),
          ("remainder", "0.75"), ("max", "0"), ("min", "1.5")]
COMPARE = ["lt", "le", "gt", "ge", "eq", "ne"]
REDUCE = ["sum", "amax", "amin", "mean"]
SYMS = ["N", "C", "H", "W"]


class Gen:
    def __init__(self, rng):
        self.rng = rng
        self.lines = []
        self.n = 0
        self.values = []  # (name, dtype, shape): shape entries are symbols or "1b"

    def fresh(self):
        self.n += 1
        return f"t{self.n}"

    @staticmethod
    def ty(dtype, shape):
        return f"{dtype}[{', '.join(shape)}]"

    def emit(self, dtype, shape, rhs):
        name = self.fresh()
        self.lines.append(f"  {name}: {self.ty(dtype, shape)} = {rhs}")
        self.values.append((name, dtype, shape))
        return name, dtype, shape

    def pick(self, want_full=None):
        cands = [v for v in self.values if v[1] != "bool"]
        if want_full is not None:
            cands = [v for v in cands if v[2] == want_full] or cands
        return self.rng.choice(cands)

    def f32(self, v):
        return v if v[1] == "f32" else self.emit("f32", v[2], f"cast({v[0]}, to=f32)")

    def step(self, full):
        rng = self.rng
        r = rng.random()
        if r < 0.3:
            v = self.f32(self.pick(full))
            return self.emit("f32", v[2], f"{rng.choice(UNARY)}({v[0]})")
        if r < 0.55:
            a = self.f32(self.pick(full))
            # The other operand: the same shape, or one whose size-1 dims broadcast over a's.
            others = [v for v in self.values if v[1] != "bool" and len(v[2]) == len(a[2]) and
                      all(y == x or y == "1b" for x, y in zip(a[2], v[2]))]
            b = self.f32(rng.choice(others)) if others else a
            shape = [x if x != "1b" else y for x, y in zip(a[2], b[2])]
            return self.emit("f32", shape, f"{rng.choice(BINARY)}({a[0]}, {b[0]})")
        if r < 0.75:
            v = self.f32(self.pick(full))
            dims = [i for i, x in enumerate(v[2]) if x != "1b"]
            if not dims:
                return v
            k = rng.randint(1, len(dims))
            red = sorted(rng.sample(dims, k))
            shape = ["1b" if i in red else x for i, x in enumerate(v[2])]
            if rng.random() < 0.25:
                names = [self.fresh() for _ in range(3)]
                n_shape = self.ty("i64", shape)
                self.lines.append(f"  {names[0]}: {self.ty('f32', shape)}, {names[1]}: {self.ty('f32', shape)}, "
                                  f"{names[2]}: {n_shape} = var_mean({v[0]}, dims={red}, correction={rng.choice([0, 1])}, "
                                  f"keepdim=true)")
                self.values.append((names[0], "f32", shape))
                self.values.append((names[1], "f32", shape))
                return self.values[-1]
            return self.emit("f32", shape, f"{rng.choice(REDUCE)}({v[0]}, dims={red}, keepdim=true)")
        if r < 0.8 and "C" in full and len(full) >= 3:
            return self.group(full)
        if r < 0.85:
            v = self.pick(full)
            to = rng.choice(["f16", "bf16", "f32"])
            return self.emit(to, v[2], f"cast({v[0]}, to={to})")
        if r < 0.9:
            v = self.f32(self.pick(full))
            op, c = rng.choice(SCALAR)
            k = self.emit("f32", [], f"const({c}, dtype=f32)")
            return self.emit("f32", v[2], f"{op}({v[0]}, {k[0]})")
        if r < 0.95:
            # where(a cmp b, a, b) over two values of the same shape.
            a = self.f32(self.pick(full))
            same = [v for v in self.values if v[1] != "bool" and v[2] == a[2]]
            b = self.f32(rng.choice(same))
            cond = self.emit("bool", a[2], f"{rng.choice(COMPARE)}({a[0]}, {b[0]})")
            return self.emit("f32", a[2], f"where({cond[0]}, {a[0]}, {b[0]})")
        # A reduced value broadcast back explicitly: drop its size-1 dims, then broadcast.
        reduced = [v for v in self.values if "1b" in v[2] and v[1] != "bool" and any(x != "1b" for x in v[2])]
        if not reduced:
            return self.step(full)
        v = rng.choice(reduced)
        keep = [i for i, x in enumerate(v[2]) if x != "1b"]
        drop = [i for i, x in enumerate(v[2]) if x == "1b"]
        sq = self.emit(v[1], [v[2][i] for i in keep], f"squeeze({v[0]}, dims={drop})")
        new = ["true" if x == "1b" else "false" for x in v[2]]
        return self.emit(v[1], v[2], f"broadcast({sq[0]}, new=[{', '.join(new)}])")


    def group(self, full):
        # Group norm's shape: C split into 4 groups of C/4, statistics over some of the split
        # dims, applied to the split value, and the result reshaped back.
        rng = self.rng
        v = self.f32(self.pick(full))
        if v[2] != full:
            return v
        c = full.index("C")
        split = full[:c] + ["4", "C/4"] + full[c + 1:]
        sv = self.emit("f32", split, f"reshape({v[0]}, shape=[{', '.join(split)}])")
        red = sorted(rng.sample(range(len(split)), rng.randint(1, len(split) - 1)))
        rshape = ["1b" if i in red else x for i, x in enumerate(split)]
        m = self.emit("f32", rshape, f"{rng.choice(['mean', 'amax', 'sum'])}({sv[0]}, dims={red}, keepdim=true)")
        d = self.emit("f32", split, f"{rng.choice(['sub', 'mul', 'div'])}({sv[0]}, {m[0]})")
        return self.emit("f32", full, f"reshape({d[0]}, shape=[{', '.join(full)}])")


def gate_fusion(rng, idx):
    # LSTM/GRU-style: one gate matrix [N, k*W] (and sometimes a second) read as k slices
    # [N, W], combined pointwise, sometimes reduced over W, the result cast back.
    g = Gen(rng)
    k = rng.randint(2, 4)
    full = ["N", "W"]
    ins = []
    parts = []
    for i in range(rng.randint(1, 2)):
        dt = rng.choice(["f16", "bf16", "f32"])
        name = f"x{i}"
        ins.append(f"  in {name}: {dt}[N, {k}*W]")
        for j in range(k):
            lo = "0" if j == 0 else ("W" if j == 1 else f"{j}*W")
            hi = "W" if j == 0 else f"{j + 1}*W"
            parts.append(g.emit(dt, full, f"slice({name}, starts=[0, {lo}], stops=[N, {hi}])"))
    for _ in range(rng.randint(2, 8)):
        g.step(full)
    outs = [g.values[-1]] + ([rng.choice(parts)] if rng.random() < 0.3 else [])
    if rng.random() < 0.4:
        # Gate gradients written side by side: a concat of values of the gate shape (as an LSTM
        # cell's backward writes its [N, 4W] matrix), along either dim.
        last = g.values[-1]
        same = [v for v in g.values if v[1] == last[1] and list(v[2]) == full]
        pieces = [rng.choice(same)[0] for _ in range(rng.randint(1, 4))] if same else []
        if pieces:
            m = len(pieces)
            dims = ["N", f"{m}*W" if m > 1 else "W"] if rng.random() < 0.7 else [f"{m}*N" if m > 1 else "N", "W"]
            dim = 1 if dims[0] == "N" and (m == 1 or dims[1] != "W") else 0
            outs.append(g.emit(last[1], dims, f"concat({', '.join(pieces)}, dim={dim})"))
    out_lines, seen = [], set()
    for n_, v in enumerate(outs):
        if v[0] not in seen:
            seen.add(v[0])
            out_lines.append(f"  out y{n_} = {v[0]}")
    text = "\n".join([f"fusion fz{idx} {{", *ins, *g.lines, *out_lines, "}"]) + "\n"
    sizes = {"N": rng.choice([1, 3, 64, 255, 1024]), "W": rng.choice([1, 7, 64, 256, 1000])}
    return text, sizes, None


def reduce_fusion(rng, idx):
    """A matrix reduced to few outputs: to one element, along rows, down columns (two reduction
    patterns in one fusion), of a pointwise function of one or two inputs, at shapes from one
    long row to many short ones."""
    g = Gen(rng)
    full = ["A", "B"]
    ins = []
    for i in range(rng.randint(1, 2)):
        dt = rng.choice(["f16", "bf16", "f32"])
        ins.append(f"  in x{i}: {g.ty(dt, full)}")
        g.values.append((f"x{i}", dt, list(full)))
    v = g.f32(g.values[-1])
    if len(ins) == 2 or rng.random() < 0.5:
        v = g.emit("f32", full, f"{rng.choice(BINARY)}({g.f32(g.values[0])[0]}, {v[0]})")
    outs = []
    if rng.random() < 0.4:
        # A value of the rows' reduction over the whole matrix, as a backward pass's dx, beside
        # reductions of it down the columns (its dw and db): one kernel with column reductions.
        m = g.emit("f32", ["A", "1b"], f"{rng.choice(REDUCE)}({v[0]}, dims=[1], keepdim=true)")
        v = g.emit("f32", full, f"{rng.choice(BINARY)}({v[0]}, {m[0]})")
        outs.append(v)
    for pattern in rng.sample(["all", "rows", "cols"], rng.randint(1, 3)):
        op = rng.choice(REDUCE)
        if pattern == "all":
            r = g.emit("f32", [], f"{op}({v[0]}, dims=[0, 1], keepdim=false)")
        elif pattern == "rows":
            r = g.emit("f32", ["A", "1b"], f"{op}({v[0]}, dims=[1], keepdim=true)")
        else:
            r = g.emit("f32", ["1b", "B"], f"{op}({v[0]}, dims=[0], keepdim=true)")
        if rng.random() < 0.3:
            r = g.emit("f32", r[2], f"{rng.choice(UNARY)}({r[0]})")
        outs.append(r)
    out_lines = [f"  out y{k} = {r[0]}" for k, r in enumerate(outs)]
    text = "\n".join([f"fusion fr{idx} {{", *ins, *g.lines, *out_lines, "}"]) + "\n"
    a, b = rng.choice([(1, 1 << 20), (3, 100003), (65544, 3), (1531, 77), (4096, 1024), (1024, 4096),
                       (1, 5), (7, 1), (300, 3000), (100000, 40)])
    return text, {"A": a, "B": b}, ("1,0" if rng.random() < 0.3 else None)


def random_fusion(rng, idx):
    if rng.random() < 0.15:
        return reduce_fusion(rng, idx)
    if rng.random() < 0.15:
        return gate_fusion(rng, idx)
    g = Gen(rng)
    rank = rng.randint(1, 4)
    full = SYMS[4 - rank:] if rank < 4 else SYMS[:]
    ins = []
    for i in range(rng.randint(1, 3)):
        dt = rng.choice(["f16", "bf16", "f32"])
        if i == 0 or rng.random() < 0.6:
            shape = list(full)
        else:  # a per-channel weight: one of the full shape's dims
            shape = [rng.choice(full)]
        name = f"x{i}"
        ins.append(f"  in {name}: {g.ty(dt, shape)}")
        g.values.append((name, dt, shape))
        if len(shape) == 1 and len(full) > 1:
            new = ["false" if s == shape[0] else "true" for s in full]
            if new.count("false") == 1:
                v = g.emit(dt, [s if s == shape[0] else "1b" for s in full], f"broadcast({name}, new=[{', '.join(new)}])")
    for _ in range(rng.randint(2, 10)):
        g.step(full)
    if rng.random() < 0.2 and rank >= 2:
        v = g.pick(full)
        if "1b" not in v[2]:
            order = list(range(rank))
            rng.shuffle(order)
            g.emit(v[1], [v[2][i] for i in order], f"permute({v[0]}, order={order})")
    # Outputs: the last value, and sometimes another one.
    outs = [g.values[-1]]
    if rng.random() < 0.5:
        outs.append(rng.choice(g.values[len(ins):] or g.values))
    out_lines, seen = [], set()
    for k, v in enumerate(outs):
        if v[0] in seen or v[0].startswith("x"):
            continue
        seen.add(v[0])
        out_lines.append(f"  out y{k} = {v[0]}")
    if not out_lines:
        v = g.emit("f32", g.values[0][2], f"cast({g.values[0][0]}, to=f32)")
        out_lines.append(f"  out y0 = {v[0]}")
    text = "\n".join([f"fusion fz{idx} {{", *ins, *g.lines, *out_lines, "}"]) + "\n"
    sizes = {s: rng.choice([1, 2, 3, 5, 8, 16, 31, 64, 127, 256]) for s in full}
    if "C" in sizes:  # 4 groups of C/4 channels
        sizes["C"] = rng.choice([4, 8, 12, 32, 64, 128, 256])
    while True:  # the reference evaluator holds every value in float64: at most 2^22 elements
        total = 1
        for v in sizes.values():
            total *= v
        if total <= 1 << 22:
            break
        big = max(sizes, key=sizes.get)
        sizes[big] = max(4 if big == "C" else 1, sizes[big] // 4)
    layout = None
    if rank >= 2 and rng.random() < 0.4:
        order = list(range(rank))
        rng.shuffle(order)
        layout = ",".join(map(str, order))
    return text, sizes, layout


def run_case(args, work, i, text, sizes, layout, t0):
    """segment, dump (every kernel through ptxas) and eval or run one case: (status, why, segment text)."""
    if time.time() - t0 > args.budget_s:
        return "budget", "", ""
    path = os.path.join(work, f"case{i}.loom")
    with open(path, "w") as fh:
        fh.write(text)
    common = [a for s, v in sorted(sizes.items()) for a in ("--dim", f"{s}={v}")]
    if layout:
        common += ["--layout", f"x0={layout}"]
    status, why, seg_out = "ok", "", ""
    # With --run, `loom run` comes later, many cases to a process (run_batch).
    stages = [["segment", path], ["dump", path, "--stage", "ptx"]] + ([] if args.run else [["eval", path]])
    symbolic = args.symbolic and i % 2 == 1
    env = dict(os.environ, LOOM_TUNE_SYMBOLIC="1") if symbolic else None
    for cmd in stages:
        line = ("LOOM_TUNE_SYMBOLIC=1 " if symbolic else "") + " ".join(["loom", *cmd, *common])
        p = subprocess.run([args.loom, *cmd, *common], capture_output=True, text=True, timeout=300, env=env)
        err = p.stderr.strip()
        # A GPU result that differs from the reference is a failure, not a refusal.
        mismatch = "does not match" in err or "MISMATCH" in p.stdout
        # A failing driver call (an illegal address, a launch failure) is the GPU's, never a refusal.
        if p.returncode == 1 and "loom: error:" in err and "internal" not in err and not mismatch and "CUDA" not in err:
            return "refused", err.splitlines()[0], seg_out
        if p.returncode != 0 or mismatch:
            return "FAIL", f"{line}\n  exit {p.returncode}: {(p.stdout + err)[-500:]}", seg_out
        if cmd[0] == "segment":
            seg_out = p.stdout
            # No kernel iterates more than the largest value holds (4x the sizes' product
            # covers the gate matrices): more means rows repeated for nothing.
            most = 4
            for v in sizes.values():
                most *= v
            for rows, elems in re.findall(r"(\d+) rows? over \{[^}]*\} x (\d+) elements", p.stdout):
                if int(rows) * int(elems) > most:
                    return "FAIL", f"{line}\n  {rows} rows x {elems} elements: more than any value holds", seg_out
            for n_el in re.findall(r"params:  (\d+) elements as", p.stdout):
                if int(n_el) > most:
                    return "FAIL", f"{line}\n  {n_el} elements: more than any value holds", seg_out
        if cmd[0] == "dump":
            errors, _ = fuzz_compile.ptxas_all(args.ptxas, "sm_90", p.stdout, os.path.join(work, f"case{i}.ptx"))
            if errors:
                return "FAIL", f"{line}\n  {errors[0]}", seg_out
    return status, why, seg_out


def run_line(work, i, sizes, layout):
    """`loom run`'s arguments for case i (a line of a --batch file)."""
    common = [a for s, v in sorted(sizes.items()) for a in ("--dim", f"{s}={v}")]
    if layout:
        common += ["--layout", f"x0={layout}"]
    return [os.path.join(work, f"case{i}.loom"), "--iters", "0", "--seed", str(i), *common]


def run_batch(args, work, batch):
    """`loom run --batch` over [(i, run arguments)]: {i: (status, why)}."""
    path = os.path.join(work, f"batch{batch[0][0]}.txt")
    with open(path, "w") as fh:
        fh.write("".join(" ".join(a) + "\n" for _, a in batch))
    symbolic = args.symbolic and (batch[0][0] // args.batch) % 2 == 1
    env = dict(os.environ, LOOM_TUNE_SYMBOLIC="1") if symbolic else None
    p = subprocess.run([args.loom, "run", "--batch", path], capture_output=True, text=True,
                       timeout=60 + 30 * len(batch), env=env)
    results = {}
    for k, line in re.findall(r"^== result (\d+): (.*)$", p.stdout, re.M):
        i, a = batch[int(k) - 1]
        cmd = ("LOOM_TUNE_SYMBOLIC=1 " if symbolic else "") + "loom run " + " ".join(a)
        if line == "ok":
            results[i] = ("ok", "")
        elif (line.startswith("error: ") and "internal" not in line and "no NVIDIA GPU found" not in line
              and "CUDA" not in line):
            results[i] = ("refused", "loom: " + line)
        else:
            results[i] = ("FAIL", f"{cmd}\n  {line}")
    for i, a in batch:  # cases after a crash of the batch process
        if i not in results:
            results[i] = ("FAIL", f"loom run {' '.join(a)}\n  the batch process ended (exit {p.returncode}) "
                                  f"before this case: {(p.stdout + p.stderr)[-300:]}")
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--loom", default="build/bin/loom")
    ap.add_argument("--ptxas", default="/usr/local/cuda/bin/ptxas")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--budget-s", type=float, default=600.0)
    ap.add_argument("--keep", help="directory for the cases' files (default: a temporary one, kept on failure)")
    ap.add_argument("--jobs", type=int, default=1, help="cases (or --run batches) at once, each in its own loom processes")
    ap.add_argument("--batch", type=int, default=25, help="with --run: cases a `loom run --batch` process runs")
    ap.add_argument("--symbolic", action="store_true",
                    help="every other case (with --run, batch) under LOOM_TUNE_SYMBOLIC=1")
    ap.add_argument("--run", action="store_true",
                    help="on the GPU machine: `loom run --iters 0` (checked against the reference) instead of eval")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    work = args.keep or tempfile.mkdtemp(prefix="loom-fuzz-fusions-")
    os.makedirs(work, exist_ok=True)
    failures, refused, ok, skipped, columns = [], {}, 0, 0, 0
    t0 = time.time()
    # The cases are drawn here, in order, whatever --jobs: the same seed gives the same cases.
    cases = [random_fusion(rng, i) for i in range(args.cases)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda ic: run_case(args, work, ic[0], *ic[1], t0), enumerate(cases)))
        if args.run:  # the GPU runs, args.batch cases to a `loom run --batch` process
            todo = [(i, run_line(work, i, c[1], c[2])) for i, c in enumerate(cases) if results[i][0] == "ok"]
            batches = [todo[k:k + args.batch] for k in range(0, len(todo), args.batch)]
            for done in pool.map(lambda b: run_batch(args, work, b), batches):
                for i, (status, why) in done.items():
                    results[i] = (status, why, results[i][2])
        for i, (status, why, seg_out) in enumerate(results):
            path = os.path.join(work, f"case{i}.loom")
            if status == "budget":
                skipped += 1
                continue
            if status == "ok":
                ok += 1
                columns += "column reduction" in seg_out
            elif status == "refused":
                key = re.sub(r"[0-9]+", "#", why)[:120]
                refused[key] = refused.get(key, 0) + 1
            else:
                failures.append((path, why))
            print(f"{i:4d} {status:8s} {path} {why.splitlines()[0] if why else ''}"[:220], flush=True)
    print(f"\n{ok} ok ({columns} with column reductions), {sum(refused.values())} refused, {len(failures)} failed, {skipped} not run (budget) of "
          f"{args.cases} cases in {time.time() - t0:.0f} s (seed {args.seed}"
          + (f"; files in {work})" if failures or args.keep else ")"))
    for key, n in sorted(refused.items(), key=lambda kv: -kv[1]):
        print(f"refused x{n}: {key}")
    for path, why in failures:
        print(f"FAILED: {path}\n  {why}\n")
    if not failures and not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
