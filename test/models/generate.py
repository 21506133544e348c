#!/usr/bin/env python3
"""Generate the PyTorch-exported ONNX model fixtures used by Loom's tests.

Usage:  python3 test/models/generate.py

Every model is written by hand in torch (no torchvision / HF), exported with the
TorchScript ONNX exporter (``dynamo=False``) with static shapes, checked with
onnx.checker, and run with both onnxruntime and torch on a fixed random input.
The inputs and torch outputs are saved next to the model as
``<name>.in.<input>.npy`` / ``<name>.out.<output>.npy``.  A summary of the
distinct op types per model is written to ``OPS.txt``.

The script is deterministic: weights come from ``torch.manual_seed(0)`` (reset
before each model) and inputs from ``numpy.random.default_rng`` with fixed seeds.
"""

import inspect
import math
import os
import sys
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn as nn
import torch.nn.functional as F

# Known, harmless exporter warnings (legacy exporter use; static batch for RNNs).
warnings.filterwarnings("ignore", message=".*legacy TorchScript-based ONNX export.*")
warnings.filterwarnings("ignore", message=".*with a batch_size other than 1.*")

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_BYTES = 2 * 1024 * 1024
REL_TOL = 1e-4

_EXPORT_HAS_DYNAMO = "dynamo" in inspect.signature(torch.onnx.export).parameters


# --------------------------------------------------------------------------- #
# Models
# --------------------------------------------------------------------------- #


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.fc2 = nn.Linear(256, 256)
        self.fc3 = nn.Linear(256, 10)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_heads, seq_len):
        super().__init__()
        assert d_model % n_heads == 0
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.register_buffer(
            "mask", torch.tril(torch.ones(seq_len, seq_len)).view(1, 1, seq_len, seq_len)
        )

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = k.view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        v = v.view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v  # [B, H, T, hd]
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class GPTBlock(nn.Module):
    def __init__(self, d_model, n_heads, seq_len):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads, seq_len)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model),
            nn.GELU(),  # exact (erf) form
            nn.Linear(4 * d_model, d_model),
        )

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x


