#!/usr/bin/env python3
"""Training-step time of Loom vs PyTorch (eager, torch.compile) and JAX/XLA.

The same models train with AdamW on the same shapes in one run on this
machine, 2 threads each:

  mlp  784-1024-1024-10, batch 256, cross-entropy (attached by loomc --loss)
  gpt  2 layers, d_model 128, 4 heads, vocabulary 256, batch 8, sequence 128,
       with its loss inside the ONNX graph

Mixed precision: "loom bf16" is loomc --precision=bf16 and "torch bf16"
PyTorch eager under torch.autocast("cpu", dtype=torch.bfloat16); the
bf16 lines give their per-round ratios to Loom fp32 and to PyTorch bf16
(FLOP rates count the same products).

A step is forward, backward and the optimizer update. Each round measures
every framework in turn: the median over --steps steps after --warmup steps
(Loom: the `step_ms` that `loom-run train --metrics` records around each
train_step call). The table gives the median over --rounds rounds, and the
median and range of the per-round ratios of Loom to each framework.
FLOPs per step are counted analytically (matmuls only: 2 per multiply-add,
backward twice the forward, less the MLP's gradient of its input data, which
no framework computes); the peak is the fastest 2048^3 fp32 matmul of
PyTorch, numpy and Loom (a one-op model through loom-run infer).

--fold-constants exports the GPT with torch.onnx.export's constant folding
(its default, off here as in the README's table): the causal mask's
comparison becomes a boolean constant that the step reads from memory.

Needs torch and numpy (pip), optionally jax, and a built tree:
    make build && python3 bench/train.py
"""
import argparse
import importlib.util
import inspect
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

