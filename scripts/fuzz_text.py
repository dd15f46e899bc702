#!/usr/bin/env python3
"""Malformed fusion text: seeded random edits of every built-in's text form, fed to the CLI.

Each case takes a built-in's `loom print` text and applies one to three random edits (delete,
duplicate or swap a token or line, replace a token with another from the file or with junk,
truncate, change a number or a dtype). `loom segment` and `loom eval` must then either succeed
or fail with a user error (`loom: ... error: ...`, exit 1): never a crash, a hang, an internal
error or an exit code other than 0 and 1. No GPU needed.

    python3 scripts/fuzz_text.py [--seed S] [--cases N] [--loom build/bin/loom]
"""
import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

JUNK = ["", "(", ")", "[", "]", "{", "}", ",", "=", ":", "0", "-1", "1b", "99999999999999999999", "1e400",
        "nan", "f64", "i64", "bool", "u8", "sum", "reshape", "dims=[]", "dims=[7]", "keepdim=maybe", "N*",
        "C/0", "0*N", "\"", "#", "\t", "é", "in", "out", "fusion", "t0", "x"]


def mutate(rng, text):
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(8)
        lines = text.split("\n")
        toks = [(m.start(), m.end()) for m in re.finditer(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?(?:e[-+]?\d+)?|\S", text)]
        if not toks:
            return text
        a, b = rng.choice(toks)
        if kind == 0:  # delete a token
            text = text[:a] + text[b:]
        elif kind == 1:  # replace a token with another of the file's
            c, d = rng.choice(toks)
            text = text[:a] + text[c:d] + text[b:]
        elif kind == 2:  # replace a token with junk
            text = text[:a] + rng.choice(JUNK) + text[b:]
        elif kind == 3 and len(lines) > 2:  # delete a line
            del lines[rng.randrange(1, len(lines) - 1)]
            text = "\n".join(lines)
        elif kind == 4 and len(lines) > 2:  # duplicate a line
            i = rng.randrange(1, len(lines) - 1)
            lines.insert(i, lines[i])
            text = "\n".join(lines)
        elif kind == 5 and len(lines) > 3:  # swap two lines
            i, j = rng.sample(range(1, len(lines) - 1), 2)
            lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
        elif kind == 6:  # truncate
            text = text[: rng.randrange(len(text))]
        else:  # change a number or a dtype
            nums = [(m.start(), m.end()) for m in re.finditer(r"\b\d+\b|\b(?:f16|bf16|f32|f64|i64|bool)\b", text)]
            if nums:
                a, b = rng.choice(nums)
                text = text[:a] + rng.choice(["0", "1", "2", "3", "5", "f16", "f32", "bool", "i64"]) + text[b:]
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--loom", default="build/bin/loom")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=500)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    names = [l.split()[0] for l in subprocess.run([args.loom, "examples"], capture_output=True, text=True,
                                                   check=True).stdout.splitlines() if l.strip()]
    texts = {n: subprocess.run([args.loom, "print", n], capture_output=True, text=True, check=True).stdout for n in names}
    work = tempfile.mkdtemp(prefix="loom-fuzz-text-")
    failures, ok, refused = [], 0, 0
    t0 = time.time()
    for i in range(args.cases):
        name = rng.choice(names)
        text = mutate(rng, texts[name])
        path = os.path.join(work, f"case{i}.loom")
        with open(path, "w", encoding="utf-8", errors="replace") as fh:
            fh.write(text)
        # Sizes the built-in's symbols take (unknown ones are a user error, which is fine).
        syms = sorted(set(re.findall(r"\b([A-Z])\b", texts[name])))
        dims = [a for s in syms for a in ("--dim", f"{s}=8")]
        status = "ok"
        for cmd in (["segment", path, *dims], ["eval", path, *dims]):
            try:
                p = subprocess.run([args.loom, *cmd], capture_output=True, text=True, errors="replace", timeout=60)
            except subprocess.TimeoutExpired:
                failures.append((path, " ".join(["loom", *cmd]), "timed out after 60 s"))
                status = "FAIL"
                break
            err = p.stderr.strip()
            if p.returncode == 0:
                continue
            if p.returncode == 1 and err.startswith("loom: ") and "error:" in err and "internal error" not in err:
                status = "refused"
                break
            failures.append((path, " ".join(["loom", *cmd]), f"exit {p.returncode}: {err[-400:]}"))
            status = "FAIL"
            break
        ok += status == "ok"
        refused += status == "refused"
        if status == "FAIL":
            print(f"{i:4d} FAIL {path}", flush=True)
    print(f"{ok} accepted, {refused} refused with a user error, {len(failures)} failed of {args.cases} cases in "
          f"{time.time() - t0:.0f} s (seed {args.seed}" + (f"; files in {work})" if failures else ")"))
    for path, line, why in failures:
        print(f"FAILED: {line}\n  {why}\n")
    if not failures:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
