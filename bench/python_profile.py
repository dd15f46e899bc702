"""Where the host time of one loom op's forward and backward under autograd goes, function by
function (cProfile over back-to-back calls of a cached kernel on tiny inputs), beside the wall
time per call of each piece. Needs torch and a GPU.   python3 bench/python_profile.py [--calls N]"""
import argparse
import cProfile
import pstats
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from python_overhead import loom, per_call_us, torch  # noqa: E402 (its path set-up: loom.torch imported)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    a = ap.parse_args()
    x = torch.randn(4, 1024, device="cuda", dtype=torch.float16, requires_grad=True)
    w = torch.randn(1024, device="cuda", requires_grad=True)
    b = torch.randn(1024, device="cuda", requires_grad=True)
    ref_w, ref_b = w.detach().half().requires_grad_(), b.detach().half().requires_grad_()
    y = torch.randn(4, 1024, device="cuda", dtype=torch.float16)
    pieces = {
        "loom fwd (grad)": lambda: loom.torch.ops.layer_norm(x, w, b, 1e-5),
        "loom fwd+bwd (y.backward(dy))": lambda: loom.torch.ops.layer_norm(x, w, b, 1e-5)[0].backward(y),
        "torch fwd (grad)": lambda: torch.nn.functional.layer_norm(x, (1024,), ref_w, ref_b, 1e-5),
        "torch fwd+bwd (y.backward(dy))": lambda: torch.nn.functional.layer_norm(x, (1024,), ref_w, ref_b,
                                                                                1e-5).backward(y),
    }
    for name, fn in pieces.items():
        print(f"{name:<36} {per_call_us(fn, a.calls):8.1f} us/call")
    fn = pieces["loom fwd+bwd (y.backward(dy))"]
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(a.calls):
        fn()
    torch.cuda.synchronize()
    prof.disable()
    st = pstats.Stats(prof)
    st.sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
