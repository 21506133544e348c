#!/usr/bin/env python3
"""Generate the training-trajectory fixtures of Loom's tests with PyTorch.

Usage:  python3 test/e2e/training/generate.py [MODEL ...]

With model names (mlp, dropout_mlp, cnn, cnn_pool, gcnn, lstm, gru, gpt,
gpt_heads4, gpt_tied, gpt_unfused, moe_gather, op_zoo), only those fixtures are written.
gpt_heads4 is the decoder with 4 attention heads, gpt_tied the same with
its output layer tied to the token embedding, and gpt_unfused a decoder with
separate query/key/value projections and no biases (opset 14), exported only (the
tensor-parallel tests compare them with one Loom process).

For each model below: export the forward function (or, for the GPT-style
decoder, the forward function *with its loss*) to ONNX with its initial
parameters, then train the PyTorch model itself for 10 steps on one fixed
batch with each optimizer configuration and save

  <model>.onnx                     the model Loom compiles (loomc --train)
  <model>.in.<input>.npy           the batch
  <model>.<config>.losses.npy      PyTorch's loss at every step (float64)
  <model>.<config>.<param>.npy     PyTorch's parameters after the 10 steps

Constant folding is off in the export so that every ONNX initializer is a
PyTorch parameter under its own name. The script is deterministic
(``torch.manual_seed``, fixed numpy seeds); test/e2e/training.test holds the
loomc flags that match each configuration.
"""

import inspect
import math
import os
import sys
import warnings

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F

warnings.filterwarnings("ignore", message=".*legacy TorchScript-based ONNX export.*")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "models"))
from generate import GPT, RNNHead  # noqa: E402  (models of the inference fixtures)

STEPS = 10
_EXPORT_HAS_DYNAMO = "dynamo" in inspect.signature(torch.onnx.export).parameters


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 64)
        self.fc3 = nn.Linear(64, 10)

    def forward(self, x):
        x = torch.tanh(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def loom_dropout_keep(shape, ratio, seed, offset):
    """Loom's dropout mask (the formula of loom.dropout's description),
    written independently of Loom with numpy's wrapping uint64 arithmetic."""
    golden = np.uint64(0x9E3779B97F4A7C15)

    def mix(z):
        z = np.asarray(z, dtype=np.uint64)
        with np.errstate(over="ignore"):
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))

    with np.errstate(over="ignore"):
        key = mix(np.uint64(seed) + mix(np.uint64(offset) + golden))
        index = np.arange(1, int(np.prod(shape)) + 1, dtype=np.uint64)
        draws = mix(key + index * golden)
    threshold = math.ceil(ratio * 2**24)
    return ((draws >> np.uint64(40)) >= np.uint64(threshold)).reshape(shape)


class DropoutMLP(nn.Module):
    """The MLP with dropout after each hidden layer. Exported, it is ONNX
    Dropout in training mode; trained here, it applies the masks Loom draws
    for dropout k (in graph order) at step s: seed k * 2^32, offset s."""

    RATIOS = (0.3, 0.2)

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 64)
        self.fc3 = nn.Linear(64, 10)
        self.step = None  # set while reproducing Loom's masks

    def drop(self, x, k):
        ratio = self.RATIOS[k]
        if self.step is None:
            return F.dropout(x, ratio, self.training)
        keep = loom_dropout_keep(tuple(x.shape), ratio, k << 32, self.step)
        scale = torch.from_numpy(keep.astype(np.float32)) / (1.0 - ratio)
        return x * scale

    def forward(self, x):
        x = self.drop(torch.tanh(self.fc1(x)), 0)
        x = self.drop(F.relu(self.fc2(x)), 1)
        return self.fc3(x)


class CNN(nn.Module):
    """Convolutions with batch norm in training mode, global average pooling."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        return self.fc(x.mean(dim=(2, 3)))


class GroupedCNN(nn.Module):
    """Depthwise, grouped and dilated, and 1x1 convolutions."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.depthwise = nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8)
        self.grouped = nn.Conv2d(8, 16, 3, padding=2, dilation=2, groups=2, bias=False)
        self.pointwise = nn.Conv2d(16, 16, 1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.depthwise(x))
        x = F.relu(self.grouped(x))
        x = torch.tanh(self.pointwise(x))
        return self.fc(x.mean(dim=(2, 3)))