warnings.filterwarnings("ignore")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_gpt():
    spec = importlib.util.spec_from_file_location(
        "generate", os.path.join(ROOT, "test", "models", "generate.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.GPT


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 1024)
        self.fc2 = nn.Linear(1024, 1024)
        self.fc3 = nn.Linear(1024, 10)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def make_gpt_with_loss(GPT):
    class GPTWithLoss(nn.Module):
        def __init__(self):
            super().__init__()
            self.gpt = GPT(vocab=256, seq_len=128, d_model=128, n_heads=4, n_layers=2)

        def forward(self, tokens, targets):
            logits = self.gpt(tokens)
            return F.cross_entropy(logits.reshape(-1, 256), targets.reshape(-1))

    return GPTWithLoss


class MatMul(nn.Module):
    def forward(self, a, b):
        return a @ b


def gemm_peak(build, work):
    """fp32 2048^3 matmul rates of PyTorch, numpy (OpenBLAS) and Loom (its
    runtime's GEMM, through a compiled one-op model); the peak is the best."""
    n = 2048
    rates = {}
    for name, (a, b) in [("torch", (torch.randn(n, n), torch.randn(n, n))),
                         ("numpy", (np.random.rand(n, n).astype(np.float32),
                                    np.random.rand(n, n).astype(np.float32)))]:
        for _ in range(2):
            a @ b
        best = min(timed(lambda: a @ b) for _ in range(5))
        rates[name] = 2 * n ** 3 / best / 1e9
    onnx_path = os.path.join(work, "matmul.onnx")
    bundle = os.path.join(work, "matmul.loom")
    export(MatMul(), (torch.randn(n, n), torch.randn(n, n)), ["a", "b"], ["c"],
           onnx_path)
    subprocess.run([os.path.join(build, "bin", "loomc"), onnx_path, "-O2",
                    "-o", bundle], check=True)
    args = [os.path.join(build, "bin", "loom-run"), "infer", bundle,
            "--output-dir", os.path.join(work, "matmul.out"),
            "--repeat", "5", "--warmup", "2"]
    for key in ("a", "b"):
        path = os.path.join(work, f"matmul.{key}.npy")
        np.save(path, np.random.rand(n, n).astype(np.float32))
        args += ["--input", f"{key}={path}"]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    best = float(re.search(r"min ([0-9.]+) ms", out).group(1)) / 1e3
    rates["loom"] = 2 * n ** 3 / best / 1e9
    return max(rates.values()), rates


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def export(model, args, names, outputs, path, fold=False):
    kw = dict(input_names=names, output_names=outputs, opset_version=17,
              do_constant_folding=fold)
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kw["dynamo"] = False
    with torch.no_grad():
        torch.onnx.export(model, args, path, **kw)


def loom_runner(build, workdir, name, onnx_path, loss_flags, data, flags=()):
    """Compiles the bundle once; the runner trains it for warmup + steps."""
    bundle = os.path.join(workdir, name + ".loom")
    subprocess.run([os.path.join(build, "bin", "loomc"), onnx_path, "--train",
                    "--optimizer=adamw", "--lr=1e-3", *loss_flags, *flags,
                    "-o", bundle],
                   check=True)
    data_args = []
    for key, array in data.items():
        path = os.path.join(workdir, f"{name}.{key}.npy")
        np.save(path, array)
        data_args += ["--data", f"{key}={path}"]
    metrics = os.path.join(workdir, name + ".jsonl")

    def run(steps, warmup):
        subprocess.run([os.path.join(build, "bin", "loom-run"), "train", bundle,
                        "--steps", str(steps + warmup), "--no-shuffle",
                        "--metrics", metrics, "--log-every", "1000", *data_args],
                       check=True, stdout=subprocess.DEVNULL)
        with open(metrics) as f:
            times = [json.loads(line)["step_ms"] for line in f if '"step_ms"' in line]
        return statistics.median(times[warmup:])

    return run


def torch_runner(model, loss_fn, compiled=False, bf16=False):
    """One model and optimizer, kept across rounds (torch.compile compiles
    once); `bf16`: the forward pass under CPU autocast to bf16."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    fn = torch.compile(loss_fn) if compiled else loss_fn

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = fn(model)
        loss.float().backward()
        opt.step()

    def run(steps, warmup):
        for _ in range(warmup):
            step()
        return statistics.median(timed(step) for _ in range(steps)) * 1e3

    return run


def jax_runner(kind, params, batch):
    import jax
    import jax.numpy as jnp

    def mlp_loss(p, x, y):
        h = jax.nn.relu(x @ p["fc1.weight"].T + p["fc1.bias"])
        h = jax.nn.relu(h @ p["fc2.weight"].T + p["fc2.bias"])
        logits = h @ p["fc3.weight"].T + p["fc3.bias"]
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    def ln(x, w, b):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / jnp.sqrt(v + 1e-5) * w + b

    def gpt_loss(p, tokens, targets):
        B, T = tokens.shape
        x = p["gpt.tok_emb.weight"][tokens] + p["gpt.pos_emb.weight"][:T]
        mask = jnp.tril(jnp.ones((T, T), bool))
        for i in range(2):
            q = f"gpt.blocks.{i}."
            h = ln(x, p[q + "ln1.weight"], p[q + "ln1.bias"])
            qkv = h @ p[q + "attn.qkv.weight"].T + p[q + "attn.qkv.bias"]
            qq, kk, vv = jnp.split(qkv, 3, axis=-1)
            heads = lambda t: t.reshape(B, T, 4, 32).transpose(0, 2, 1, 3)
            att = heads(qq) @ heads(kk).transpose(0, 1, 3, 2) / math.sqrt(32)
            att = jax.nn.softmax(jnp.where(mask, att, -jnp.inf), axis=-1)
            y = (att @ heads(vv)).transpose(0, 2, 1, 3).reshape(B, T, 128)
            x = x + y @ p[q + "attn.proj.weight"].T + p[q + "attn.proj.bias"]
            h = ln(x, p[q + "ln2.weight"], p[q + "ln2.bias"])
            h = jax.nn.gelu(h @ p[q + "mlp.0.weight"].T + p[q + "mlp.0.bias"],
                            approximate=False)
            x = x + h @ p[q + "mlp.2.weight"].T + p[q + "mlp.2.bias"]
        x = ln(x, p["gpt.ln_f.weight"], p["gpt.ln_f.bias"])
        logp = jax.nn.log_softmax(x @ p["gpt.lm_head.weight"].T)
        return -jnp.mean(jnp.take_along_axis(logp, targets[..., None], axis=-1))

    loss_fn = mlp_loss if kind == "mlp" else gpt_loss

    @jax.jit
    def step(p, m, v, t, *batch):
        loss, g = jax.value_and_grad(loss_fn)(p, *batch)
        b1, b2, lr, wd = 0.9, 0.999, 1e-3, 0.01
        m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, m, g)
        v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, v, g)
        c1, c2 = 1 - b1 ** t, 1 - b2 ** t
        p = jax.tree.map(lambda p, m, v: p * (1 - lr * wd)
                         - lr / c1 * m / (jnp.sqrt(v / c2) + 1e-8), p, m, v)
        return p, m, v, loss

    p = {k: jnp.asarray(v) for k, v in params.items()}
    m = jax.tree.map(jnp.zeros_like, p)
    v = jax.tree.map(jnp.zeros_like, p)
    batch = [jnp.asarray(a) for a in batch]
    t = 1.0

    def one():
        nonlocal p, m, v, t
        p, m, v, loss = step(p, m, v, t, *batch)
        loss.block_until_ready()
        t += 1

    def run(steps, warmup):
        for _ in range(warmup):
            one()
        return statistics.median(timed(one) for _ in range(steps)) * 1e3

    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5,
                        help="measurements of each framework, interleaved")
    parser.add_argument("--no-compile", action="store_true",
                        help="skip torch.compile (its first compile takes minutes)")
    parser.add_argument("--fold-constants", action="store_true",
                        help="export the GPT with constant folding (the causal "
                        "mask as a boolean constant)")
    args = parser.parse_args()
    torch.set_num_threads(2)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    GPT = make_gpt_with_loss(load_gpt())
    models = []
    with tempfile.TemporaryDirectory() as work:
        peak, rates = gemm_peak(args.build, work)
        print("fp32 GEMM peak (2048^3, 2 threads): " + ", ".join(
            f"{name} {rate:.1f}" for name, rate in rates.items()) +
            f" GFLOP/s; the best, {peak:.1f}, is 100 %")
        total = args.steps + args.warmup
        # MLP
        mlp = MLP()
        x = rng.standard_normal((256 * total, 784)).astype(np.float32)
        y = rng.integers(0, 10, 256 * total)
        onnx_path = os.path.join(work, "mlp.onnx")
        export(mlp, (torch.zeros(256, 784),), ["x"], ["logits"], onnx_path)
        linear = 784 * 1024 + 1024 * 1024 + 1024 * 10
        # Forward, weight gradients and input gradients, less the input
        # gradient of the first layer (of the data), which nobody computes.
        flops = 3 * 2 * 256 * linear - 2 * 256 * 784 * 1024
        xb, yb = torch.from_numpy(x[:256]), torch.from_numpy(y[:256])
        models.append(("mlp", flops, {
            "loom": loom_runner(args.build, work, "mlp", onnx_path,
                                ["--loss=cross-entropy:labels"],
                                {"x": x, "labels": y}),
            "torch eager": torch_runner(MLP(), lambda m: F.cross_entropy(m(xb), yb)),
            "torch.compile": None if args.no_compile else torch_runner(
                MLP(), lambda m: F.cross_entropy(m(xb), yb), compiled=True),
            "jax": try_jax("mlp", mlp, [x[:256], y[:256]]),
            "loom bf16": loom_runner(args.build, work, "mlp_bf16", onnx_path,
                                     ["--loss=cross-entropy:labels"],
                                     {"x": x, "labels": y},
                                     ["--precision=bf16"]),
            "torch bf16": torch_runner(
                MLP(), lambda m: F.cross_entropy(m(xb), yb), bf16=True),
        }))
        # GPT
        gpt = GPT()
        toks = rng.integers(0, 256, (8 * total, 128))
        tgts = rng.integers(0, 256, (8 * total, 128))
        onnx_path = os.path.join(work, "gpt.onnx")
        zeros = torch.zeros(8, 128, dtype=torch.long)
        export(gpt, (zeros, zeros), ["tokens", "targets"], ["loss"], onnx_path,
               fold=args.fold_constants)
        d, T, B = 128, 128, 8
        per_layer = 2 * B * T * (3 * d * d + d * d + 8 * d * d) + 2 * 2 * B * T * T * d
        flops = 3 * (2 * per_layer + 2 * B * T * d * 256)
        tb = torch.from_numpy(toks[:8])
        gb = torch.from_numpy(tgts[:8])
        models.append(("gpt", flops, {
            "loom": loom_runner(args.build, work, "gpt", onnx_path, [],
                                {"tokens": toks, "targets": tgts}),
            "torch eager": torch_runner(GPT(), lambda m: m(tb, gb)),
            "torch.compile": None if args.no_compile else torch_runner(
                GPT(), lambda m: m(tb, gb), compiled=True),
            "jax": try_jax("gpt", gpt, [toks[:8], tgts[:8]]),
            "loom bf16": loom_runner(args.build, work, "gpt_bf16", onnx_path,
                                     [], {"tokens": toks, "targets": tgts},
                                     ["--precision=bf16"]),
            "torch bf16": torch_runner(GPT(), lambda m: m(tb, gb), bf16=True),
        }))

        # Rounds interleave the frameworks, so that a slow spell of this
        # shared machine hits all of them; each round's ratio compares
        # neighbouring measurements.
        rows = []
        for name, flops, runners in models:
            times = {fw: [] for fw, run in runners.items() if run is not None}
            for _ in range(args.rounds):
                for fw in times:
                    times[fw].append(runners[fw](args.steps, args.warmup))
            rows.append((name, flops, times))

    print(f"\nmedian over {args.rounds} interleaved rounds of the median step "
          f"of {args.steps} (range over rounds in brackets)")
    print(f"{'model':6s} {'framework':14s} {'step ms':>9s} {'GFLOP/s':>9s} "
          f"{'% peak':>7s} {'loom/x':>7s}  {'loom/x range':>13s}")
    for name, flops, times in rows:
        for fw, rounds in times.items():
            ms = statistics.median(rounds)
            rate = flops / (ms / 1e3) / 1e9
            ratios = [a / b for a, b in zip(times["loom"], rounds)]
            print(f"{name:6s} {fw:14s} {ms:9.2f} {rate:9.1f} {100 * rate / peak:6.1f}% "
                  f"{statistics.median(ratios):7.2f}  "
                  f"[{min(ratios):.2f}, {max(ratios):.2f}]")
        # Mixed precision: Loom bf16 against Loom fp32 and PyTorch's CPU
        # autocast to bf16, per-round ratios.
        for other in ("loom", "torch bf16"):
            ratios = [a / b for a, b in zip(times["loom bf16"], times[other])]
            print(f"{name:6s} loom bf16 / {other}: "
                  f"{statistics.median(ratios):.2f} "
                  f"[{min(ratios):.2f}, {max(ratios):.2f}]")


def try_jax(kind, model, batch):
    try:
        import jax  # noqa: F401
    except ImportError:
        return None
    params = {k: v.detach().numpy() for k, v in model.named_parameters()}
    return jax_runner(kind, params, batch)


if __name__ == "__main__":
    main()
