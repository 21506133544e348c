#!/usr/bin/env python3
"""Generate the mixture-of-experts fixtures of test/e2e/moe.test.

Usage:  python3 test/e2e/moe/generate.py            (every fixture)
        python3 test/e2e/moe/generate.py --dense    (only the dense exports)

The models are written with onnx.helper around ONNX Runtime's contrib op
com.microsoft.MoE (router Gemm -> MoE -> residual Add -> classifier Gemm),
with the initial parameters of a PyTorch module that implements each routing
algorithm on its own (loops over experts and tokens, not Loom's one-hot
formulation):

  moe.onnx, moe.in.x.npy, moe.in.labels.npy   k = 2 of 4 experts, relu
  moe.ort.logits.npy            ONNX Runtime's CPU kernel on the batch
  moe.<routing>.losses.npy      PyTorch's loss (cross-entropy plus the
  moe.<routing>.<param>.npy     auxiliary losses) over 10 AdamW steps and
                                its parameters after them, for routing
                                top_k (the model's own), token_choice
                                (capacity factor 1, load-balancing loss
                                0.01, z-loss 0.001) and expert_choice
                                (capacity factor 1), and the last two with
                                2 and 4 routing groups (_g2, _g4: each
                                group of 16 or 8 tokens routed on its own)
  bad_k.onnx                    moe.onnx with k = 5 (an import error)
  bad_activation.onnx           moe.onnx with activation_type swiglu (another)
  gated.onnx, gated.in.x.npy    a Mixtral-style block (silu gate, fc3,
  gated.out.logits.npy          renormalized top-2, 3-D input); ONNX
                                Runtime has no CPU kernel with fc3, so the
                                reference is PyTorch's forward

Dense exports (torch.onnx.export of ordinary PyTorch modules, one nn.Linear
per expert), which loom-raise-moe turns into loom.moe:

  dense_masks.onnx              a loop over experts, each weighted by
                                (top-k values * (indices == e)).sum(-1)
  dense_mixtral.onnx            Mixtral's sparse block written statically:
                                RMS norm, bias-free router, softmax, top-2,
                                renormalized, one_hot(...).permute(2, 1, 0)
                                masks, SwiGLU experts (w1, w3, w2), residual,
                                on a [batch, sequence, hidden] input (the
                                logits are [batch, classes, sequence])
  dense_other.onnx              like dense_masks but each expert weighted
                                by the square of its top-k value: not a
                                mixture of experts loom.moe expresses
  dense.in.{x,labels}.npy, dense_mixtral.in.{x,labels}.npy
  dense_<model>.out.logits.npy  PyTorch's forward on the batch
  dense_<model>.adamw.*         10 AdamW steps (lr 3e-3, weight decay 0.01):
                                losses and final parameters
"""

import math
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
N, D, H, E, K, CLASSES = 32, 16, 32, 4, 2, 10
STEPS = 10


