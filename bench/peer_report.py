"""bench/peer.py's report: the table printed last, latest.md, results.json and bench.png."""
import json
import math
import sys
import time
from pathlib import Path

def short(msg, n=160):
    msg = " ".join(str(msg).split())
    return msg if len(msg) <= n else msg[: n - 3] + "..."


def fmt_num(v, spec="{:.0f}"):
    return "—" if v is None else spec.format(v)


def table_row(r):
    lg = r.get("loom", {}).get("gbps")
    eg, cg = r.get("eager_gbps"), r.get("compile_gbps")
    frac = r.get("loom", {}).get("fraction_of_copy")
    if "agreement" in r:
        worst = max(r["agreement"], key=lambda a: a["rel_l2"] / a["tol"] if a["tol"] else a["rel_l2"])
        ok = all(a["ok"] for a in r["agreement"])
        agree = f"{'ok' if ok else 'MISMATCH'} {worst['rel_l2']:.1e}" + ("" if ok else f" ({worst['output']})")
    elif r.get("agreement_error"):
        agree = "error"
    else:
        agree = "—"
    return {
        "workload": r["name"],
        "loom GB/s": fmt_num(lg),
        "eager GB/s": fmt_num(eg),
        "compile GB/s": fmt_num(cg),
        "loom/eager": fmt_num(lg / eg if lg and eg else None, "{:.2f}"),
        "loom/compile": fmt_num(lg / cg if lg and cg else None, "{:.2f}"),
        "% copy": fmt_num(100 * frac if frac else None, "{:.0f}%"),
        "kernels": fmt_num(r.get("loom", {}).get("kernels"), "{}"),
        "agreement": agree,
    }


def plan_note(r):
    """For a loom plan of several kernels: each kernel's launch, time and GB/s (`loom bench`'s
    "plan"); the GB/s columns are the whole plan's."""
    plan = r.get("loom", {}).get("plan") or []
    if len(plan) < 2:
        return ""
    parts = [f"{k.get('name')} grid {k.get('grid')} block {k.get('block')} "
             f"{fmt_num(k['time_ms'] * 1e3 if k.get('time_ms') else None, '{:.1f}')} µs "
             f"{fmt_num(k.get('gbps'))} GB/s" for k in plan]
    return f"loom runs {len(plan)} kernels (each timed alone): " + "; ".join(parts)


def why(r):
    parts = []
    for k, label in (("loom_error", "loom"), ("error", "peer"), ("agreement_error", "check"),
                     ("eager_error", "eager"), ("compile_error", "torch.compile")):
        if r.get(k):
            parts.append(f"{label}: {r[k]}")
    return "; ".join(parts)


def print_table(results, out=sys.stdout, width=72):
    rows = [table_row(r) for r in results]
    if not rows:
        return
    cols = list(rows[0])
    wd = {c: max(len(c), *(len(x[c]) for x in rows)) for c in cols}
    print("  ".join(c.ljust(wd[c]) if i == 0 else c.rjust(wd[c]) for i, c in enumerate(cols)), file=out)
    for x, r in zip(rows, results):
        print("  ".join(x[c].ljust(wd[c]) if i == 0 else x[c].rjust(wd[c]) for i, c in enumerate(cols)), file=out)
        if why(r):
            print("    " + short(why(r), width + 60), file=out)


def write_markdown(path, meta, results):
    L = []
    L.append(f"# loom benchmark, {meta['date']}")
    L.append("")
    L.append(f"- GPU: {meta.get('gpu')} ({meta.get('driver', '?')}); loom commit `{meta.get('commit')}`")
    L.append(f"- PyTorch {meta.get('torch')}, Triton {meta.get('triton')}; mode: {meta.get('mode')}")
    cb = meta.get("copy_gbps_torch")
    lc = meta.get("copy_gbps_loom")
    L.append(f"- copy bandwidth (512 MiB device-to-device, read + written): loom {fmt_num(lc)} GB/s, "
             f"torch {fmt_num(cb)} GB/s")
    L.append("- method: every time is the median of do_bench-style runs with L2 flushed (256 MiB) before "
             "each; GB/s = bytes of inputs read once + outputs written once (in-place outputs too) / time; "
             "`% copy` is loom's GB/s over loom's copy bandwidth; agreement is ||loom − eager|| / ||eager|| "
             "against loom's tolerance for the dtype (f16 2e-3, bf16 1.6e-2, f32 2e-5); loom's compile columns are "
             "its first compile in a fresh process with an empty kernel cache (LLVM→PTX, driver module load, "
             "and the whole first call); host µs is loom's host time per launch of the cached plan; "
             "kernels is how many kernels loom's plan launches (its times and GB/s are the whole plan's; "
             "the notes give each kernel's); "
             "compile s (torch) is torch.compile's first call, compile included")
    L.append(f"- wall time {meta.get('wall_s')} s")
    L.append("")
    cols = ["workload", "loom GB/s", "eager GB/s", "compile GB/s", "loom/eager", "loom/compile", "% copy",
            "kernels", "agreement", "loom µs", "LLVM→PTX ms", "load ms", "first call ms", "host µs", "compile s (torch)"]
    L.append("| " + " | ".join(cols) + " |")
    L.append("|" + "|".join("---" if i == 0 else "---:" for i in range(len(cols))) + "|")
    for r in results:
        x = table_row(r)
        lj = r.get("loom", {})
        c = lj.get("compile", {})
        x["loom µs"] = fmt_num(lj["time_ms"] * 1e3 if lj.get("time_ms") else None, "{:.1f}")
        llvm = c.get("llvm_ptx_ms") if c.get("source") == "fresh" else c.get("cold_llvm_ptx_ms")
        x["LLVM→PTX ms"] = fmt_num(llvm, "{:.1f}")
        x["load ms"] = fmt_num(c.get("load_ms"), "{:.1f}")
        x["first call ms"] = fmt_num(c.get("first_call_ms"), "{:.0f}")
        x["host µs"] = fmt_num(lj.get("host_us_per_launch"), "{:.1f}")
        x["compile s (torch)"] = fmt_num(r.get("compile_s"), "{:.1f}")
        L.append("| " + " | ".join(x[k].replace("|", "/") for k in cols) + " |")
    notes = [(r["name"], why(r)) for r in results if why(r)]
    notes += [(r["name"], "; ".join(r["notes"])) for r in results if r.get("notes")]
    notes += [(r["name"], plan_note(r)) for r in results if plan_note(r)]
    if notes:
        L.append("")
        L.append("Notes:")
        L.append("")
        for name, n in notes:
            L.append(f"- `{name}`: {short(n, 400)}")
    Path(path).write_text("\n".join(L) + "\n")


