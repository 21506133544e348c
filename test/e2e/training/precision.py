#!/usr/bin/env python3
"""References for mixed-precision training (test/e2e/precision.test).

Trains generate.py's MLP, CNN and GPT-style decoder, from the initial
parameters of their committed ONNX fixtures, on the fixtures' batches for 50
steps with AdamW (lr 3e-3, weight decay 0.01): once in fp32 and once under
PyTorch's CPU autocast to bf16. Writes

  <model>.fp32x50.losses.npy      the fp32 losses
  <model>.bf16x50.losses.npy      the autocast losses
  <model>.bf16x50.rtol            max_i |bf16_i - fp32_i| / |fp32_i|: how far
                                  PyTorch's own bf16 run strays from fp32,
                                  the tolerance Loom's bf16 run is held to

and, for fp16 with dynamic loss scaling (torch.amp.GradScaler, a first scale
of 2^24 that overflows, growth every 3 clean steps, 20 steps), the MLP's
under Loom's fp16 casting policy (spelled out in HalfLinear: where scaled
gradients overflow depends on the policy, and PyTorch's autocast puts the
biases and activations in fp16 too)

  mlp.fp16scaler.losses.npy       the losses
  mlp.fp16scaler.<param>.npy      the parameters after the 20 steps
  mlp.fp16scaler.check            FileCheck lines: each step's scale and the
                                  steps skipped so far, as loom-run writes
                                  them to its metrics

and, for --precision=bf16-pure (bf16 parameters and gradients, fp32 AdamW
state, each update computed in fp32 and rounded once to bf16; the forward
under CPU autocast to bf16, as Loom's policy is bf16's),

  <model>.bf16purex50.losses.npy  the losses
  <model>.bf16purex50.rtol        max_i |pure_i - fp32_i| / |fp32_i|

Run from anywhere with torch, onnx and numpy (pip):
    python3 test/e2e/training/precision.py          # everything
    python3 test/e2e/training/precision.py --pure   # the bf16-pure files only
"""
import importlib.util
import os

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
# This folder's generate.py (the models of the training fixtures), under a
# name of its own: it imports test/models/generate.py as `generate`.
_spec = importlib.util.spec_from_file_location(
    "training_generate", os.path.join(HERE, "generate.py"))
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)

STEPS = 50


def load(name):
    return torch.from_numpy(np.load(os.path.join(HERE, name)))


def run(make_model, loss_fn, autocast):
    model = make_model()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = loss_fn(model)
        loss.float().backward()
        opt.step()
        losses.append(loss.float().item())
    return np.array(losses)


def run_pure(make_model, loss_fn, lr=3e-3, weight_decay=0.01,
             betas=(0.9, 0.999), eps=1e-8):
    """bf16-pure: the model's parameters (and buffers) in bf16, the forward
    under CPU autocast, bf16 gradients, and AdamW (torch.optim.AdamW's
    formula) on fp32 moments with the update computed in fp32 and rounded
    once to bf16."""
    model = make_model().to(torch.bfloat16)
    params = [p for p in model.parameters() if p.requires_grad]
    moments = [(torch.zeros(p.shape), torch.zeros(p.shape)) for p in params]
    losses = []
    for t in range(1, STEPS + 1):
        for p in params:
            p.grad = None
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = loss_fn(model)
        loss.float().backward()
        with torch.no_grad():
            for p, (m, v) in zip(params, moments):
                if p.grad is None:
                    continue
                g = p.grad.float()
                w = p.float() * (1 - lr * weight_decay)
                m.mul_(betas[0]).add_(g, alpha=1 - betas[0])
                v.mul_(betas[1]).addcmul_(g, g, value=1 - betas[1])
                step_size = lr / (1 - betas[0] ** t)
                denom = (v.sqrt() / (1 - betas[1] ** t) ** 0.5).add_(eps)
                w.addcdiv_(m, denom, value=-step_size)
                p.copy_(w.to(torch.bfloat16))
        losses.append(loss.float().item())
    return np.array(losses)