class MoE(nn.Module):
    def __init__(self, routing, capacity_factor=0.0, aux=0.0, z=0.0, normalize=False,
                 gated=False, act="relu", groups=1):
        super().__init__()
        self.routing, self.cf, self.aux, self.z = routing, capacity_factor, aux, z
        self.groups = groups
        self.normalize, self.act = normalize, act
        self.router = nn.Linear(D, E)
        g = torch.Generator().manual_seed(1)
        self.w1 = nn.Parameter(torch.randn(E, H, D, generator=g) / math.sqrt(D))
        self.b1 = nn.Parameter(torch.randn(E, H, generator=g) * 0.1)
        self.w2 = nn.Parameter(torch.randn(E, D, H, generator=g) / math.sqrt(H))
        self.b2 = nn.Parameter(torch.randn(E, D, generator=g) * 0.1)
        self.w3 = nn.Parameter(torch.randn(E, H, D, generator=g) / math.sqrt(D)) if gated else None
        self.head = nn.Linear(D, CLASSES)
        self.extra = torch.zeros(())

    def expert(self, e, rows):  # rows [r, D]
        a = rows @ self.w1[e].T + self.b1[e]
        a = F.relu(a) if self.act == "relu" else F.silu(a)
        if self.w3 is not None:
            a = a * (rows @ self.w3[e].T)
        return a @ self.w2[e].T + self.b2[e]

    def forward(self, x):
        shape = x.shape
        x = x.reshape(-1, D)
        n = x.shape[0]
        logits = self.router(x)
        probs = F.softmax(logits, dim=-1)
        y = torch.zeros_like(x)
        extra = torch.zeros(())
        # The capacity routings route each group of s consecutive tokens on
        # its own (one group: the whole batch).
        s = n // self.groups
        if self.routing == "expert_choice":
            cap = min(s, math.ceil(self.cf * s / E))
            for g0 in range(0, n, s):
                gates, tokens = torch.topk(probs[g0:g0 + s].T, cap, dim=1)  # [E, cap]
                tokens = tokens + g0
                for e in range(E):
                    y = y.index_add(0, tokens[e], gates[e, :, None] * self.expert(e, x[tokens[e]]))
        else:
            vals, idx = torch.topk(probs, K, dim=-1)
            if self.normalize:
                vals = vals / vals.sum(-1, keepdim=True)
            cap = s if self.routing == "top_k" else min(s, math.ceil(self.cf * K * s / E))
            # Assignments in priority order: every token's first choice, then
            # every token's second; an expert takes them until it is full.
            taken = [[] for _ in range(E)]  # (token, rank) per expert
            for g0 in range(0, n, s):
                count = [0] * E
                for j in range(K):
                    for t in range(g0, g0 + s):
                        e = int(idx[t, j])
                        if count[e] < cap:
                            count[e] += 1
                            taken[e].append((t, j))
            for e in range(E):
                if not taken[e]:
                    continue
                ts = torch.tensor([t for t, _ in taken[e]])
                js = torch.tensor([j for _, j in taken[e]])
                y = y.index_add(0, ts, vals[ts, js][:, None] * self.expert(e, x[ts]))
            if self.aux:
                share = torch.stack([(idx == e).sum() for e in range(E)]).float() / (n * K)
                extra = extra + self.aux * E * (share * probs.mean(0)).sum()
        if self.z:
            extra = extra + self.z * (torch.logsumexp(logits, -1) ** 2).mean()
        self.extra = extra
        return self.head(x + y).reshape(*shape[:-1], CLASSES)


def adamw_trajectory(m, loss_fn, prefix):
    """10 AdamW steps (lr 3e-3, weight decay 0.01) of `m` on `loss_fn(m)`;
    saves the losses and the final parameters as `prefix`.*.npy."""
    opt = torch.optim.AdamW(m.parameters(), lr=3e-3, weight_decay=0.01)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = loss_fn(m)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    np.save(os.path.join(HERE, f"{prefix}.losses.npy"), np.array(losses))
    for pname, p in m.named_parameters():
        np.save(os.path.join(HERE, f"{prefix}.{pname}.npy"), p.detach().numpy())
    print(f"{prefix}: loss {losses[0]:.6f} -> {losses[-1]:.6f}")


def onnx_model(m, path, x_shape, k_normalize):
    w = {n: p.detach().numpy() for n, p in m.named_parameters()}
    inits = [numpy_helper.from_array(v, n) for n, v in w.items()]
    moe_inputs = ["x2", "router_logits", "w1", "b1", "w2", "b2"] + (["w3"] if m.w3 is not None else [])
    nodes = []
    x_in = "x"
    if len(x_shape) == 3:
        inits.append(numpy_helper.from_array(np.array([-1, D], np.int64), "flat"))
        nodes.append(helper.make_node("Reshape", ["x", "flat"], ["xf"], name="flatten"))
        x_in = "xf"
    nodes += [
        helper.make_node("Gemm", [x_in, "router.weight", "router.bias"], ["router_logits"],
                         name="router", transB=1),
        helper.make_node("MoE", ["x"] + moe_inputs[1:], ["moe_out"], name="moe",
                         domain="com.microsoft", k=K, activation_type=m.act,
                         normalize_routing_weights=int(k_normalize)),
        helper.make_node("Add", ["x", "moe_out"], ["residual"], name="residual"),
    ]
    if len(x_shape) == 3:
        nodes.append(helper.make_node("Gemm", ["resf", "head.weight", "head.bias"], ["lf"],
                                      name="head", transB=1))
        inits.append(numpy_helper.from_array(np.array(list(x_shape[:2]) + [CLASSES], np.int64),
                                             "unflat"))
        nodes.insert(-1, helper.make_node("Reshape", ["residual", "flat"], ["resf"], name="rflat"))
        nodes.append(helper.make_node("Reshape", ["lf", "unflat"], ["logits"], name="unflatten"))
    else:
        nodes.append(helper.make_node("Gemm", ["residual", "head.weight", "head.bias"], ["logits"],
                                      name="head", transB=1))
    graph = helper.make_graph(
        nodes, "moe", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       list(x_shape[:-1]) + [CLASSES])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)],
                              ir_version=8)  # opset 17's, which Debian's ONNX reads
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return model


