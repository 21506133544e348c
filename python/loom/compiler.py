"""loom.compile: runs loomc."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Optional, Sequence, Union

from .session import LoomError, PathLike

Option = Union[bool, int, float, str, Sequence[str]]


def loomc_path() -> str:
    """The loomc to run: ``$LOOM_HOME/bin/loomc``, else the one on PATH."""
    home = os.environ.get("LOOM_HOME")
    if home:
        candidate = Path(home) / "bin" / "loomc"
        if candidate.is_file():
            return str(candidate)
    found = shutil.which("loomc")
    if not found:
        raise LoomError(
            "cannot find loomc: put Loom's bin directory on PATH or set LOOM_HOME",
            "not found",
        )
    return found


def options_to_args(options: dict) -> list:
    """loomc's command-line options from keyword arguments: ``lr=3e-4`` is
    ``--lr=0.0003``, ``runtime_hyperparams=True`` is
    ``--runtime-hyperparams``, False and None are left out, and a list
    repeats the option (``freeze=["fc1.*", "fc2.*"]``)."""
    args = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            args.extend(f"{flag}={v}" for v in value)
        else:
            args.append(f"{flag}={value}")
    return args


def compile(
    onnx_path: PathLike,
    output: Optional[PathLike] = None,
    *,
    train: bool = False,
    **options: Option,
) -> str:
    """Compiles the ONNX model at ``onnx_path`` with loomc and returns the
    bundle's path.

    ``output`` is the bundle directory to write (default: a new temporary
    directory's ``model.loom``). ``train=True`` builds the training step;
    other keyword arguments are loomc's options with dashes written as
    underscores (``loss="cross-entropy:labels"``, ``optimizer="sgd"``,
    ``runtime_hyperparams=True``, ``input_shape="x=8x32"``,
    ``mesh="dp=2"``). A failure raises :class:`LoomError` with loomc's
    message.
    """
    if output is None:
        output = Path(tempfile.mkdtemp(prefix="loom-")) / "model.loom"
    command = [loomc_path(), os.fspath(onnx_path), "-o", os.fspath(output)]
    if train:
        command.append("--train")
    command += options_to_args(options)
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        message = result.stderr.strip() or result.stdout.strip() or f"loomc exited with {result.returncode}"
        raise LoomError(message, "compile")
    return os.fspath(output)
