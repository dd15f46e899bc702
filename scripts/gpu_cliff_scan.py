"""One device call: `loom bench --json` over realistic training shapes of every norm built-in
(forward and backward, NCHW and channels-last, f16 unless --dtypes), one line each with the
plan's GB/s, its share of copy bandwidth and its kernels, the lowest shares first, so that
cliffs (a plan far below copy speed on a large problem) show up.
    python3 scripts/gpu_cliff_scan.py [--dtypes f16,f32] > $OUT/scan.txt"""
import argparse, json, os, subprocess, sys

ap = argparse.ArgumentParser()
ap.add_argument("--dtypes", default="f16")
ap.add_argument("--loom", default=".device/bin/loom")
a = ap.parse_args()
fusions = ["batch_norm", "batch_norm_backward", "instance_norm", "instance_norm_backward", "group_norm",
           "group_norm_backward", "layer_norm_2d", "layer_norm_2d_backward"]
shapes = [(64, 64, 112, 112), (64, 256, 56, 56), (64, 512, 28, 28), (64, 1024, 14, 14), (64, 2048, 7, 7),
          (8, 320, 64, 64), (8, 640, 32, 32), (8, 1280, 16, 16), (16, 96, 56, 56), (32, 768, 14, 14)]
rows = []
for f in fusions:
    for (n, c, h, w) in shapes:
        for dt in a.dtypes.split(","):
            for lay in ("nchw", "nhwc"):
                args = [a.loom, "bench", f, "--dim", f"N={n}", "--dim", f"C={c}", "--dim", f"H={h}", "--dim", f"W={w}",
                        "--dtype", dt, "--iters", "20", "--layout", f"x={lay}", "--json"]
                if f.endswith("backward"):
                    args += ["--layout", f"dy={lay}"]
                r = subprocess.run(args, capture_output=True, text=True)
                name = f"{f} {n}x{c}x{h}x{w} {dt} {lay}"
                try:
                    d = json.loads(r.stdout)
                except ValueError:
                    rows.append((-1, name, "no json: " + (r.stderr or r.stdout)[-160:].replace("\n", " ")))
                    continue
                if "error" in d:
                    rows.append((-1, name, "error: " + str(d["error"])[:160]))
                    continue
                copy = (d.get("copy") or {}).get("gbps") or 0
                g = d.get("gbps", 0)
                pct = 100.0 * g / copy if copy else 0
                ks = "; ".join(f"{k.get('name','?').split('_')[-1]} grid {k.get('grid')} {k.get('gbps', 0):.0f}"
                               for k in d.get("plan", []))
                rows.append((pct, name, f"{g:.0f} GB/s {pct:.0f}% of copy, {len(d.get('plan', []))} kernels: {ks}"))
                print(name, rows[-1][2], file=sys.stderr, flush=True)
for pct, name, text in sorted(rows):
    print(f"{pct:5.1f}  {name:55s} {text}")
