"""Inputs and float64 references of bf16-gemm.test: random factors, and
their products computed exactly (float64) from the factors rounded to bf16
(to nearest, ties to even), as the model's casts round them.

    bf16-gemm.py DIR   writes DIR/{a,b,bt,at,x,y}.npy and DIR/ref/*.npy
"""
import os
import sys

import numpy as np


def bf16(x):
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return rounded.astype(np.uint32).view(np.float32).astype(np.float64)


out = sys.argv[1]
os.makedirs(os.path.join(out, "ref"), exist_ok=True)
rng = np.random.default_rng(7)
inputs = {
    "a": rng.uniform(-1, 1, (160, 272)),
    "b": rng.uniform(-1, 1, (272, 144)),
    "x": rng.uniform(-1, 1, (4, 96, 80)),
    "y": rng.uniform(-1, 1, (4, 80, 112)),
}
inputs["bt"] = inputs["b"].T.copy()
inputs["at"] = inputs["a"].T.copy()
for name, value in inputs.items():
    np.save(os.path.join(out, name + ".npy"), value.astype(np.float32))
r = {name: bf16(value) for name, value in inputs.items()}
refs = {"ab": r["a"] @ r["b"], "abt": r["a"] @ r["bt"].T,
        "atb": r["at"].T @ r["b"], "xy": r["x"] @ r["y"]}
for name, value in refs.items():
    np.save(os.path.join(out, "ref", name + ".npy"), value.astype(np.float32))
