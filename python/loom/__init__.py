"""Loom from Python: compile ONNX models with loomc, run and train bundles.

>>> import loom
>>> bundle = loom.compile("mlp.onnx", train=True, loss="cross-entropy:labels",
...                       runtime_hyperparams=True)
>>> with loom.Session(bundle, entry="train_step") as s:
...     s.set_hyperparameter("lr", 3e-3)
...     loss = s.train_step({"x": x, "labels": y})
>>> result = loom.train(bundle, {"x": x, "labels": y}, steps=100,
...                     val_split=0.1, eval_every=10, callback=print)

The runtime is libloomrt (found through ``LOOM_HOME``, ``LOOM_LIBRARY`` or
the ``loomc`` on PATH); arrays are NumPy's.
"""

from .compiler import compile, loomc_path
from .session import LoomError, Session, Tensor
from .training import StepInfo, TrainResult, batches, train

__all__ = [
    "LoomError",
    "Session",
    "StepInfo",
    "Tensor",
    "TrainResult",
    "batches",
    "compile",
    "loomc_path",
    "train",
]
__version__ = "0.1.0"