def main():
    torch.set_num_threads(1)
    x = torch.from_numpy(np.random.default_rng(3).standard_normal((N, D)).astype(np.float32))
    labels = torch.from_numpy(np.random.default_rng(4).integers(0, CLASSES, N).astype(np.int64))
    np.save(os.path.join(HERE, "moe.in.x.npy"), x.numpy())
    np.save(os.path.join(HERE, "moe.in.labels.npy"), labels.numpy())

    def make(routing, **kw):
        torch.manual_seed(0)
        return MoE(routing, **kw)

    model = onnx_model(make("top_k"), os.path.join(HERE, "moe.onnx"), (N, D), False)
    import onnxruntime as ort
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ort_logits = session.run(None, {"x": x.numpy()})[0]
    with torch.no_grad():
        torch_logits = make("top_k")(x).numpy()
    assert np.abs(ort_logits - torch_logits).max() < 1e-5, np.abs(ort_logits - torch_logits).max()
    np.save(os.path.join(HERE, "moe.ort.logits.npy"), ort_logits)
    # An error fixture: k larger than the number of experts.
    for node in model.graph.node:
        for a in node.attribute:
            if node.op_type == "MoE" and a.name == "k":
                a.i = E + 1
    onnx.save(model, os.path.join(HERE, "bad_k.onnx"))
    # and an activation Loom does not import (ONNX Runtime's fused swiglu).
    for node in model.graph.node:
        for a in node.attribute:
            if node.op_type == "MoE" and a.name == "k":
                a.i = K
            if node.op_type == "MoE" and a.name == "activation_type":
                a.s = b"swiglu"
    onnx.save(model, os.path.join(HERE, "bad_activation.onnx"))

    configs = {
        "top_k": dict(),
        "token_choice": dict(capacity_factor=1.0, aux=0.01, z=0.001),
        "expert_choice": dict(capacity_factor=1.0),
        # Routing groups: each half (quarter) of the batch routed on its own.
        "token_choice_g2": dict(capacity_factor=1.0, aux=0.01, z=0.001, groups=2),
        "expert_choice_g2": dict(capacity_factor=1.0, groups=2),
        "token_choice_g4": dict(capacity_factor=1.0, aux=0.01, z=0.001, groups=4),
        "expert_choice_g4": dict(capacity_factor=1.0, groups=4),
    }
    for name, kw in configs.items():
        routing = name.split("_g")[0]
        adamw_trajectory(make(routing, **kw),
                         lambda m: F.cross_entropy(m(x), labels) + m.extra, f"moe.{name}")

    # Mixtral-style gated experts on a [batch, sequence, hidden] input.
    def make_gated():
        torch.manual_seed(0)
        return MoE("top_k", normalize=True, gated=True, act="silu")

    xg = torch.from_numpy(np.random.default_rng(5).standard_normal((4, 8, D)).astype(np.float32))
    onnx_model(make_gated(), os.path.join(HERE, "gated.onnx"), (4, 8, D), True)
    np.save(os.path.join(HERE, "gated.in.x.npy"), xg.numpy())
    with torch.no_grad():
        np.save(os.path.join(HERE, "gated.out.logits.npy"), make_gated()(xg).numpy())
    print("gated: written")


class DenseExpert(nn.Module):
    def __init__(self, gated):
        super().__init__()
        self.gated = gated
        self.w1 = nn.Linear(D, H, bias=not gated)
        self.w2 = nn.Linear(H, D, bias=not gated)
        self.w3 = nn.Linear(D, H, bias=False) if gated else None

    def forward(self, x):
        if self.gated:
            return self.w2(F.silu(self.w1(x)) * self.w3(x))
        return self.w2(F.relu(self.w1(x)))


