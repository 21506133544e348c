"""Fixtures of the loom package's tests: Loom's test models and data, and
bundles compiled once per run. Loom is found through LOOM_HOME (ctest sets it
to the build directory)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

import loom  # noqa: E402

E2E = ROOT / "test" / "e2e"
MODELS = ROOT / "test" / "models"


@pytest.fixture(scope="session")
def data_a():
    """Task A of the fine-tuning test: 16 samples of the MLP's input."""
    return {
        "x": np.load(E2E / "finetune" / "a.x.npy"),
        "labels": np.load(E2E / "finetune" / "a.labels.npy"),
    }


@pytest.fixture(scope="session")
def mlp_onnx() -> Path:
    return E2E / "training" / "mlp.onnx"


@pytest.fixture(scope="session")
def runtime_bundle(tmp_path_factory, mlp_onnx) -> str:
    """The MLP's AdamW training step with run-time hyperparameters."""
    out = tmp_path_factory.mktemp("bundles") / "adamw-runtime.loom"
    return loom.compile(mlp_onnx, out, train=True, loss="cross-entropy:labels",
                        optimizer="adamw", runtime_hyperparams=True)


@pytest.fixture(scope="session")
def fixed_bundle(tmp_path_factory, mlp_onnx) -> str:
    """The same step with lr 3e-3 and weight decay 0.01 compiled in (the
    settings of test/e2e/finetune's PyTorch reference)."""
    out = tmp_path_factory.mktemp("bundles") / "adamw-fixed.loom"
    return loom.compile(mlp_onnx, out, train=True, loss="cross-entropy:labels",
                        optimizer="adamw", lr=3e-3, weight_decay=0.01)


def loom_bin(tool: str) -> str:
    home = os.environ.get("LOOM_HOME")
    return str(Path(home) / "bin" / tool) if home else tool
