#!/usr/bin/env python3
"""Export the byte-level GPT-style decoder that `make demo` trains.

Usage:  python3 examples/char-gpt/generate.py

Writes examples/char-gpt/char_gpt.onnx: a 2-layer decoder (d_model 64, 4
heads, vocabulary 256 = one token per byte, sequences of 64, batch 8) whose
graph takes `tokens` and `targets` [8, 64] and computes the mean next-token
cross-entropy itself, with PyTorch's initial parameters (seed 0). The demo
trains it on the project's own README.md, read byte by byte
(`loom-run train --tokens README.md --token-dtype uint8`).
"""

import inspect
import os
import sys
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

warnings.filterwarnings("ignore", message=".*legacy TorchScript-based ONNX export.*")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "test", "models"))
from generate import GPT  # noqa: E402

BATCH, SEQ = 8, 64


class CharGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.gpt = GPT(vocab=256, seq_len=SEQ, d_model=64, n_heads=4, n_layers=2)

    def forward(self, tokens, targets):
        logits = self.gpt(tokens)
        return F.cross_entropy(logits.reshape(-1, 256), targets.reshape(-1))


def main():
    torch.manual_seed(0)
    model = CharGPT()
    tokens = torch.zeros(BATCH, SEQ, dtype=torch.long)
    kw = dict(
        input_names=["tokens", "targets"],
        output_names=["loss"],
        opset_version=17,
        do_constant_folding=False,
    )
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kw["dynamo"] = False
    path = os.path.join(HERE, "char_gpt.onnx")
    with torch.no_grad():
        torch.onnx.export(model, (tokens, tokens), path, **kw)
    params = sum(p.numel() for p in model.parameters())
    print(f"wrote {path}: {params} parameters, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