class MaskMoE(nn.Module):
    """Every expert on every token, weighted by its top-k value where it was
    chosen: the loop-with-masks form of a top-2 layer (not renormalized)."""

    def __init__(self, square=False):
        super().__init__()
        self.square = square
        self.router = nn.Linear(D, E)
        self.experts = nn.ModuleList([DenseExpert(False) for _ in range(E)])
        self.head = nn.Linear(D, CLASSES)

    def forward(self, x):  # [N, D]
        probs = F.softmax(self.router(x), dim=-1)
        vals, idx = torch.topk(probs, K, dim=-1)
        if self.square:
            vals = vals * vals
        y = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            w = (vals * (idx == e)).sum(dim=-1, keepdim=True)
            y = y + w * expert(x)
        return self.head(x + y)


class MixtralBlock(nn.Module):
    """Mixtral's sparse MoE block (RMS norm, router without bias, softmax,
    top-2 renormalized, SwiGLU experts, residual), with the experts' weights
    computed from one_hot masks instead of the dynamic-shaped index_add."""

    def __init__(self):
        super().__init__()
        self.norm = nn.Parameter(torch.ones(D) + 0.1 * torch.randn(D))
        self.gate = nn.Linear(D, E, bias=False)
        self.experts = nn.ModuleList([DenseExpert(True) for _ in range(E)])
        self.head = nn.Linear(D, CLASSES)

    def forward(self, x):  # [B, S, D]
        b, s, d = x.shape
        h = x.view(-1, d)
        hn = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * self.norm
        routing = F.softmax(self.gate(hn), dim=1, dtype=torch.float)
        routing, selected = torch.topk(routing, K, dim=-1)
        routing = routing / routing.sum(dim=-1, keepdim=True)
        mask = F.one_hot(selected, num_classes=E).permute(2, 1, 0)  # [E, K, N]
        out = torch.zeros_like(hn)
        for e, expert in enumerate(self.experts):
            w = (routing * mask[e].T).sum(dim=-1, keepdim=True)
            out = out + w * expert(hn)
        # [batch, classes, sequence], as cross-entropy takes it.
        return self.head(h + out).view(b, s, CLASSES).transpose(1, 2)


def dense_fixtures():
    x = torch.from_numpy(np.random.default_rng(6).standard_normal((N, D)).astype(np.float32))
    xm = torch.from_numpy(np.random.default_rng(7).standard_normal((4, 8, D)).astype(np.float32))
    labels = torch.from_numpy(np.random.default_rng(8).integers(0, CLASSES, N).astype(np.int64))
    np.save(os.path.join(HERE, "dense.in.x.npy"), x.numpy())
    np.save(os.path.join(HERE, "dense.in.labels.npy"), labels.numpy())
    np.save(os.path.join(HERE, "dense_mixtral.in.x.npy"), xm.numpy())
    np.save(os.path.join(HERE, "dense_mixtral.in.labels.npy"), labels.numpy().reshape(4, 8))
    makers = {
        "masks": (lambda: MaskMoE(), x, labels),
        "mixtral": (lambda: MixtralBlock(), xm, labels.reshape(4, 8)),
        "other": (lambda: MaskMoE(square=True), x, labels),
    }
    for name, (ctor, inp, target) in makers.items():
        def make():
            torch.manual_seed(0)
            return ctor()
        path = os.path.join(HERE, f"dense_{name}.onnx")
        kw = dict(input_names=["x"], output_names=["logits"], opset_version=17,
                  do_constant_folding=False)
        if "dynamo" in torch.onnx.export.__code__.co_varnames:
            kw["dynamo"] = False
        with torch.no_grad():
            torch.onnx.export(make(), (inp,), path, **kw)
        onnx.checker.check_model(onnx.load(path), full_check=True)
        with torch.no_grad():
            np.save(os.path.join(HERE, f"dense_{name}.out.logits.npy"), make()(inp).numpy())
        adamw_trajectory(make(), lambda m: F.cross_entropy(m(inp), target),
                         f"dense_{name}.adamw")


if __name__ == "__main__":
    import sys
    if sys.argv[1:] != ["--dense"]:
        main()
    dense_fixtures()
