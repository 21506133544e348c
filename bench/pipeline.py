#!/usr/bin/env python3
"""Measured pipeline bubble of Loom's schedules against the formula.

The benchmark GPT of bench/train.py (d_model 128, 4 heads, vocabulary 256,
sequence 128) with --layers blocks and microbatches of --batch sequences,
compiled by loomc for --mesh pp=2 with GPipe, 1F1B and zero-bubble
and --microbatches
of each of --microbatches, trained for --steps steps on 2 local ranks with
loom-run train --trace. loom-run reads the timeline back and prints, per
rank, the share of its steps (the first left out) spent outside the
actions the compiled program marks (a microbatch's forward or backward
pass, the optimizer): the measured bubble, next to (p-1)/(m+p-1). The
formula assumes every stage's passes equally long and free communication;
on this 2-core machine each rank has one core and messages cross Gloo over
loopback TCP.

    make build && python3 bench/pipeline.py [--layers 4] [--microbatches 2,4]
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
            for schedule in ("gpipe", "1f1b", "zero-bubble"):
                bundle = os.path.join(work, f"{schedule}{m}.loom")
                subprocess.run([os.path.join(bin_dir, "loomc"), onnx_path,
                                "--train", "--optimizer=adamw", "--mesh", "pp=2",
                                f"--microbatches={m}",
                                f"--pipeline-schedule={schedule}", "-o", bundle],
                               check=True)
                out = subprocess.run(
                    [os.path.join(bin_dir, "loom-run"), "train", bundle,
                     "--nproc", "2", "--steps", str(args.steps), "--no-shuffle",
                     "--data", "tokens=" + os.path.join(work, "tokens.npy"),
                     "--data", "targets=" + os.path.join(work, "targets.npy"),
                     "--trace", os.path.join(work, "trace.json")],
                    check=True, capture_output=True, text=True).stdout
                measured = [float(x) for x in
                            re.findall(r"measured pipeline bubble ([0-9.]+)", out)]
                step_ms = [float(x) for x in
                           re.findall(r"of ([0-9.]+) ms per step", out)]
                rows.append((schedule, m, 1 / (m + 1), measured, step_ms))
    print(f"GPT d128, {args.layers} layers, microbatch {args.batch}x128, pp=2 "
          f"(2 local ranks), {args.steps} steps")
    print(f"{'schedule':12}{'m':>4}{'formula':>10}{'rank 0':>10}{'rank 1':>10}"
          f"{'step ms':>10}")
    for schedule, m, formula, measured, step_ms in rows:
        print(f"{schedule:12}{m:>4}{formula:>10.3f}"
              + "".join(f"{x:>10.3f}" for x in measured)
              + f"{max(step_ms):>10.1f}")


if __name__ == "__main__":
    main()
