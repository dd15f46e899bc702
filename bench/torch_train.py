"""Training a model with loom's norms (loom.torch.swap) beside the stock model, from the same
initial weights and the same batches: losses step by step and steps (images) a second, eager
and torch.compile, NCHW and channels-last, in one process.

    python3 bench/torch_train.py [--model convnext_base | llama] [--steps 20] [--batch 64]
        [--modes eager,compile,graphs] [--layouts nchw,nhwc] [--rounds R] [--swap all,LayerNorm2d]
        [--profile]

--model: a timm model name (fp16 AMP, 224x224 images, SGD with momentum) or `llama`: a
Llama-style decoder stack of transformers (4 layers, hidden 2048, grouped-query attention,
RMSNorm; bf16 autocast, sequences of --seq tokens, AdamW), whose 9 LlamaRMSNorm modules swap
takes.

--modes: `compile` is torch.compile's default mode (Inductor), `graphs` its mode="reduce-overhead",
whose CUDA graphs replay loom's launches (and everything else) with no Python: the host cost of
loom's op calls is paid at capture only. `loom` is torch.compile(backend="loom") of the stock
model (loom cuts the model's own graphs; no swap), `loom-graphs` the same with reduce-overhead.
The first step's seconds (compiling included) are reported beside the rate.

--swap: which of loom's drop-ins each loom model takes, one model per entry: `all` or names for
loom.torch.swap(only=...) joined by `+`; `none` runs the stock model alone. A `/keep` suffix sets
channels_last_out = False on loom's LayerNorm2d modules (an NCHW input's output stays NCHW
instead of timm's channels-last); `/in-compile` keeps loom's kernels under torch.compile (swap's
in_compile="loom": opaque ops Inductor calls) where by default the modules give Inductor
PyTorch's forward to fuse.

--rounds R runs the torch/loom pair R times in turn (the host of the GPU machine drifts between
runs: the steps a second of one pair are comparable, of separate runs less so).

--profile: after the timed steps, three more under torch.profiler: the GPU time a step of its
kernels by kind (loom's, Triton's from Inductor, matrix products and convolutions, the rest)
and the kernels a step. Under `graphs` this says how much of a step the norms can still win.
"""
import argparse
import copy
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
import torch  # noqa: E402

import loom.torch  # noqa: E402


class Images:
    """A timm classifier on random images and labels, fp16 AMP."""

    def __init__(self, name, batch):
        import timm
        self.timm, self.name, self.batch = timm, name, batch
        torch.manual_seed(0)
        self.state = copy.deepcopy(timm.create_model(name, pretrained=False).state_dict())
        g = torch.Generator(device="cuda").manual_seed(1)
        self.inputs = [torch.randn(batch, 3, 224, 224, device="cuda", generator=g) for _ in range(4)]
        self.labels = [torch.randint(0, 1000, (batch,), device="cuda", generator=g) for _ in range(4)]
        self.dtype = torch.float16

    def header(self):
        return f"{self.name}, batch {self.batch}, fp16 AMP; timm {self.timm.__version__}"

    def model(self, fmt):
        m = self.timm.create_model(self.name, pretrained=False).cuda()
        m.load_state_dict(self.state)
        return m.to(memory_format=fmt)

    def batches(self, fmt):
        return [x.contiguous(memory_format=fmt) for x in self.inputs]

    def optimizer(self, params):
        return torch.optim.SGD(params, lr=0.01, momentum=0.9)  # 0.05 diverged by step 20

    def loss(self, run, x, i):
        return torch.nn.functional.cross_entropy(run(x), self.labels[i % len(self.labels)])


class Decoder:
    """A Llama-style decoder stack (transformers) on random tokens, next-token loss, bf16."""

    def __init__(self, batch, seq):
        import transformers
        self.tf, self.batch, self.seq = transformers, batch, seq
        self.config = transformers.LlamaConfig(
            vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=4, num_attention_heads=16,
            num_key_value_heads=4, max_position_embeddings=max(2048, seq), use_cache=False,
            attn_implementation="sdpa")
        torch.manual_seed(0)
        self.state = copy.deepcopy(transformers.LlamaForCausalLM(self.config).state_dict())
        g = torch.Generator(device="cuda").manual_seed(1)
        self.inputs = [torch.randint(0, 32000, (batch, seq), device="cuda", generator=g) for _ in range(4)]
        self.dtype = torch.bfloat16

    def header(self):
        return f"Llama-style decoder (4 layers, hidden 2048), batch {self.batch} x {self.seq} tokens, bf16 autocast; " \
               f"transformers {self.tf.__version__}"

    def model(self, fmt):
        m = self.tf.LlamaForCausalLM(self.config).cuda()
        m.load_state_dict(self.state)
        return m

    def batches(self, fmt):
        return self.inputs

    def optimizer(self, params):
        return torch.optim.AdamW(params, lr=1e-4)

    def loss(self, run, x, i):
        return run(input_ids=x, labels=x).loss


