#!/usr/bin/env python3
"""Checks loomc --plan's predictions against measured runs on this machine.

For a model, asks `loomc --plan --plan-only` for its plans on a cluster
profile (by default one written here by `loom-run calibrate --nproc N`),
then compiles each plan with the flags the planner printed, trains it for a
few steps on N local ranks and compares the measured step time (median of
the steps after the warm-up; of --rounds such runs, made one plan after
another, the lowest) with the prediction. Prints one line per plan, the largest error, and whether the
plan ranked first is the fastest measured (or within --first-within of it).
Exits 1 when a plan's error is over --tolerance or the first plan is too
slow.

    bench/plan.py --bench-model gpt --nproc 2 --top 12
    bench/plan.py --model model.onnx --data x=x.npy --data labels=y.npy \\
        --train-flags "--loss=cross-entropy:labels" --nproc 2 --top 8

`--bench-model gpt|mlp` exports bench/train.py's benchmark GPT (2 layers,
d 128, batch 8x128, its loss included) or MLP (784-1024-1024-10, batch 256)
with random data (needs torch and onnx from pip).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def export_bench_model(args, work):
    """Sets args.model, args.data and args.train_flags to bench/train.py's
    benchmark model, exported to `work` with random data."""
    import numpy as np
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import train as bench
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    args.model = os.path.join(work, args.bench_model + ".onnx")
    if args.bench_model == "gpt":
        model = bench.make_gpt_with_loss(bench.load_gpt())()
        data = rng.integers(0, 256, (64, 129)).astype(np.int64)
        bench.export(model, (torch.from_numpy(data[:8, :-1]),
                             torch.from_numpy(data[:8, 1:])),
                     ["tokens", "targets"], ["loss"], args.model)
        arrays = {"tokens": data[:, :-1], "targets": data[:, 1:]}
    else:
        bench.export(bench.MLP(), (torch.randn(256, 784),), ["x"], ["logits"],
                     args.model)
        arrays = {"x": rng.standard_normal((2048, 784)).astype(np.float32),
                  "labels": rng.integers(0, 10, 2048).astype(np.int64)}
        args.train_flags += " --loss=cross-entropy:labels"
    for name, array in arrays.items():
        path = os.path.join(work, name + ".npy")
        np.save(path, array)
        args.data.append(f"{name}={path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--model")
    parser.add_argument("--bench-model", choices=["gpt", "mlp"])
    parser.add_argument("--data", action="append", default=[],
                        help="NAME=FILE.npy for loom-run train")
    parser.add_argument("--train-flags", default="--optimizer=adamw",
                        help="loomc flags of the training step (--loss ...)")
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--cluster",
                        help="a profile (default: calibrate one now)")
    parser.add_argument("--global-batch", type=int, default=0)
    parser.add_argument("--top", type=int, default=8)
    parser.add_argument("--plan-fix", default="")
    parser.add_argument("--steps", type=int, default=25)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3,
                        help="runs of every plan, one plan after another; "
                        "a plan's figure is its lowest median")
    parser.add_argument("--tolerance", type=float, default=0.20)
    parser.add_argument("--first-within", type=float, default=0.10)
    parser.add_argument("--workdir")
    args = parser.parse_args()

    bin_dir = os.path.join(args.build, "bin")
    work = args.workdir or tempfile.mkdtemp(prefix="loom-plan-")
    os.makedirs(work, exist_ok=True)
    if args.bench_model:
        export_bench_model(args, work)
    elif not args.model:
        parser.error("give --model or --bench-model")
    cluster = args.cluster
    if not cluster:
        cluster = os.path.join(work, "cluster.json")
        subprocess.run([os.path.join(bin_dir, "loom-run"), "calibrate",
                        "--nproc", str(args.nproc), "-o", cluster],
                       check=True, stdout=subprocess.DEVNULL)
    plans_json = os.path.join(work, "plans.json")
    train_flags = args.train_flags.split()
    cmd = [os.path.join(bin_dir, "loomc"), args.model, "--train", *train_flags,
           "--plan", "--plan-only", "--cluster", cluster,
           "--plan-devices", str(args.nproc), "--plan-top", str(args.top),
           "--plan-json", plans_json]
    if args.global_batch:
        cmd += ["--global-batch", str(args.global_batch)]
    if args.plan_fix:
        cmd += ["--plan-fix", args.plan_fix]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(plans_json) as f:
        plans = json.load(f)

    data = []
    for d in args.data:
        data += ["--data", d]
    bundles = []
    for i, plan in enumerate(plans):
        bundle = os.path.join(work, f"plan{i + 1}.loom")
        mesh = [] if plan["mesh"] == "(one device)" else ["--mesh", plan["mesh"]]
        subprocess.run([os.path.join(bin_dir, "loomc"), args.model, "--train",
                        *train_flags, *mesh, *plan["flags"].split(),
                        "-o", bundle], check=True, stdout=subprocess.DEVNULL)
        bundles.append(bundle)

    # Each round trains every plan once, so a plan's runs are minutes apart;
    # a plan's figure is its lowest round median, which leaves out the
    # stretches (seconds long) when something else on the machine slows a
    # whole run.
    medians = [[] for _ in plans]
    for r in range(args.rounds):
        for i, bundle in enumerate(bundles):
            metrics = os.path.join(work, f"plan{i + 1}.round{r + 1}.jsonl")
            subprocess.run([os.path.join(bin_dir, "loom-run"), "train", bundle,
                            "--nproc", str(args.nproc), *data,
                            "--steps", str(args.steps + args.warmup),
                            "--no-shuffle", "--log-every", "100000",
                            "--metrics", metrics],
                           check=True, stdout=subprocess.DEVNULL)
            with open(metrics) as f:
                times = [json.loads(line)["step_ms"] for line in f
                         if '"step_ms"' in line]
            medians[i].append(statistics.median(times[args.warmup:]))

    rows = []
    for i, plan in enumerate(plans):
        measured = min(medians[i])
        predicted = plan["step_ms"]
        error = predicted / measured - 1
        rows.append((i + 1, plan, predicted, measured, error))
        rounds = " ".join(f"{m:.2f}" for m in medians[i])
        print(f"{i + 1:2d}  {plan['mesh']:<10} {plan['flags']:<60} "
              f"predicted {predicted:8.2f} ms  measured {measured:8.2f} ms "
              f"(rounds: {rounds})  error {100 * error:+6.1f} %", flush=True)

    worst = max(abs(r[4]) for r in rows)
    fastest = min(r[3] for r in rows)
    first = rows[0][3]
    print(f"{len(rows)} plans: largest error {100 * worst:.1f} % "
          f"(tolerance {100 * args.tolerance:.0f} %); plan 1 measured "
          f"{first:.2f} ms, the fastest {fastest:.2f} ms "
          f"({100 * (first / fastest - 1):+.1f} %, tolerance "
          f"{100 * args.first_within:.0f} %)")
    ok = worst <= args.tolerance and first <= fastest * (1 + args.first_within)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
