#!/usr/bin/env python3
"""Loom's planner against Megatron-LM's published scaling table.

For every row of megatron2021.json (Narayanan et al., 2021, Table 1) this
runs `loomc --plan-simulate` on the A100 cluster profile, with the row's
layout fixed as the paper ran it (tp, pp, dp = GPUs / (tp pp), the global
batch, fp16 with full activation recomputation, no sequence parallelism
(it came later), 16-bit gradient all-reduce not overlapped with the backward
pass, the 1F1B or interleaved schedule) and the planner choosing what the
table does not say (microbatch size, schedule, ZeRO). It prints predicted
against published teraFLOP/s per GPU (counted as the paper counts them,
recomputation included) and the predicted memory per GPU, and fails when a
row is off by more than --tolerance.

    python3 test/planner/megatron.py --loomc build/bin/loomc [--markdown]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loomc", required=True)
    parser.add_argument("--cluster", default=os.path.join(
        ROOT, "examples", "clusters", "dgx-a100-80gb.json"))
    parser.add_argument("--table", default=os.path.join(HERE, "megatron2021.json"))
    parser.add_argument("--tolerance", type=float, default=0.15)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()

    table = json.load(open(args.table))
    worst = 0.0
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for row in table["rows"]:
            model = {"name": "gpt-%gb" % row["params_b"], "layers": row["layers"],
                     "hidden": row["hidden"], "heads": row["heads"],
                     "seq_len": 2048, "vocab": 51200}
            model_path = os.path.join(tmp, "model.json")
            json.dump(model, open(model_path, "w"))
            out_path = os.path.join(tmp, "plans.json")
            dp = row["gpus"] // (row["tp"] * row["pp"])
            fix = ("dp=%d,tp=%d,pp=%d,ep=1,precision=fp16,remat=full,"
                   "sequence_parallel=false,overlap_grad_reduce=false,"
                   "grad_reduce_dtype=fp16,zero=0,schedule=1f1b|interleaved-1f1b"
                   % (dp, row["tp"], row["pp"]))
            cmd = [args.loomc, "--plan-simulate", model_path, "--cluster",
                   args.cluster, "--global-batch", str(row["batch"]),
                   "--plan-devices", str(row["gpus"]), "--plan-fix", fix,
                   "--plan-top", "1", "--plan-json", out_path]
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode != 0:
                print("loomc failed for %s: %s" % (model["name"], run.stderr))
                return 1
            best = json.load(open(out_path))["plans"][0]
            predicted = best["hardware_tflops_per_device"]
            error = predicted / row["tflops_per_gpu"] - 1
            worst = max(worst, abs(error))
            lines.append((row, dp, best, predicted, error))

    if args.markdown:
        print("| parameters | layout (tp, pp, dp) | batch | published TFLOP/s per GPU | "
              "predicted | error | predicted plan | predicted memory per GPU |")
        print("|---|---|---|---|---|---|---|---|")
    else:
        print("%-10s %-14s %6s %10s %10s %7s  %-44s %10s" % (
            "params", "tp,pp,dp", "batch", "published", "predicted", "error",
            "plan", "memory"))
    for row, dp, best, predicted, error in lines:
        plan = "microbatch %d, %s%s%s" % (
            best["microbatch"], best["schedule"],
            " V=%d" % best["virtual_stages"] if best["virtual_stages"] > 1 else "",
            ", ZeRO-%d" % best["zero"] if best["zero"] else "")
        memory = best["memory_bytes"] / 2**30
        if args.markdown:
            print("| %gB | %d, %d, %d | %d | %d | %.1f | %+.1f %% | %s | %.1f GiB |" % (
                row["params_b"], row["tp"], row["pp"], dp, row["batch"],
                row["tflops_per_gpu"], predicted, error * 100, plan, memory))
        else:
            print("%-10s %-14s %6d %10d %10.1f %+6.1f%%  %-44s %6.1f GiB" % (
                "%gB" % row["params_b"], "%d,%d,%d" % (row["tp"], row["pp"], dp),
                row["batch"], row["tflops_per_gpu"], predicted, error * 100,
                plan, memory))
    print("largest error %.1f %% (tolerance %.0f %%)" % (worst * 100,
                                                         args.tolerance * 100))
    return 0 if worst <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
