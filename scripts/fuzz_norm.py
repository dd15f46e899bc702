#!/usr/bin/env python3
"""Seeded random shapes for every normalization built-in, checked on the GPU against the CPU
reference: `loom run` (float64 reference, global and element-wise tolerance) per case, in
NCHW, channels-last and other memory orders (rows also column-major).

On the GPU machine, from the repo root with .device carried:
    python3 scripts/fuzz_norm.py [--seed S] [--cases N] [--budget-s T] [--max-elems E]
Prints one line per case (the schedule's tier, the result, the worst element in units of
tolerance) and the failures last; exits 1 if any case mismatched or crashed. A case that loom
rejects with a user error is listed as rejected, with the message. The same seed gives the same
cases, so a failure is reproduced by the `loom run` line it prints.
"""
import argparse
import os
import random
import re
import subprocess
import sys
import time

ROWS = ["layer_norm", "rms_norm", "softmax", "log_softmax"]
IMAGES = ["group_norm", "batch_norm", "instance_norm", "layer_norm_2d"]
DTYPES = ["f16", "bf16", "f32"]
ROW_N = [1, 2, 3, 7, 127, 1000, 4097, 9001, 33000]
ROW_D = [1, 3, 8, 127, 256, 384, 512, 768, 1000, 1024, 1531, 2048, 4095, 8192, 12289, 16384,
         65536, 65537, 131072, 262147]
IMG_N = [1, 2, 3, 5, 8, 16, 32]
IMG_C = [1, 3, 8, 32, 33, 64, 96, 100, 128, 160, 256, 512]
IMG_HW = [1, 3, 7, 14, 28, 31, 56, 61, 64, 128, 256]

# Shapes that reach each tier of the normalization scheduler on an H100 (registers, thread
# fill, shared memory, cluster, grid with one to three groups, vectors of rows in a block and
# over the grid, pieces of rows, grid sets cut short), perturbed to sizes that do not divide
# evenly.
FIXED = [
    ("layer_norm", "bf16", {"N": 9001, "D": 256}, None),
    ("rms_norm", "f16", {"N": 8447, "D": 1024}, None),
    ("rms_norm", "f32", {"N": 2113, "D": 512}, None),
    ("softmax", "bf16", {"N": 33, "D": 65537}, None),
    ("layer_norm", "f16", {"N": 5, "D": 262147}, None),
    ("log_softmax", "f32", {"N": 3, "D": 1048579}, None),
    ("group_norm", "f16", {"N": 3, "C": 128, "H": 127, "W": 129}, "nhwc"),
    ("group_norm", "f16", {"N": 2, "C": 512, "H": 64, "W": 61}, "nhwc"),
    ("group_norm", "bf16", {"N": 1, "C": 32, "H": 256, "W": 255}, None),
    ("group_norm", "f32", {"N": 5, "C": 96, "H": 61, "W": 61}, "nhwc"),
    ("instance_norm", "f16", {"N": 3, "C": 64, "H": 200, "W": 201}, "nhwc"),
    ("instance_norm", "bf16", {"N": 2, "C": 3, "H": 512, "W": 509}, None),
    ("batch_norm", "f32", {"N": 13, "C": 96, "H": 40, "W": 41}, "nhwc"),
    ("batch_norm", "f16", {"N": 32, "C": 64, "H": 31, "W": 33}, "nhwc"),
    ("batch_norm", "bf16", {"N": 1, "C": 7, "H": 1, "W": 1}, None),
    ("layer_norm_2d", "f16", {"N": 3, "C": 96, "H": 57, "W": 55}, None),
    # pieces of rows (an odd row axis): in a block, f32 by cp.async, in blocks past 48 KiB,
    # and over the grid with the last set cut short
    ("layer_norm_2d", "bf16", {"N": 64, "C": 768, "H": 7, "W": 7}, None),
    ("layer_norm_2d", "f32", {"N": 15, "C": 96, "H": 7, "W": 7}, None),
    ("softmax", "f16", {"N": 2201, "D": 4096}, "1,0"),
    ("instance_norm", "f16", {"N": 8, "C": 33, "H": 96, "W": 96}, "nhwc"),
    # vectors of rows over the grid, the last set cut short
    ("batch_norm", "bf16", {"N": 64, "C": 100, "H": 28, "W": 28}, "nhwc"),
    ("softmax", "bf16", {"N": 1000, "D": 4096}, "1,0"),
    ("layer_norm_2d", "bf16", {"N": 2, "C": 160, "H": 31, "W": 29}, "nhwc"),
]