def write_plot(path, meta, results, wls):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # noqa: BLE001
        print(f"plot skipped: matplotlib is not importable here ({e})")
        return False
    by_name = {r["name"]: r for r in results}
    fams = {}
    singles = []
    for w in wls:
        if w.name not in by_name:
            continue
        key, xlabel, x = w.family()
        fams.setdefault(key, (xlabel, []))[1].append((x, by_name[w.name]))
    series = {k: v for k, v in fams.items() if len(v[1]) >= 2}
    for k, v in fams.items():
        if len(v[1]) < 2:
            singles.extend(r for _, r in v[1])
    panels = len(series) + (1 if singles else 0)
    if panels == 0:
        return False
    ncol = 3
    nrow = math.ceil(panels / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(5.2 * ncol, 3.8 * nrow), squeeze=False)
    copy = meta.get("copy_gbps_loom") or meta.get("copy_gbps_torch")
    sides = (("loom", lambda r: r.get("loom", {}).get("gbps"), "C0"),
             ("eager", lambda r: r.get("eager_gbps"), "C1"),
             ("torch.compile", lambda r: r.get("compile_gbps"), "C2"))
    i = 0
    for key, (xlabel, pts) in sorted(series.items()):
        ax = axes[i // ncol][i % ncol]
        i += 1
        pts.sort(key=lambda p: p[0])
        for label, get, color in sides:
            xs = [p[0] for p in pts if get(p[1])]
            ys = [get(p[1]) for p in pts if get(p[1])]
            if xs:
                ax.plot(xs, ys, "o-", label=label, color=color)
        if copy:
            ax.axhline(copy, ls="--", color="gray", lw=1, label="copy")
        ax.set_xscale("log", base=2)
        ax.set_xticks([p[0] for p in pts])
        ax.set_xticklabels([str(p[0]) for p in pts], fontsize=7)
        ax.minorticks_off()
        ax.set_xlabel(xlabel)
        ax.set_ylabel("GB/s")
        ax.set_ylim(bottom=0)
        ax.set_title(key.replace(" -", ""), fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    if singles:
        ax = axes[i // ncol][i % ncol]
        i += 1
        names = [r["name"] for r in singles]
        ys = range(len(names))
        h = 0.27
        for k, (label, get, color) in enumerate(sides):
            ax.barh([y + (k - 1) * h for y in ys], [get(r) or 0 for r in singles], h, label=label, color=color)
        if copy:
            ax.axvline(copy, ls="--", color="gray", lw=1, label="copy")
        ax.set_yticks(list(ys))
        ax.set_yticklabels(names, fontsize=6)
        ax.invert_yaxis()
        ax.set_xlabel("GB/s")
        ax.set_title("one shape each", fontsize=9)
        ax.legend(fontsize=7)
    while i < nrow * ncol:
        axes[i // ncol][i % ncol].axis("off")
        i += 1
    fig.suptitle(f"loom vs PyTorch, {meta.get('gpu')}, {meta['date']}, commit {meta.get('commit')}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    return True


def save_all(args, meta, results, wls, final=False):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    meta["wall_s"] = round(time.perf_counter() - args.t_start, 1)
    (out / "results.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    write_markdown(out / "latest.md", meta, results)
    if final:
        if write_plot(out / "bench.png", meta, results, wls):
            print(f"plot: {out / 'bench.png'}")
