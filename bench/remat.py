#!/usr/bin/env python3
"""Memory and time of recomputation (loom-remat) on the GPT-style decoder.

The benchmark GPT of bench/train.py (d_model 128, 4 heads, vocabulary 256,
batch 8, sequence 128, AdamW) with --layers blocks, compiled by loomc with
--remat=none, selective and full and with --memory-budget at the midpoint
between none's and full's totals. For each bundle: the compiled step's
memory as loomc --report predicts it, rank 0's measured peak
(loom-run train --memory-stats), the FLOPs recomputed per step (the cost
interface, as --report prints them), and the median step time, measured in
--rounds interleaved rounds of --steps steps (median of the rounds'
medians). PyTorch eager runs the same model without and with
torch.utils.checkpoint around every block, for its own overhead of full
recomputation (PyTorch's CPU allocator keeps no peak, so only time is
compared).

    make build && python3 bench/remat.py [--layers 8]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from train import ROOT, export, load_gpt, timed


def make_model(layers):
    GPT = load_gpt()

    class GPTWithLoss(nn.Module):
        def __init__(self):
            super().__init__()
            self.gpt = GPT(vocab=256, seq_len=128, d_model=128, n_heads=4,
                           n_layers=layers)
            self.recompute = False

        def forward(self, tokens, targets):
            g = self.gpt
            x = g.tok_emb(tokens) + g.pos_emb(g.pos[:tokens.shape[1]])
            for blk in g.blocks:
                x = checkpoint(blk, x, use_reentrant=False) \
                    if self.recompute else blk(x)
            logits = g.lm_head(g.ln_f(x))
            return F.cross_entropy(logits.reshape(-1, 256), targets.reshape(-1))

    return GPTWithLoss()


def report_figures(text):
    fig = {}
    for key in ("parameters", "optimizer state", "inputs", "outputs",
                "temporaries peak", "total"):
        m = re.search(r"^  " + key + r" +(\d+) bytes", text.split(
            "compiled @train_step per rank")[1], re.M)
        fig[key] = int(m.group(1))
    m = re.search(r"recomputation in @train_step: .*?, (\d+) ops, (\d+) FLOPs "
                  r"per step \(([0-9.]+)% of the forward pass's (\d+)\)", text)
    fig["recomputed_flops"] = int(m.group(2)) if m else 0
    fig["recomputed_pct"] = float(m.group(3)) if m else 0.0
    return fig


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(2)
    work = tempfile.mkdtemp(prefix="loom-remat-")
    torch.manual_seed(0)
    model = make_model(args.layers)
    tokens = torch.randint(0, 256, (8, 128))
    targets = torch.randint(0, 256, (8, 128))
    onnx_path = os.path.join(work, "gpt.onnx")
    export(model, (tokens, targets), ["tokens", "targets"], ["loss"], onnx_path)
    data = []
    for key, array in (("tokens", tokens), ("targets", targets)):
        path = os.path.join(work, key + ".npy")
        np.save(path, array.numpy())
        data += ["--data", f"{key}={path}"]

    loomc = os.path.join(args.build, "bin", "loomc")
    loom_run = os.path.join(args.build, "bin", "loom-run")

    def compile_bundle(name, flags):
        bundle = os.path.join(work, name + ".loom")
        out = subprocess.run([loomc, onnx_path, "--train", "--optimizer=adamw",
                              "--lr=1e-3", "--report", *flags, "-o", bundle],
                             check=True, capture_output=True, text=True).stdout
        return bundle, report_figures(out)

    configs = [("none", []), ("selective", ["--remat=selective"]),
               ("full", ["--remat=full"])]
    bundles = {}
    for name, flags in configs:
        bundles[name] = compile_bundle(name, flags)
    budget = (bundles["none"][1]["total"] + bundles["full"][1]["total"]) // 2
    bundles["budget"] = compile_bundle("budget", [f"--memory-budget={budget}"])
    names = [name for name, _ in configs] + ["budget"]

    def loom_step(name):
        metrics = os.path.join(work, name + ".jsonl")
        out = subprocess.run([loom_run, "train", bundles[name][0], "--steps",
                              str(args.steps + args.warmup), "--no-shuffle",
                              "--memory-stats", "--metrics", metrics,
                              "--log-every", "1000", *data],
                             check=True, capture_output=True, text=True).stdout
        with open(metrics) as f:
            records = [json.loads(line) for line in f]
        times = [r["step_ms"] for r in records if "step_ms" in r]
        losses = [r["loss"] for r in records if "loss" in r]
        m = re.search(r"temporaries of rank 0: peak (\d+) B", out)
        return statistics.median(times[args.warmup:]), int(m.group(1)), losses

    def torch_step(recompute):
        model.recompute = recompute
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

        def step():
            opt.zero_grad(set_to_none=True)
            model(tokens, targets).backward()
            opt.step()

        for _ in range(args.warmup):
            step()
        return statistics.median(timed(step) for _ in range(args.steps)) * 1e3

    times = {name: [] for name in names + ["torch", "torch checkpoint"]}
    measured, losses = {}, {}
    for _ in range(args.rounds):
        for name in names:
            ms, peak, run_losses = loom_step(name)
            times[name].append(ms)
            measured[name] = peak
            losses[name] = run_losses
        times["torch"].append(torch_step(False))
        times["torch checkpoint"].append(torch_step(True))

    print(f"GPT, {args.layers} layers, d_model 128, batch 8x128, AdamW; "
          f"{args.rounds} rounds of {args.steps} steps, 2 threads")
    print(f"memory budget for 'budget': {budget} bytes (midway between none "
          f"and full)")
    print("| run | temporaries predicted | measured | total per rank | "
          "recomputed FLOPs (% of forward) | step ms | vs none | "
          "losses equal none's |")
    print("|---|---|---|---|---|---|---|---|")
    base = statistics.median(times["none"])
    for name in names:
        fig = bundles[name][1]
        ms = statistics.median(times[name])
        print(f"| {name} | {fig['temporaries peak']} | {measured[name]} | "
              f"{fig['total']} | {fig['recomputed_flops']} "
              f"({fig['recomputed_pct']:.1f}%) | {ms:.1f} | "
              f"{ms / base:.2f}x | {losses[name] == losses['none']} |")
    t0 = statistics.median(times["torch"])
    t1 = statistics.median(times["torch checkpoint"])
    print(f"| PyTorch eager | | | | | {t0:.1f} | | |")
    print(f"| PyTorch eager, checkpoint per block | | | | | {t1:.1f} | "
          f"{t1 / t0:.2f}x | |")


if __name__ == "__main__":
    main()
