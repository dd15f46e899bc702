#!/usr/bin/env python3
"""Times one `loom bench --json` run and prints the plan's median in microseconds and each kernel's:
for kernels of a few microseconds, where GB/s says little. Used by A/B scripts on the GPU machine.
  python3 bench/bench_us.py LOOM_BINARY FUSION [loom bench args...]"""
import json
import subprocess
import sys


def main():
    loom, rest = sys.argv[1], sys.argv[2:]
    r = subprocess.run([loom, "bench", *rest, "--json"], capture_output=True, text=True)
    try:
        j = json.loads(r.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        print("FAIL " + (r.stderr.strip().splitlines() or ["no output"])[-1][:160])
        return 1
    if "error" in j:
        print("FAIL " + str(j["error"])[:160])
        return 1
    kernels = " ".join(f"{k.get('time_ms', 0) * 1000:.1f}" for k in j.get("plan", []))
    print(f"{j['time_ms'] * 1000:.1f} us ({kernels}) {j['gbps']:.0f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
