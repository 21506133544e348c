#!/usr/bin/env python3
"""Measured pipeline bubble of Loom's schedules against the formula.

The benchmark GPT of bench/train.py (d_model 128, 4 heads, vocabulary 256,
sequence 128) with --layers blocks and microbatches of --batch sequences,
compiled by loomc for --mesh pp=--pp (default 2) with GPipe, 1F1B, zero-bubble and
interleaved 1F1B (2 virtual stages per stage; its formula is divided by 2)
and --microbatches
of each of --microbatches, trained for --steps steps on --pp local ranks with
loom-run train --trace. loom-run reads the timeline back and prints, per
rank, the share of its steps (the first left out) spent outside the
actions the compiled program marks (a microbatch's forward or backward
pass, the optimizer): the measured bubble, next to (p-1)/(m+p-1). The
formula assumes every stage's passes equally long and free communication;
on this 2-core machine each rank has one core and messages cross Gloo over
loopback TCP.

    make build && python3 bench/pipeline.py [--layers 4] [--microbatches 2,4]
        [--schedules gpipe,1f1b,zero-bubble,interleaved-1f1b]
"""
import argparse
import os
import re
import subprocess
import tempfile

import numpy as np
import torch

from remat import make_model
from train import ROOT, export


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--microbatches", default="2,4")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--pp", type=int, default=2,
                        help="stages (local ranks; default 2)")
    parser.add_argument("--schedules",
                        default="gpipe,1f1b,zero-bubble,interleaved-1f1b")
    args = parser.parse_args()
    torch.manual_seed(0)
    bin_dir = os.path.join(args.build, "bin")
    rows = []
    with tempfile.TemporaryDirectory() as work:
        onnx_path = os.path.join(work, "gpt.onnx")
        tokens = torch.randint(0, 256, (args.batch, 128))
        export(make_model(args.layers), (tokens, tokens), ["tokens", "targets"],
               ["loss"], onnx_path)
        counts = [int(m) for m in args.microbatches.split(",")]
        rng = np.random.default_rng(0)
        data = rng.integers(0, 256, (args.batch * max(counts) * 2, 129))
        np.save(os.path.join(work, "tokens.npy"), data[:, :-1])
        np.save(os.path.join(work, "targets.npy"), data[:, 1:])
        for m in counts:
            for schedule in args.schedules.split(","):
                bundle = os.path.join(work, f"{schedule}{m}.loom")
                chunks = 2 if schedule == "interleaved-1f1b" else 1
                subprocess.run([os.path.join(bin_dir, "loomc"), onnx_path,
                                "--train", "--optimizer=adamw", "--mesh",
                                f"pp={args.pp}",
                                f"--microbatches={m}",
                                f"--pipeline-schedule={schedule}", "-o", bundle]
                               + (["--virtual-stages=2"] if chunks > 1 else []),
                               check=True)
                out = subprocess.run(
                    [os.path.join(bin_dir, "loom-run"), "train", bundle,
                     "--nproc", str(args.pp), "--steps", str(args.steps),
                     "--no-shuffle",
                     "--data", "tokens=" + os.path.join(work, "tokens.npy"),
                     "--data", "targets=" + os.path.join(work, "targets.npy"),
                     "--trace", os.path.join(work, "trace.json")],
                    check=True, capture_output=True, text=True).stdout
                measured = [float(x) for x in
                            re.findall(r"measured pipeline bubble ([0-9.]+)", out)]
                step_ms = [float(x) for x in
                           re.findall(r"of ([0-9.]+) ms per step", out)]
                p = args.pp
                rows.append((schedule, m, (p - 1) / (m + p - 1) / chunks,
                             measured, step_ms))
    print(f"GPT d128, {args.layers} layers, microbatch {args.batch}x128, "
          f"pp={args.pp} ({args.pp} local ranks), {args.steps} steps")
    print(f"{'schedule':18}{'m':>4}{'formula':>10}"
          + "".join(f"{'rank ' + str(r):>10}" for r in range(args.pp))
          + f"{'step ms':>10}")
    for schedule, m, formula, measured, step_ms in rows:
        print(f"{schedule:18}{m:>4}{formula:>10.3f}"
              + "".join(f"{x:>10.3f}" for x in measured)
              + f"{max(step_ms):>10.1f}")


if __name__ == "__main__":
    main()
