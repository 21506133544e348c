#!/usr/bin/env python3
"""Generate the fine-tuning fixtures of test/e2e/finetune.test.

Usage:  python3 test/e2e/finetune/generate.py   (needs torch, numpy, safetensors)

The model is test/e2e/training/mlp.onnx (PyTorch's MLP with
torch.manual_seed(0)). PyTorch pretrains it on task A (10 AdamW steps), saves
the result, and fine-tunes it on task B with fc1 frozen (requires_grad off:
no gradient, no optimizer state), 10 AdamW steps with fresh optimizer state:

  a.x.npy, a.labels.npy, b.x.npy, b.labels.npy   the two tasks' batches
  pretrained.safetensors      the pretrained state dict (safetensors.torch)
  pretrained.f16.safetensors  the same in float16, and
  pretrained.bf16.safetensors in bfloat16, with
  fc1.weight.{f16,bf16}.npy   their fc1 weights widened to float32
  prefixed.safetensors        the pretrained state dict under "model."
  extra.safetensors           with one more tensor, "head.weight"
  pretrained.npz              numpy.savez of the pretrained weights
  bad_shape.safetensors       fc1.weight transposed
  pretrain.*                  the pretraining run: losses, parameters (the
                              pretrained weights)
  finetune.*                  the fine-tuning run: losses, parameters
"""

import importlib.util
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 10

# The MLP of test/e2e/training (mlp.onnx holds its torch.manual_seed(0)
# weights), loaded from that generator under a name of its own.
_spec = importlib.util.spec_from_file_location(
    "training_generate", os.path.join(HERE, "..", "training", "generate.py"))
_training = importlib.util.module_from_spec(_spec)
sys.modules["training_generate"] = _training
_spec.loader.exec_module(_training)
MLP = _training.MLP


def run(model, x, y, prefix):
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=3e-3, weight_decay=0.01)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    np.save(os.path.join(HERE, f"{prefix}.losses.npy"), np.array(losses))
    for name, p in model.named_parameters():
        np.save(os.path.join(HERE, f"{prefix}.{name}.npy"), p.detach().numpy())
    print(f"{prefix}: loss {losses[0]:.6f} -> {losses[-1]:.6f}")


def main():
    torch.set_num_threads(1)
    rng = np.random.default_rng(20)
    xa = torch.from_numpy(rng.standard_normal((16, 32)).astype(np.float32))
    ya = torch.from_numpy(rng.integers(0, 10, 16).astype(np.int64))
    # Task B: other inputs, labels from a different rule.
    xb = torch.from_numpy((rng.standard_normal((16, 32)) * 0.5 + 0.3).astype(np.float32))
    yb = torch.from_numpy(rng.integers(0, 10, 16).astype(np.int64))
    for name, t in {"a.x": xa, "a.labels": ya, "b.x": xb, "b.labels": yb}.items():
        np.save(os.path.join(HERE, f"{name}.npy"), t.numpy())

    torch.manual_seed(0)
    model = MLP()
    run(model, xa, ya, "pretrain")
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    save_file(state, os.path.join(HERE, "pretrained.safetensors"))
    np.savez(os.path.join(HERE, "pretrained.npz"), **{k: v.numpy() for k, v in state.items()})
    for suffix, dtype in (("f16", torch.float16), ("bf16", torch.bfloat16)):
        low = {k: v.to(dtype) for k, v in state.items()}
        save_file(low, os.path.join(HERE, f"pretrained.{suffix}.safetensors"))
        np.save(os.path.join(HERE, f"fc1.weight.{suffix}.npy"),
                low["fc1.weight"].to(torch.float32).numpy())
    save_file({"model." + k: v for k, v in state.items()},
              os.path.join(HERE, "prefixed.safetensors"))
    save_file(dict(state, **{"head.weight": torch.zeros(3, 3)}),
              os.path.join(HERE, "extra.safetensors"))
    save_file(dict(state, **{"fc1.weight": state["fc1.weight"].T.contiguous()}),
              os.path.join(HERE, "bad_shape.safetensors"))

    # Fine-tune from the pretrained weights with fc1 frozen.
    for p in model.fc1.parameters():
        p.requires_grad_(False)
    run(model, xb, yb, "finetune")
    assert torch.equal(model.fc1.weight, state["fc1.weight"])


if __name__ == "__main__":
    main()