def elems(dims):
    n = 1
    for v in dims.values():
        n *= v
    return n


def random_case(rng, max_elems):
    while True:
        f = rng.choice(ROWS + IMAGES)
        dt = rng.choice(DTYPES)
        if f in ROWS:
            dims = {"N": rng.choice(ROW_N), "D": rng.choice(ROW_D)}
            # Sometimes column-major: rows side by side, strided along their reduction.
            layout = rng.choice([None, None, "1,0"])
        else:
            c = rng.choice([c for c in IMG_C if f != "group_norm" or c % 32 == 0])
            dims = {"N": rng.choice(IMG_N), "C": c, "H": rng.choice(IMG_HW), "W": rng.choice(IMG_HW)}
            # NCHW, channels-last, or any other memory order (outer to inner).
            perm = [0, 1, 2, 3]
            rng.shuffle(perm)
            layout = rng.choice([None, "nhwc", ",".join(map(str, perm))])
        if elems(dims) <= max_elems:
            return f, dt, dims, layout


def args_for(f, dt, dims, layout):
    a = [f, "--dtype", dt]
    for k in sorted(dims):
        a += ["--dim", f"{k}={dims[k]}"]
    if layout:
        a += ["--layout", f"x={layout}"]
    return a


def tier(loom, a):
    """The schedule's tiers (compiler/schedule/tiers.def), joined by '+' across kernels."""
    p = subprocess.run([loom, "dump", *a, "--stage", "schedule"], capture_output=True, text=True, timeout=120)
    names = re.findall(r"; tier ([^:;]+):", p.stdout)
    return "+".join(names) or ("pointwise" if p.returncode == 0 else "?")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--loom", default=".device/bin/loom" if os.path.exists(".device/bin/loom") else "build/bin/loom")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=120, help="random cases after the fixed ones")
    ap.add_argument("--budget-s", type=float, default=400.0)
    ap.add_argument("--max-elems", type=int, default=1 << 24)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    cases = FIXED + [random_case(rng, args.max_elems) for _ in range(args.cases)]
    t0 = time.time()
    failures, rejected, ok, skipped = [], [], 0, 0
    for i, (f, dt, dims, layout) in enumerate(cases):
        if time.time() - t0 > args.budget_s:
            skipped = len(cases) - i
            break
        a = args_for(f, dt, dims, layout)
        line = " ".join(["loom", "run", *a, "--iters", "0", "--seed", str(i)])
        try:
            p = subprocess.run([args.loom, "run", *a, "--iters", "0", "--seed", str(i)], capture_output=True,
                               text=True, timeout=300)
            out = p.stdout + p.stderr
            rc = p.returncode
        except subprocess.TimeoutExpired:
            out, rc = "timed out after 300 s", -1
        worst = max([float(w) for w in re.findall(r"worst element ([0-9.e+-]+)", out)] or [0.0])
        if rc == 0 and "MISMATCH" not in out:
            ok += 1
            status = "ok"
        elif rc == 1 and "loom: error:" in out and "MISMATCH" not in out:
            rejected.append((line, out.strip().splitlines()[-1]))
            status = "rejected"
        else:
            failures.append((line, out.strip()[-600:]))
            status = "FAIL"
        print(f"{i:4d} {status:8s} worst {worst:7.3f}  {tier(args.loom, a):24s} {line}", flush=True)
    print(f"\n{ok} ok, {len(failures)} failed, {len(rejected)} rejected, {skipped} not run (budget) "
          f"of {len(cases)} cases in {time.time() - t0:.0f} s (seed {args.seed})")
    for line, msg in rejected:
        print(f"rejected: {line}\n  {msg}")
    for line, msg in failures:
        print(f"FAILED: {line}\n{msg}\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