class GPT(nn.Module):
    def __init__(self, vocab=128, seq_len=16, d_model=64, n_heads=4, n_layers=2):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, d_model)
        self.pos_emb = nn.Embedding(seq_len, d_model)
        self.blocks = nn.ModuleList(
            [GPTBlock(d_model, n_heads, seq_len) for _ in range(n_layers)]
        )
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)
        self.register_buffer("pos", torch.arange(seq_len, dtype=torch.long))
        # Non-trivial LayerNorm affine parameters (the defaults 1/0 would hide
        # gamma/beta bugs, and the exporter would de-duplicate them into
        # Identity nodes).
        g = torch.Generator().manual_seed(2)
        for m in self.modules():
            if isinstance(m, nn.LayerNorm):
                c = m.normalized_shape[0]
                m.weight.data.copy_(1.0 + 0.1 * torch.randn(c, generator=g))
                m.bias.data.copy_(0.1 * torch.randn(c, generator=g))

    def forward(self, tokens):
        T = tokens.shape[1]
        x = self.tok_emb(tokens) + self.pos_emb(self.pos[:T])
        for blk in self.blocks:
            x = blk(x)
        return self.lm_head(self.ln_f(x))


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or in_planes != planes:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_planes, planes, 1, stride, bias=False),
                nn.BatchNorm2d(planes),
            )

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet18(nn.Module):
    def __init__(self, base=8, layers=(2, 2, 2, 2), num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, base, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(base)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        in_planes = base
        stages = []
        for i, n in enumerate(layers):
            planes = base * (2 ** i)
            stride = 1 if i == 0 else 2
            blocks = [BasicBlock(in_planes, planes, stride)]
            in_planes = planes
            blocks += [BasicBlock(in_planes, planes, 1) for _ in range(n - 1)]
            stages.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(in_planes, num_classes)
        # Non-trivial BatchNorm statistics so that the BN nodes actually matter.
        g = torch.Generator().manual_seed(1)
        for m in self.modules():
            if isinstance(m, nn.BatchNorm2d):
                c = m.num_features
                m.running_mean.copy_(torch.randn(c, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(c, generator=g) * 0.5 + 0.75)
                m.weight.data.copy_(torch.rand(c, generator=g) * 0.5 + 0.75)
                m.bias.data.copy_(torch.randn(c, generator=g) * 0.1)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


class RNNHead(nn.Module):
    def __init__(self, cell, input_size=16, hidden=32, num_classes=10):
        super().__init__()
        self.rnn = cell(input_size, hidden, num_layers=1, batch_first=True)
        self.fc = nn.Linear(hidden, num_classes)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.fc(out[:, -1, :])


class Expert(nn.Module):
    def __init__(self, d=32, h=64):
        super().__init__()
        self.fc1 = nn.Linear(d, h)
        self.fc2 = nn.Linear(h, d)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class MoETop2(nn.Module):
    def __init__(self, d=32, n_experts=4, k=2):
        super().__init__()
        self.k = k
        self.router = nn.Linear(d, n_experts)
        self.experts = nn.ModuleList([Expert(d) for _ in range(n_experts)])

    def forward(self, x):  # x: [N, d]
        probs = F.softmax(self.router(x), dim=-1)  # [N, E]
        top_vals, top_idx = torch.topk(probs, self.k, dim=-1)  # [N, k]
        gates = top_vals / top_vals.sum(dim=-1, keepdim=True)
        dense = torch.zeros_like(probs).scatter(-1, top_idx, gates)  # [N, E]
        y = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            y = y + dense[:, e : e + 1] * expert(x)
        return y


# --------------------------------------------------------------------------- #
# Export / check helpers
# --------------------------------------------------------------------------- #


def rel_err(got, ref):
    """max |got - ref| / max |ref|  (normalised max error)."""
    got = got.astype(np.float64)
    ref = ref.astype(np.float64)
    denom = max(np.abs(ref).max(), 1e-12)
    return float(np.abs(got - ref).max() / denom)


def export(name, model, inputs, input_names, output_names, opset, **kw):
    """Export, check, compare against ORT, save fixtures. Returns op list."""
    model.eval()
    path = os.path.join(HERE, name + ".onnx")
    args = tuple(torch.from_numpy(a) for a in inputs)
    export_kw = dict(
        input_names=input_names,
        output_names=output_names,
        opset_version=opset,
    )
    export_kw.update(kw)
    if _EXPORT_HAS_DYNAMO:
        export_kw["dynamo"] = False
    with torch.no_grad():
        torch.onnx.export(model, args, path, **export_kw)
        ref = model(*args)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    refs = [r.detach().numpy() for r in refs]

    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)

    # Static shapes only.
    for vi in list(m.graph.input) + list(m.graph.output):
        dims = vi.type.tensor_type.shape.dim
        assert all(d.HasField("dim_value") for d in dims), (name, vi.name, dims)

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    outs = sess.run(output_names, dict(zip(input_names, inputs)))

    errs = []
    for oname, o, r in zip(output_names, outs, refs):
        assert o.shape == r.shape, (name, oname, o.shape, r.shape)
        e = rel_err(o, r)
        errs.append((oname, e))
        assert e <= REL_TOL, f"{name}.{oname}: rel err {e:.3e} > {REL_TOL}"

    for iname, a in zip(input_names, inputs):
        np.save(os.path.join(HERE, f"{name}.in.{iname}.npy"), a)
    for oname, r in zip(output_names, refs):
        np.save(os.path.join(HERE, f"{name}.out.{oname}.npy"), r.astype(np.float32))

    size = os.path.getsize(path)
    assert size < MAX_BYTES, f"{name}.onnx is {size} bytes (> 2 MB)"
    ops = sorted({n.op_type for n in m.graph.node})
    print(
        f"{name:14s} opset {opset}  {size:9d} bytes  nodes {len(m.graph.node):4d}  "
        + "  ".join(f"relerr[{o}]={e:.3e}" for o, e in errs)
    )
    return ops


def rand_f32(seed, shape):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def main():
    print(f"torch {torch.__version__}  onnx {onnx.__version__}  onnxruntime {ort.__version__}")
    torch.set_num_threads(1)
    results = {}

    torch.manual_seed(0)
    results["mlp"] = export(
        "mlp", MLP(), [rand_f32(100, (4, 784))], ["x"], ["logits"], 17
    )

    tokens = np.random.default_rng(101).integers(0, 128, size=(2, 16), dtype=np.int64)
    for opset in (14, 17):
        torch.manual_seed(0)
        results[f"gpt_opset{opset}"] = export(
            f"gpt_opset{opset}", GPT(), [tokens], ["tokens"], ["logits"], opset
        )

    torch.manual_seed(0)
    results["resnet18"] = export(
        "resnet18",
        ResNet18(),
        [rand_f32(102, (1, 3, 64, 64))],
        ["x"],
        ["logits"],
        17,
        do_constant_folding=False,
        training=torch.onnx.TrainingMode.EVAL,
    )
    assert "BatchNormalization" in results["resnet18"], "BatchNorm was folded away"

    torch.manual_seed(0)
    results["lstm"] = export(
        "lstm", RNNHead(nn.LSTM), [rand_f32(103, (2, 8, 16))], ["x"], ["logits"], 14
    )
    torch.manual_seed(0)
    results["gru"] = export(
        "gru", RNNHead(nn.GRU), [rand_f32(104, (2, 8, 16))], ["x"], ["logits"], 14
    )

    torch.manual_seed(0)
    results["moe_top2"] = export(
        "moe_top2", MoETop2(), [rand_f32(105, (8, 32))], ["x"], ["y"], 17
    )

    lines = [f"{name}: {' '.join(ops)}" for name, ops in results.items()]
    with open(os.path.join(HERE, "OPS.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print()
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