class PoolCNN(nn.Module):
    """Convolution, batch norm in training mode, ReLU, max pooling, linear:
    the max pool's gradient compares its input with its result."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.fc(x.flatten(1))


class Expert(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.fc1 = nn.Linear(d, h)
        self.fc2 = nn.Linear(h, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class GatherMoE(nn.Module):
    """A top-2 mixture of experts written densely as users export it: the
    router's softmax, TopK, every expert on every token, GatherElements to
    pick the two chosen outputs, a weighted sum, then a classifier."""

    def __init__(self, d=16, n_experts=4, k=2, classes=10):
        super().__init__()
        self.k = k
        self.router = nn.Linear(d, n_experts)
        self.experts = nn.ModuleList([Expert(d, 32) for _ in range(n_experts)])
        self.head = nn.Linear(d, classes)

    def forward(self, x):  # [N, d]
        probs = F.softmax(self.router(x), dim=-1)
        top_vals, top_idx = torch.topk(probs, self.k, dim=-1)  # [N, k]
        gates = top_vals / top_vals.sum(dim=-1, keepdim=True)
        outs = torch.stack([e(x) for e in self.experts], dim=1)  # [N, E, d]
        idx = top_idx.unsqueeze(-1).expand(-1, -1, x.shape[-1])  # [N, k, d]
        chosen = torch.gather(outs, 1, idx)  # [N, k, d]
        y = (chosen * gates.unsqueeze(-1)).sum(dim=1)
        return self.head(x + y)


class OpZoo(nn.Module):
    """Ops whose gradients no other fixture trains: Elu, Softsign,
    HardSigmoid, CumSum, Trilu, Tile, ReduceProd and ScatterElements
    (overwriting and adding)."""

    def __init__(self, n=16):
        super().__init__()
        self.fc1 = nn.Linear(12, 24)
        self.fc2 = nn.Linear(48, 24)
        self.head = nn.Linear(24, 10)
        g = torch.Generator().manual_seed(3)
        # Six distinct columns per row to write into (scatter), and six
        # with repeats to add into (scatter_add).
        self.register_buffer("cols", torch.stack(
            [torch.randperm(24, generator=g)[:6] for _ in range(n)]))
        self.register_buffer("add_cols", torch.randint(0, 24, (n, 6), generator=g))

    def forward(self, x):
        h = self.fc1(x)
        a = F.elu(h) + F.softsign(h) * F.hardsigmoid(h)
        a = torch.cumsum(a, dim=1) * (1.0 / 24)
        a = torch.tril(a.view(-1, 4, 6)).reshape(-1, 24)
        g = self.fc2(a.repeat(1, 2))
        p = torch.prod(torch.sigmoid(g).view(-1, 6, 4) + 0.5, dim=2)  # [N, 6]
        written = torch.zeros_like(g).scatter(1, self.cols, p)
        added = g.scatter_add(1, self.add_cols, p)
        return self.head(written + added)


class UnfusedBlock(nn.Module):
    """A decoder block with separate query, key and value projections and no
    biases anywhere (as LLaMA-style models are written)."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.ln2 = nn.LayerNorm(d)
        self.up = nn.Linear(d, 4 * d, bias=False)
        self.down = nn.Linear(4 * d, d, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        h = self.ln1(x)

        def heads(t):
            return t.view(B, T, self.heads, C // self.heads).transpose(1, 2)

        q, k, v = heads(self.q(h)), heads(self.k(h)), heads(self.v(h))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // self.heads))
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + self.o(y)
        return x + self.down(F.gelu(self.up(self.ln2(x))))


class UnfusedGPT(nn.Module):
    """The decoder with unfused attention and no biases, loss inside."""

    def __init__(self, vocab=64, seq_len=16, d=32, heads=4, layers=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq_len, d)
        self.blocks = nn.ModuleList([UnfusedBlock(d, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        # Layer norms off their defaults (the exporter would merge equal
        # initializers into one).
        g = torch.Generator().manual_seed(2)
        for m in self.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.data.copy_(1.0 + 0.1 * torch.randn(d, generator=g))
                m.bias.data.copy_(0.1 * torch.randn(d, generator=g))

    def forward(self, tokens, targets):
        T = tokens.shape[1]
        x = self.tok(tokens) + self.pos(torch.arange(T))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


class GPTWithLoss(nn.Module):
    """The decoder with its next-token loss inside the exported graph."""

    def __init__(self, n_heads=2, tied=False, n_layers=2):
        super().__init__()
        self.gpt = GPT(vocab=64, seq_len=16, d_model=32, n_heads=n_heads, n_layers=n_layers)
        if tied:  # one table for the token embedding and the output layer
            self.gpt.lm_head.weight = self.gpt.tok_emb.weight

    def forward(self, tokens, targets):
        logits = self.gpt(tokens)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def warmup_cosine(warmup, total, base, final):
    """Loom's schedule (loom-build-train-step) as a LambdaLR factor of step s."""

    def factor(s):
        if s < warmup:
            return min(1.0, (s + 1) / warmup)
        progress = min(max((s - warmup) / (total - warmup), 0.0), 1.0)
        return (final + (base - final) * 0.5 * (1 + math.cos(math.pi * progress))) / base

    return factor


# name -> (optimizer factory, schedule factory or None, clip norm or None)
CONFIGS = {
    "sgd": (lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-4), None, None),
    "nesterov": (
        lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True),
        None,
        None,
    ),
    "adamw": (lambda p: torch.optim.AdamW(p, lr=3e-3, weight_decay=0.01), None, None),
    # eps 1e-6: the GRU has a weight whose first gradient (5.9e-9) is below
    # the default eps, where Adam's step is set by that gradient's rounding.
    "adamw_eps6": (lambda p: torch.optim.AdamW(p, lr=3e-3, weight_decay=0.01, eps=1e-6), None, None),
    # PyTorch's defaults (weight decay 0.01, betas 0.9/0.999, eps 1e-8).
    "adamw_default": (lambda p: torch.optim.AdamW(p, lr=1e-3), None, None),
    "adamw_cosine_clip": (
        lambda p: torch.optim.AdamW(p, lr=3e-3, weight_decay=0.01),
        lambda o: torch.optim.lr_scheduler.LambdaLR(o, warmup_cosine(3, 10, 3e-3, 3e-4)),
        0.5,
    ),
}


def export(model, name, args, input_names, output_names, opset, train=False):
    path = os.path.join(HERE, name + ".onnx")
    kw = dict(
        input_names=input_names,
        output_names=output_names,
        opset_version=opset,
        do_constant_folding=False,
    )
    if train:  # batch norm with batch statistics, updating running ones
        kw["training"] = torch.onnx.TrainingMode.TRAINING
        # Tracing runs the model, which moves its running statistics; the
        # initializers must hold the values before that.
        initial = {k: v.clone() for k, v in model.named_buffers()}
    if _EXPORT_HAS_DYNAMO:
        kw["dynamo"] = False
    with torch.no_grad():
        torch.onnx.export(model, args, path, **kw)
    m = onnx.load(path)
    if train:
        for init in m.graph.initializer:
            if init.name in initial and initial[init.name].is_floating_point():
                init.CopyFrom(onnx.numpy_helper.from_array(
                    initial[init.name].numpy(), init.name))
        onnx.save(m, path)
    onnx.checker.check_model(m, full_check=True)
    inits = {i.name for i in m.graph.initializer}
    params = {n for n, p in model.named_parameters()}
    missing = params - inits
    assert not missing, f"{name}: parameters not initializers: {missing}"
    for iname, a in zip(input_names, args):
        np.save(os.path.join(HERE, f"{name}.in.{iname}.npy"), a.numpy())
    print(f"{name}: {os.path.getsize(path)} bytes, {len(m.graph.node)} nodes")


def trajectories(make_model, name, loss_fn, configs):
    for config in configs:
        opt_factory, sched_factory, clip = CONFIGS[config]
        model = make_model()
        opt = opt_factory(model.parameters())
        sched = sched_factory(opt) if sched_factory else None
        losses = []
        for step in range(STEPS):
            if hasattr(model, "step"):
                model.step = step
            opt.zero_grad()
            loss = loss_fn(model)
            loss.backward()
            if clip:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            opt.step()
            if sched:
                sched.step()
            losses.append(loss.item())
        np.save(os.path.join(HERE, f"{name}.{config}.losses.npy"), np.array(losses))
        for pname, p in model.named_parameters():
            np.save(os.path.join(HERE, f"{name}.{config}.{pname}.npy"), p.detach().numpy())
        for bname, buf in model.named_buffers():
            if bname.endswith("running_mean") or bname.endswith("running_var"):
                np.save(os.path.join(HERE, f"{name}.{config}.{bname}.npy"), buf.numpy())
        print(f"  {config}: loss {losses[0]:.6f} -> {losses[-1]:.6f}")


def main():
    torch.set_num_threads(1)
    only = set(sys.argv[1:])
    known = {"mlp", "dropout_mlp", "cnn", "cnn_pool", "gcnn", "lstm", "gru", "gpt",
             "gpt_heads4", "gpt_tied", "gpt4l", "gpt_unfused", "moe_gather", "op_zoo"}
    if only - known:
        sys.exit(f"unknown models {sorted(only - known)}; known: {sorted(known)}")

    def wanted(name):
        return not only or name in only

    # MLP, cross-entropy attached by loomc.
    def make_mlp():
        torch.manual_seed(0)
        return MLP()

    x = torch.from_numpy(np.random.default_rng(1).standard_normal((16, 32)).astype(np.float32))
    y = torch.from_numpy(np.random.default_rng(2).integers(0, 10, 16).astype(np.int64))
    if wanted("mlp"):
        export(make_mlp(), "mlp", (x,), ["x"], ["logits"], 17)
        np.save(os.path.join(HERE, "mlp.in.labels.npy"), y.numpy())
        trajectories(make_mlp, "mlp", lambda m: F.cross_entropy(m(x), y), CONFIGS.keys())

    # The MLP with dropout in training mode, trained with Loom's masks.
    def make_dropout_mlp():
        torch.manual_seed(0)
        return DropoutMLP().train()

    if wanted("dropout_mlp"):
        keep = loom_dropout_keep((1000, 1000), 0.3, 5, 7)
        assert abs(keep.mean() - 0.7) < 0.002, keep.mean()  # the stream is fair
        export(make_dropout_mlp(), "dropout_mlp", (x,), ["x"], ["logits"], 17, train=True)
        m = onnx.load(os.path.join(HERE, "dropout_mlp.onnx"))
        dropouts = [n for n in m.graph.node if n.op_type == "Dropout"]
        assert len(dropouts) == 2 and not any(a.name == "seed" for n in dropouts for a in n.attribute)
        np.save(os.path.join(HERE, "dropout_mlp.in.labels.npy"), y.numpy())
        trajectories(make_dropout_mlp, "dropout_mlp", lambda m: F.cross_entropy(m(x), y),
                     ["sgd", "adamw"])

    # CNN with batch norm in training mode, cross-entropy attached by loomc.
    def make_cnn():
        torch.manual_seed(0)
        return CNN().train()

    xc = torch.from_numpy(np.random.default_rng(4).standard_normal((8, 3, 8, 8)).astype(np.float32))
    yc = torch.from_numpy(np.random.default_rng(5).integers(0, 10, 8).astype(np.int64))
    if wanted("cnn"):
        export(make_cnn(), "cnn", (xc,), ["x"], ["logits"], 17, train=True)
        np.save(os.path.join(HERE, "cnn.in.labels.npy"), yc.numpy())
        trajectories(make_cnn, "cnn", lambda m: F.cross_entropy(m(xc), yc), ["sgd", "adamw"])

    # Batch norm, ReLU and max pooling, with PyTorch's default AdamW.
    def make_cnn_pool():
        torch.manual_seed(0)
        return PoolCNN().train()

    if wanted("cnn_pool"):
        export(make_cnn_pool(), "cnn_pool", (xc,), ["x"], ["logits"], 17, train=True)
        np.save(os.path.join(HERE, "cnn_pool.in.labels.npy"), yc.numpy())
        trajectories(make_cnn_pool, "cnn_pool", lambda m: F.cross_entropy(m(xc), yc),
                     ["sgd", "adamw_default"])

    # A dense top-2 mixture of experts (TopK, GatherElements).
    def make_moe():
        torch.manual_seed(0)
        return GatherMoE()

    xm = torch.from_numpy(np.random.default_rng(8).standard_normal((16, 16)).astype(np.float32))
    if wanted("moe_gather"):
        export(make_moe(), "moe_gather", (xm,), ["x"], ["logits"], 17)
        ops = {n.op_type for n in onnx.load(os.path.join(HERE, "moe_gather.onnx")).graph.node}
        assert {"TopK", "GatherElements"} <= ops, ops
        np.save(os.path.join(HERE, "moe_gather.in.labels.npy"), y.numpy())
        trajectories(make_moe, "moe_gather", lambda m: F.cross_entropy(m(xm), y),
                     ["sgd", "adamw"])

    # Ops no other fixture differentiates.
    def make_zoo():
        torch.manual_seed(0)
        return OpZoo()

    xz = torch.from_numpy(np.random.default_rng(9).standard_normal((16, 12)).astype(np.float32))
    if wanted("op_zoo"):
        export(make_zoo(), "op_zoo", (xz,), ["x"], ["logits"], 17)
        ops = {n.op_type for n in onnx.load(os.path.join(HERE, "op_zoo.onnx")).graph.node}
        wanted_ops = {"Elu", "HardSigmoid", "CumSum", "Trilu", "Tile", "ReduceProd",
                      "ScatterElements"}
        assert wanted_ops <= ops, wanted_ops - ops
        np.save(os.path.join(HERE, "op_zoo.in.labels.npy"), y.numpy())
        trajectories(make_zoo, "op_zoo", lambda m: F.cross_entropy(m(xz), y),
                     ["sgd", "adamw"])

    # Grouped, depthwise, dilated and pointwise convolutions.
    def make_gcnn():
        torch.manual_seed(0)
        return GroupedCNN()

    if wanted("gcnn"):
        export(make_gcnn(), "gcnn", (xc,), ["x"], ["logits"], 17)
        np.save(os.path.join(HERE, "gcnn.in.labels.npy"), yc.numpy())
        trajectories(make_gcnn, "gcnn", lambda m: F.cross_entropy(m(xc), yc), ["sgd", "adamw"])

    # LSTM and GRU classifiers (last hidden state, linear head): training
    # backpropagates through the 8 time steps.
    xr = torch.from_numpy(np.random.default_rng(6).standard_normal((4, 8, 16)).astype(np.float32))
    yr = torch.from_numpy(np.random.default_rng(7).integers(0, 10, 4).astype(np.int64))
    for name, cell in (("lstm", nn.LSTM), ("gru", nn.GRU)):
        if not wanted(name):
            continue

        def make_rnn(cell=cell):
            torch.manual_seed(0)
            return RNNHead(cell)

        export(make_rnn(), name, (xr,), ["x"], ["logits"], 14)
        np.save(os.path.join(HERE, f"{name}.in.labels.npy"), yr.numpy())
        trajectories(make_rnn, name, lambda m: F.cross_entropy(m(xr), yr),
                     ["sgd", "adamw" if name == "lstm" else "adamw_eps6"])

    # GPT-style decoder with its loss in the model, at opsets 14 and 17.
    def make_gpt():
        torch.manual_seed(0)
        return GPTWithLoss()

    rng = np.random.default_rng(3)
    tokens = torch.from_numpy(rng.integers(0, 64, (4, 16)).astype(np.int64))
    targets = torch.from_numpy(rng.integers(0, 64, (4, 16)).astype(np.int64))
    if wanted("gpt"):
        for opset in (14, 17):
            name = f"gpt_opset{opset}"
            export(make_gpt(), name, (tokens, targets), ["tokens", "targets"], ["loss"], opset)
        trajectories(make_gpt, "gpt", lambda m: m(tokens, targets), ["sgd", "adamw"])
    if wanted("gpt_heads4"):
        torch.manual_seed(0)
        export(GPTWithLoss(n_heads=4), "gpt_heads4", (tokens, targets),
               ["tokens", "targets"], ["loss"], 17)
    if wanted("gpt_unfused"):
        torch.manual_seed(0)
        export(UnfusedGPT(), "gpt_unfused", (tokens, targets),
               ["tokens", "targets"], ["loss"], 14)
    if wanted("gpt_tied"):
        torch.manual_seed(0)
        export(GPTWithLoss(n_heads=4, tied=True), "gpt_tied", (tokens, targets),
               ["tokens", "targets"], ["loss"], 17)
    if wanted("gpt4l"):
        # Four layers, a microbatch of 2 sequences, 16 sequences of data:
        # pipeline parallelism's equivalence tests (pipeline.test), whose
        # reference is Loom on one process with gradient accumulation.
        torch.manual_seed(0)
        rng4 = np.random.default_rng(7)
        data = rng4.integers(0, 64, (16, 17)).astype(np.int64)
        export(GPTWithLoss(n_heads=2, n_layers=4), "gpt4l",
               (torch.from_numpy(data[:2, :-1].copy()),
                torch.from_numpy(data[:2, 1:].copy())),
               ["tokens", "targets"], ["loss"], 17)
        np.save(os.path.join(HERE, "gpt4l.in.tokens.npy"), data[:, :-1])
        np.save(os.path.join(HERE, "gpt4l.in.targets.npy"), data[:, 1:])


if __name__ == "__main__":
    main()
