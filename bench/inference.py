#!/usr/bin/env python3
"""Inference latency of Loom vs onnxruntime vs PyTorch, on this machine, in one run.

Each framework runs the same models (the fixtures of test/models, built from the
architectures in test/models/generate.py) on the same inputs with 2 threads
(Loom's generated code runs on one). Latency is the minimum of --repeat runs
after --warmup untimed runs. Loom's FLOP rate uses the model FLOPs from
`loom-opt --loom-cost-report`; the peak is a 2048^3 fp32 matmul in PyTorch.

Needs the pip packages torch, onnxruntime and numpy, and a built tree:
    make build && python3 bench/inference.py
"""
import argparse
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "test", "models")


def load_generator():
    spec = importlib.util.spec_from_file_location(
        "generate", os.path.join(MODELS, "generate.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def inputs_of(name):
    found = {}
    for f in sorted(os.listdir(MODELS)):
        m = re.match(rf"{re.escape(name)}\.in\.(.+)\.npy$", f)
        if m:
            found[m.group(1)] = np.load(os.path.join(MODELS, f))
    return found


def best_ms(fn, repeat, warmup):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return min(times)


def loom_ms(build, name, inputs, repeat, warmup, tmp):
    bundle = os.path.join(tmp, name + ".loom")
    subprocess.run([os.path.join(build, "bin", "loomc"),
                    os.path.join(MODELS, name + ".onnx"), "-O2", "-o", bundle],
                   check=True)
    args = [os.path.join(build, "bin", "loom-run"), "infer", bundle,
            "--output-dir", os.path.join(tmp, name + ".out"),
            "--repeat", str(repeat), "--warmup", str(warmup)]
    for key in inputs:
        args += ["--input", f"{key}={os.path.join(MODELS, f'{name}.in.{key}.npy')}"]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return float(re.search(r"min ([0-9.]+) ms", out).group(1))


def model_flops(build, name):
    mlir = subprocess.run([os.path.join(build, "bin", "loomc"),
                           os.path.join(MODELS, name + ".onnx")],
                          check=True, capture_output=True).stdout
    report = subprocess.run([os.path.join(build, "bin", "loom-opt"),
                             "--loom-cost-report", "-o", "/dev/null"],
                            input=mlir, check=True, capture_output=True,
                            text=False).stdout.decode()
    return int(re.search(r"^\s*total\s+\d+\s+(\d+)", report, re.M).group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()

    torch.set_num_threads(2)
    gen = load_generator()
    torch_models = {
        "mlp": lambda: gen.MLP(),
        "gpt_opset17": lambda: gen.GPT(),
        "resnet18": lambda: gen.ResNet18(),
        "lstm": lambda: gen.RNNHead(torch.nn.LSTM),
        "moe_top2": lambda: gen.MoETop2(),
    }

    a = torch.randn(2048, 2048)
    b = torch.randn(2048, 2048)
    peak_ms = best_ms(lambda: torch.mm(a, b), 5, 2)
    peak = 2 * 2048 ** 3 / (peak_ms * 1e-3) / 1e9
    print(f"torch {torch.__version__}, onnxruntime {ort.__version__}; "
          f"fp32 GEMM peak (torch.mm 2048^3, 2 threads): {peak:.1f} GFLOP/s")

    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    options.inter_op_num_threads = 1
    header = (f"{'model':<12} {'loom ms':>9} {'ort ms':>9} {'torch ms':>9} "
              f"{'loom/ort':>9} {'loom/torch':>10} {'loom GFLOP/s':>13} {'% peak':>7}")
    print(header)
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in torch_models.items():
            inputs = inputs_of(name)
            model = make().eval()
            tensors = [torch.from_numpy(v) for v in inputs.values()]
            with torch.no_grad():
                t_torch = best_ms(lambda: model(*tensors), args.repeat, args.warmup)
            session = ort.InferenceSession(os.path.join(MODELS, name + ".onnx"),
                                           options, providers=["CPUExecutionProvider"])
            t_ort = best_ms(lambda: session.run(None, inputs), args.repeat, args.warmup)
            t_loom = loom_ms(args.build, name, inputs, args.repeat, args.warmup, tmp)
            flops = model_flops(args.build, name)
            rate = flops / (t_loom * 1e-3) / 1e9
            print(f"{name:<12} {t_loom:9.3f} {t_ort:9.3f} {t_torch:9.3f} "
                  f"{t_loom / t_ort:9.2f} {t_loom / t_torch:10.2f} {rate:13.2f} "
                  f"{100 * rate / peak:6.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