def train(work, run, model, xs, steps, timed_from):
    opt = work.optimizer(model.parameters())
    scaler = torch.amp.GradScaler("cuda", enabled=work.dtype == torch.float16)
    losses = []
    t0 = None
    t_start = time.perf_counter()

    def step(i):
        # Each step's CUDA graphs write over the last one's outputs (reduce-overhead): the loss
        # is cloned before the next step runs.
        torch.compiler.cudagraph_mark_step_begin()
        with torch.autocast("cuda", dtype=work.dtype):
            loss = work.loss(run, xs[i % len(xs)], i)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss.detach().clone()

    first = None
    for i in range(steps):
        if i == timed_from:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        losses.append(step(i))
        if i == 0:  # the first step, compiling included
            torch.cuda.synchronize()
            first = time.perf_counter() - t_start
    torch.cuda.synchronize()
    rate = (steps - timed_from) * xs[0].shape[0] / (time.perf_counter() - t0)
    return [v.item() for v in losses], rate, step, first


def kind(name):
    n = name.lower()
    if n.startswith("loom") or "loom_" in n:
        return "loom"
    if n.startswith("triton"):
        return "triton"
    if any(k in n for k in ("gemm", "conv", "cutlass", "xmma", "nvjet", "cudnn", "wgrad", "dgrad", "fprop",
                            "flash", "fmha", "attention")):
        return "mm/conv/attn"
    return "other"


def profile(step, steps=3):
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for i in range(steps):
            step(i)
        torch.cuda.synchronize()
    by, count = {}, 0
    for e in prof.key_averages():
        if e.device_type != torch.autograd.DeviceType.CUDA or e.device_time_total <= 0:
            continue
        if e.key.startswith(("Memcpy", "Memset")):
            k = "other"
        else:
            k = kind(e.key)
            count += e.count
        by[k] = by.get(k, 0.0) + e.device_time_total / steps / 1e3
    total = sum(by.values())
    parts = "  ".join(f"{k} {by[k]:.2f}" for k in ("loom", "triton", "mm/conv/attn", "other") if k in by)
    return f"GPU {total:.2f} ms/step ({parts}), {count // steps} kernels/step"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="convnext_base")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=None, help="64 images, or 4 sequences for llama")
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--modes", default="eager,compile")
    ap.add_argument("--layouts", default="nchw,nhwc")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--swap", default="all,all/in-compile")
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    work = Decoder(a.batch or 4, a.seq) if a.model == "llama" else Images(a.model, a.batch or 64)
    layouts = ["-"] if a.model == "llama" else a.layouts.split(",")
    timed_from = min(5, a.steps - 1)
    print(f"{work.header()}; {a.steps} steps (rate over steps {timed_from}..{a.steps - 1}); "
          f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"{'layout':<6} {'mode':<11} {'norms':<20} {'items/s':>9} {'loss 0':>8} {'loss 5':>8} {'loss last':>9} "
          f"{'max |dloss|':>11} {'swapped':>7} {'step 0 s':>8}")
    for layout in layouts:
        fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format
        xs = work.batches(fmt)
        for mode in a.modes.split(","):
            ref = None
            swaps = [] if a.swap == "none" or mode.startswith("loom") else a.swap.split(",")
            for norms in ("torch", *(f"loom:{v}" for v in swaps)) * a.rounds:
                model = work.model(fmt)
                spec, *flags = norms[5:].split("/")
                if mode == "eager" and "in-compile" in flags:
                    continue  # (the same model as without the flag)
                only = None if spec == "all" else spec.split("+")
                in_compile = "loom" if "in-compile" in flags else "torch"
                n = 0 if norms == "torch" else loom.torch.swap(model, only=only, in_compile=in_compile)
                if "keep" in flags:
                    for m in model.modules():
                        if isinstance(m, loom.torch.nn.LayerNorm2d) or \
                                getattr(type(m), "_loom_family", None) is loom.torch.nn.layer_norm_2d_forward:
                            m.channels_last_out = False
                run = torch.compile(model) if mode == "compile" else \
                    torch.compile(model, mode="reduce-overhead") if mode == "graphs" else \
                    torch.compile(model, backend="loom") if mode == "loom" else \
                    torch.compile(model, backend="loom", mode="reduce-overhead") if mode == "loom-graphs" else model
                losses, rate, step, first = train(work, run, model, xs, a.steps, timed_from)
                if ref is None:
                    ref = losses
                diff = max(abs(p - q) for p, q in zip(losses, ref))
                print(f"{layout:<6} {mode:<11} {norms:<20} {rate:9.1f} {losses[0]:8.4f} {losses[min(5, a.steps - 1)]:8.4f} "
                      f"{losses[-1]:9.4f} {diff:11.4f} {n:7d} {first:8.1f}", flush=True)
                if a.profile:
                    print(f"{'':<6} {'':<11} {norms:<20} {profile(step)}", flush=True)
                del model, run, step
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
