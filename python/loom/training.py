"""loom.train: a training loop over NumPy arrays with a per-step callback."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List, Mapping, Optional, Union

import numpy as np

from .session import LoomError, PathLike, Session


@dataclass
class StepInfo:
    """What :func:`train` reports to its callback after each step."""

    step: int  #: 1-based
    epoch: int  #: 0-based
    loss: float
    lr: float  #: the step's learning rate (NaN if the bundle reports none)
    samples_per_sec: float
    #: The validation loss when this step ended with an evaluation, else None.
    val_loss: Optional[float] = None


@dataclass
class TrainResult:
    steps: int = 0
    losses: List[float] = field(default_factory=list)
    #: (step, validation loss) of every evaluation.
    val_losses: List[tuple] = field(default_factory=list)
    stopped_early: bool = False

    @property
    def best_val_loss(self) -> float:
        return min((v for _, v in self.val_losses), default=math.nan)


def batches(
    data: Mapping[str, np.ndarray],
    batch_size: int,
    indices: np.ndarray,
    shuffle: bool,
    seed: int,
    epoch: int = 0,
) -> Iterator[Dict[str, np.ndarray]]:
    """The full batches of one epoch over ``indices`` (the last incomplete
    batch is dropped); shuffled by a generator seeded with (seed, epoch)."""
    order = indices
    if shuffle:
        order = np.random.default_rng([seed, epoch]).permutation(indices)
    for start in range(0, len(order) - batch_size + 1, batch_size):
        rows = order[start : start + batch_size]
        yield {name: array[rows] for name, array in data.items()}


def train(
    model: Union[Session, PathLike],
    data: Mapping[str, np.ndarray],
    *,
    steps: Optional[int] = None,
    epochs: Optional[int] = None,
    val_data: Optional[Mapping[str, np.ndarray]] = None,
    val_split: float = 0.0,
    eval_every: int = 0,
    shuffle: bool = True,
    seed: int = 0,
    hyperparameters: Optional[Mapping[str, float]] = None,
    callback: Optional[Callable[[StepInfo], Optional[bool]]] = None,
) -> TrainResult:
    """Trains ``model`` (a training :class:`Session` or a bundle's path)
    on ``data`` (input name -> array whose first dimension indexes samples).

    Runs ``steps`` steps, or ``epochs`` epochs, or one epoch. With
    ``val_data`` (or ``val_split``, a fraction of ``data`` held out),
    evaluates every ``eval_every`` steps and at the end. ``hyperparameters``
    are set first (a bundle compiled with ``--runtime-hyperparams``).
    ``callback`` gets a :class:`StepInfo` after every step; returning False
    stops the run (an exception it raises, such as Optuna's TrialPruned,
    ends it too and reaches the caller).
    """
    session = model if isinstance(model, Session) else Session(model, entry="train_step")
    owned = session is not model
    try:
        if hyperparameters:
            session.set_hyperparameters(hyperparameters)
        missing = [name for name in session.inputs if name not in data]
        if missing:
            raise LoomError(
                f"no data for input(s) {', '.join(missing)} of {session.bundle}",
                "invalid argument",
            )
        unknown = [name for name in data if name not in session.inputs]
        if unknown:
            raise LoomError(
                f"{session.bundle} has no input(s) {', '.join(unknown)} (its inputs: {', '.join(session.inputs)})",
                "invalid argument",
            )
        counts = {len(array) for array in data.values()}
        if len(counts) != 1:
            raise LoomError("the arrays of data hold different numbers of samples", "invalid argument")
        samples = counts.pop()
        batch_size = session.batch_size
        indices = np.arange(samples)
        if val_data is None and val_split > 0:
            held = int(samples * val_split)
            order = np.random.default_rng([seed, 1 << 30]).permutation(samples)
            val_data = {name: array[order[samples - held :]] for name, array in data.items()}
            indices = order[: samples - held]
        per_epoch = len(indices) // batch_size
        if per_epoch == 0:
            raise LoomError(
                f"{len(indices)} training samples make no batch of {batch_size}",
                "invalid argument",
            )
        total = steps if steps else (epochs or 1) * per_epoch
        if val_data is not None and len(next(iter(val_data.values()))) < batch_size:
            raise LoomError(f"the validation data hold less than one batch of {batch_size}", "invalid argument")

        def validate() -> float:
            assert val_data is not None
            n = len(next(iter(val_data.values())))
            return session.evaluate(batches(val_data, batch_size, np.arange(n), False, seed))

        result = TrainResult()
        step, epoch = 0, 0
        while step < total:
            for batch in batches(data, batch_size, indices, shuffle, seed, epoch):
                started = time.perf_counter()
                loss = session.train_step(batch)
                elapsed = time.perf_counter() - started
                step += 1
                lr = float(session.view("lr").reshape(())) if "lr" in session.tensors else math.nan
                info = StepInfo(step, epoch, loss, lr, batch_size / max(elapsed, 1e-9))
                result.losses.append(loss)
                if val_data is not None and ((eval_every and step % eval_every == 0) or step == total):
                    info.val_loss = validate()
                    result.val_losses.append((step, info.val_loss))
                result.steps = step
                if callback is not None and callback(info) is False:
                    result.stopped_early = True
                    return result
                if step == total:
                    break
            epoch += 1
        return result
    finally:
        if owned:
            session.close()