def main(pure_only=False):
    torch.set_num_threads(1)

    def mlp():
        torch.manual_seed(0)
        return generate.MLP()

    def cnn():
        torch.manual_seed(0)
        return generate.CNN().train()

    def gpt():
        torch.manual_seed(0)
        return generate.GPTWithLoss()

    x, y = load("mlp.in.x.npy"), load("mlp.in.labels.npy")
    xc, yc = load("cnn.in.x.npy"), load("cnn.in.labels.npy")
    tokens = load("gpt_opset14.in.tokens.npy")
    targets = load("gpt_opset14.in.targets.npy")
    models = [
        ("mlp", mlp, lambda m: F.cross_entropy(m(x), y)),
        ("cnn", cnn, lambda m: F.cross_entropy(m(xc), yc)),
        ("gpt", gpt, lambda m: m(tokens, targets)),
    ]
    for name, make, loss_fn in models:
        fp32 = np.load(os.path.join(HERE, f"{name}.fp32x50.losses.npy"))
        pure = run_pure(make, loss_fn)
        rtol = float(np.max(np.abs(pure - fp32) / np.abs(fp32)))
        np.save(os.path.join(HERE, f"{name}.bf16purex50.losses.npy"), pure)
        with open(os.path.join(HERE, f"{name}.bf16purex50.rtol"), "w") as f:
            f.write(f"{rtol:.6g}\n")
        print(f"{name}: bf16-pure {pure[0]:.5f} -> {pure[-1]:.5f}, max "
              f"relative difference from fp32 {rtol:.4g}")
    if pure_only:
        return
    loss_scaling("mlp", lambda: LoomHalfMLP(mlp()),
                 lambda m: F.cross_entropy(m(x), y))
    for name, make, loss_fn in models:
        fp32 = run(make, loss_fn, autocast=False)
        bf16 = run(make, loss_fn, autocast=True)
        rtol = float(np.max(np.abs(bf16 - fp32) / np.abs(fp32)))
        np.save(os.path.join(HERE, f"{name}.fp32x50.losses.npy"), fp32)
        np.save(os.path.join(HERE, f"{name}.bf16x50.losses.npy"), bf16)
        with open(os.path.join(HERE, f"{name}.bf16x50.rtol"), "w") as f:
            f.write(f"{rtol:.6g}\n")
        print(f"{name}: fp32 {fp32[0]:.5f} -> {fp32[-1]:.5f}, bf16 autocast "
              f"{bf16[0]:.5f} -> {bf16[-1]:.5f}, max relative difference {rtol:.4g}")


class HalfLinear(torch.autograd.Function):
    """x @ w.T as loomc --precision=fp16 computes it: fp16 factors, an f32
    accumulator as the result (its only use, the bias add, is f32), and
    gradients that are fp16 products (rounded, inf past 65504) of the
    gradient cast to fp16. PyTorch's autocast differs (fp16 results, the
    bias in the product, fp16 activations), and so does where the scaled
    gradients overflow; GradScaler's algorithm is what this reference
    checks."""

    @staticmethod
    def forward(ctx, x, w):
        xh, wh = x.half().float(), w.half().float()
        ctx.save_for_backward(xh, wh)
        ctx.x_dtype = x.dtype
        return xh @ wh.t()

    @staticmethod
    def backward(ctx, g):
        xh, wh = ctx.saved_tensors
        gh = g.half().float()
        return ((gh @ wh).half().to(ctx.x_dtype),
                (gh.t() @ xh).half().float())


class LoomHalfMLP(torch.nn.Module):
    """generate.MLP under Loom's fp16 policy: HalfLinear products, each bias
    added in f32 and rounded once to fp16 for the activation, tanh and ReLU
    in fp16 (PyTorch's half ops, which compute in f32 and round, as Loom's
    do), the last layer's sum and the loss in f32."""

    def __init__(self, mlp):
        super().__init__()
        self.mlp = mlp

    def forward(self, x):
        m = self.mlp
        x = torch.tanh((HalfLinear.apply(x, m.fc1.weight) + m.fc1.bias).half())
        x = F.relu((HalfLinear.apply(x, m.fc2.weight) + m.fc2.bias).half())
        return HalfLinear.apply(x, m.fc3.weight) + m.fc3.bias


def scaled_fp16(make_model, loss_fn, init_scale, growth_interval, steps):
    """torch.amp.GradScaler on `make_model()`: per step the loss, the scale
    it was computed with and the skipped steps so far."""
    model = make_model()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale,
                                  growth_interval=growth_interval)
    losses, scales, skipped = [], [], []
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(model)
        scale = scaler.get_scale()
        scaler.scale(loss.float()).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.float().item())
        scales.append(scale)
        skipped.append((skipped[-1] if skipped else 0) +
                       (scaler.get_scale() < scale))
    return model, np.array(losses), scales, skipped


def loss_scaling(name, make_model, loss_fn):
    """References for the fp16 loss-scaling test, on the model under Loom's
    fp16 policy: a first scale of 2^24 overflows the fp16 gradients, so the
    first steps are skipped and halve it; then every 3 clean steps double
    it, until it overflows again."""
    model, losses, scales, skipped = scaled_fp16(make_model, loss_fn,
                                                 2.0 ** 24, 3, 20)
    np.save(os.path.join(HERE, f"{name}.fp16scaler.losses.npy"), losses)
    for pname, p in model.mlp.named_parameters():
        np.save(os.path.join(HERE, f"{name}.fp16scaler.{pname}.npy"),
                p.detach().numpy())
    # The metrics records loom-run writes, as FileCheck lines.
    with open(os.path.join(HERE, f"{name}.fp16scaler.check"), "w") as f:
        f.write("# torch.amp.GradScaler(init_scale=2**24, growth_interval=3)\n"
                "# on the MLP under Loom's fp16 policy, written by\n"
                "# precision.py: the scale of each step and the steps\n"
                "# skipped so far.\n")
        for step, (scale, count) in enumerate(zip(scales, skipped), 1):
            f.write(f'CHECK: {{"step": {step}, {{{{.*}}}} "loss_scale": '
                    f'{scale:.9g}, "skipped_steps": {count},\n')
    print(f"{name}: fp16 with loss scaling: scales {scales}, skipped {skipped}, "
          f"loss {losses[0]:.5f} -> {losses[-1]:.5f}")


if __name__ == "__main__":
    import sys
    main(pure_only="--pure" in sys.argv[1:])
