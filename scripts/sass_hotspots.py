#!/usr/bin/env python3
"""Summarizes Nsight Compute's per-instruction warp-stall samples of one kernel (the CSV of
`ncu --section WarpStateStats --section SourceCounters --page source --print-source sass --csv`):
prints the instructions holding at least --min percent of the samples, the barriers, atomics and
exits between them, each with the running share of samples and its top two stall reasons, so
the phases of a kernel (fill, statistics, grid barrier, merge, stores) can be read off by where
the share jumps.   python3 scripts/sass_hotspots.py ncu-source.csv [--min 0.4]
"""
import argparse
import csv

ap = argparse.ArgumentParser()
ap.add_argument("csv")
ap.add_argument("--min", type=float, default=0.4, help="percent of all samples to list an instruction")
a = ap.parse_args()
rows = list(csv.reader(open(a.csv)))
start = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
hdr, data = rows[start], rows[start + 1:]
i_samples = hdr.index("Warp Stall Sampling (All Samples)")
i_exec = hdr.index("Instructions Executed")
stalls = [(hdr.index(c), c[len("stall_"):]) for c in hdr if c.startswith("stall_") and "Not Issued" not in c]
total = sum(int(r[i_samples]) for r in data if len(r) > i_samples) or 1
print(f"{total} samples")
running = 0
for k, r in enumerate(data):
    if len(r) <= i_samples:
        continue
    n = int(r[i_samples])
    running += n
    sass = r[1].strip()
    marker = any(m in sass for m in ("BAR", "ATOM", "RED.", "EXIT", "NANOSLEEP", "MEMBAR"))
    if n * 100 >= a.min * total or marker:
        top = sorted(((int(r[i]), name) for i, name in stalls), reverse=True)[:2]
        why = ", ".join(f"{name} {v}" for v, name in top if v)
        print(f"{k:5d} {n:6d} {100 * running / total:5.1f}%  x{r[i_exec]:>8}  {sass[:58]:58s} {why}")
