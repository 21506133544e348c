#!/usr/bin/env python3
"""Training-step time of Loom on a CUDA GPU vs PyTorch eager and torch.compile, and MFU.

The benchmark GPT at GPT-2-small size (12 layers, d_model 768, 12 heads,
vocabulary 50257, batch 8 x 1024 tokens; test/models/generate.py's GPT with
its cross-entropy inside the ONNX graph) trains with AdamW on the same GPU:

  loom            loomc --train --optimizer=adamw --target=cuda
                  [--precision=bf16], loom-run train
  torch eager     the same module on the GPU [under torch.autocast(bf16)]
  torch.compile   the same, the loss function compiled

A step is forward, backward and the optimizer update. Each round measures
every framework in turn: the median over --steps steps after --warmup
(Loom: the `step_ms` that `loom-run train --metrics` records around each
train_step call, which includes waiting for the GPU; PyTorch: wall time
with torch.cuda.synchronize() after the step). The table gives the median
over --rounds rounds.

FLOPs per step count the matrix products (2 per multiply-add; backward
twice the forward): per token 24 d^2 per layer for the projections and the
MLP, 4 T d per layer for attention's two products (the causal mask not
subtracted, as is usual) and 2 d V for the output layer. MFU divides the
achieved rate by the GPU's dense peak for the precision (bf16 tensor cores;
fp32 without TF32), taken from NVIDIA's datasheets by the device's name or
given with --peak-tflops.

    python3 bench/gpu.py                       # bf16, GPT-2 small, on the GPU
    python3 bench/gpu.py --precision fp32
    python3 bench/gpu.py --tiny --target cuda-emulated --device cpu
        # a 2-layer model with bundles emulated on the CPU and PyTorch on the
        # CPU: checks this script on a machine without a GPU

Needs torch and onnx (pip) and a tree built with the CUDA toolkit.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train as bench  # noqa: E402  (load_gpt, export, loom_runner)

# Dense peak FLOP/s from NVIDIA's datasheets (SXM parts), by a substring of
# the device name: bf16 on tensor cores, fp32 on CUDA cores.
PEAKS = [
    ("H200", {"bf16": 989.4e12, "fp32": 66.9e12}),
    ("H100 PCIe", {"bf16": 756.5e12, "fp32": 51.2e12}),
    ("H100", {"bf16": 989.4e12, "fp32": 66.9e12}),
    ("A100", {"bf16": 312e12, "fp32": 19.5e12}),
]

SIZES = {
    "gpt2-small": dict(layers=12, d=768, heads=12, vocab=50257, seq=1024, batch=8),
    "tiny": dict(layers=2, d=64, heads=4, vocab=128, seq=32, batch=2),
}


def gpt_with_loss(size):
    GPT = bench.load_gpt()

    class GPTWithLoss(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gpt = GPT(vocab=size["vocab"], seq_len=size["seq"],
                           d_model=size["d"], n_heads=size["heads"],
                           n_layers=size["layers"])

        def forward(self, tokens, targets):
            logits = self.gpt(tokens)
            return F.cross_entropy(logits.reshape(-1, size["vocab"]),
                                   targets.reshape(-1))

    return GPTWithLoss


def step_flops(size):
    L, d, T, V = size["layers"], size["d"], size["seq"], size["vocab"]
    tokens = size["batch"] * T
    forward = tokens * (L * (24 * d * d + 4 * T * d) + 2 * d * V)
    return 3 * forward


def torch_runner(args, model, batch, compiled):
    device = torch.device(args.device)
    model = model.to(device)
    tokens, targets = (torch.from_numpy(a).to(device) for a in batch)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loss_fn = torch.compile(model) if compiled else model
    bf16 = args.precision == "bf16"

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn(tokens, targets)
        loss.float().backward()
        opt.step()
        sync()

    def run(steps, warmup):
        for _ in range(warmup):
            step()
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1e3

    return run


def device_name(args):
    if args.device == "cuda" and torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name",
                              "--format=csv,noheader"], capture_output=True,
                             text=True, check=True).stdout
        return out.splitlines()[0].strip()
    except (OSError, subprocess.CalledProcessError, IndexError):
        return "no GPU"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--precision", choices=["bf16", "fp32"], default="bf16")
    parser.add_argument("--target", default="cuda",
                        help="loomc's --target (cuda; cuda-emulated to check "
                        "the script without a GPU)")
    parser.add_argument("--device", default="cuda",
                        help="PyTorch's device (cuda; cpu with --tiny)")
    parser.add_argument("--tiny", action="store_true",
                        help="a 2-layer d_model 64 model instead of GPT-2 small")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--no-compile", action="store_true",
                        help="skip torch.compile")
    parser.add_argument("--peak-tflops", type=float,
                        help="the device's dense peak for --precision "
                        "(default: from the device's name)")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()

    size = SIZES["tiny" if args.tiny else "gpt2-small"]
    name = device_name(args)
    peak = args.peak_tflops * 1e12 if args.peak_tflops else next(
        (p[args.precision] for key, p in PEAKS if key in name), None)
    flops = step_flops(size)
    print(f"GPT {size['layers']} layers, d_model {size['d']}, {size['heads']} "
          f"heads, vocabulary {size['vocab']}, batch {size['batch']} x "
          f"{size['seq']}, AdamW, {args.precision}: {flops / 1e9:.1f} "
          f"GFLOP per step; device {name}, peak "
          + (f"{peak / 1e12:.1f} TFLOP/s" if peak else "unknown"), flush=True)

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    total = args.steps + args.warmup
    B, T = size["batch"], size["seq"]
    tokens = rng.integers(0, size["vocab"], (B * total, T))
    targets = rng.integers(0, size["vocab"], (B * total, T))
    Model = gpt_with_loss(size)
    runners = {}
    with tempfile.TemporaryDirectory() as work:
        onnx_path = os.path.join(work, "gpt.onnx")
        zeros = torch.zeros(B, T, dtype=torch.long)
        bench.export(Model(), (zeros, zeros), ["tokens", "targets"], ["loss"],
                     onnx_path)
        flags = [f"--target={args.target}"]
        if args.precision == "bf16":
            flags.append("--precision=bf16")
        start = time.perf_counter()
        runners["loom"] = bench.loom_runner(
            args.build, work, "gpt", onnx_path, [],
            {"tokens": tokens, "targets": targets}, flags)
        print(f"loomc --train --optimizer=adamw {' '.join(flags)}: "
              f"{time.perf_counter() - start:.1f} s", flush=True)
        batch = (tokens[:B], targets[:B])
        torch_ok = args.device != "cuda" or torch.cuda.is_available()
        if torch_ok:
            runners["torch eager"] = torch_runner(args, Model(), batch, False)
            if not args.no_compile:
                runners["torch.compile"] = torch_runner(args, Model(), batch,
                                                        True)
        else:
            print("PyTorch has no CUDA device here: Loom only", flush=True)

        times = {fw: [] for fw in runners}
        for _ in range(args.rounds):
            for fw, run in runners.items():
                try:
                    times[fw].append(run(args.steps, args.warmup))
                except Exception as e:  # torch.compile without a compiler
                    if fw == "loom":
                        raise
                    print(f"{fw} failed: {e}", flush=True)
                    times[fw] = None
            times = {fw: t for fw, t in times.items() if t is not None}
            runners = {fw: r for fw, r in runners.items() if fw in times}

    print(f"\nmedian over {args.rounds} rounds of the median step of "
          f"{args.steps} ({args.precision}, {name})")
    print(f"{'framework':14s} {'step ms':>9s} {'TFLOP/s':>9s} {'MFU':>7s} "
          f"{'loom/x':>7s}")
    results = {}
    loom_ms = statistics.median(times["loom"])
    for fw, rounds in times.items():
        ms = statistics.median(rounds)
        rate = flops / (ms / 1e3)
        mfu = f"{100 * rate / peak:6.1f}%" if peak else "    n/a"
        print(f"{fw:14s} {ms:9.2f} {rate / 1e12:9.2f} {mfu} "
              f"{loom_ms / ms:7.2f}")
        results[fw] = {"step_ms": ms, "rounds_ms": rounds,
                       "tflops": rate / 1e12,
                       "mfu": rate / peak if peak else None}
    others = [statistics.median(t) for fw, t in times.items() if fw != "loom"]
    if others:
        print(f"loom / PyTorch's best: {loom_ms / min(others):.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": name, "precision": args.precision,
                       "size": size, "step_flops": flops, "results": results},
                      f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
