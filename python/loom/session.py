"""Sessions: a bundle loaded by libloomrt, with NumPy arrays in and out."""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Tuple, Union

import numpy as np

from . import _capi

PathLike = Union[str, "os.PathLike[str]"]


class LoomError(RuntimeError):
    """An error of Loom's runtime or compiler, with the message it gave.

    ``code`` is the runtime's status name ("invalid argument", "not found",
    "bad bundle", ...) or "compile" for loomc's failures.
    """

    def __init__(self, message: str, code: str = "internal") -> None:
        super().__init__(message)
        self.code = code


def _check(status: Optional[int]) -> None:
    """Raises the runtime's message when ``status`` is not NULL."""
    if not status:
        return
    L = _capi.lib()
    code = L.loom_status_code(status)
    message = (L.loom_status_message(status) or b"").decode("utf-8", "replace")
    L.loom_status_free(status)
    raise LoomError(message or "unknown runtime error", _capi.STATUS_NAMES.get(code, "internal"))


def _numpy_dtype(dtype: str) -> np.dtype:
    # bfloat16 has no NumPy type: its values travel as float32.
    return np.dtype("float32" if dtype == "bfloat16" else dtype)


def _to_bfloat16_bits(values: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits (round to nearest even; NaN stays NaN)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    nan = np.isnan(values.astype(np.float32))
    return np.where(nan, 0x7FC0, rounded).astype(np.uint16)


def _from_bfloat16_bits(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


@dataclass(frozen=True)
class Tensor:
    """A tensor of a session's entry point.

    ``shape`` is this rank's block; ``whole_shape`` the shape the model
    gives it (the same unless the bundle splits it over ranks).
    ``updates`` names the parameter or state an output replaces after each
    run.
    """

    index: int
    name: str
    kind: str
    dtype: str
    shape: Tuple[int, ...]
    whole_shape: Tuple[int, ...]
    nbytes: int
    updates: Optional[str]


class Session:
    """A bundle (``loomc ... -o model.loom``) loaded for one entry point.

    ``entry`` selects the entry point (default: the bundle's first one;
    ``"train_step"`` or ``"eval_step"`` for a training bundle).
    ``distributed=True`` joins the run the environment describes (RANK,
    WORLD_SIZE, MASTER_ADDR, ...), as ranks started by ``loom-run train
    --nproc`` or torchrun do.

    Tensors go in and out as NumPy arrays: :meth:`set` copies an array into
    the session (directly from its memory when it is C-contiguous and of the
    tensor's dtype), :meth:`get` copies a tensor out, and :meth:`view`
    returns an array over the session's own memory without a copy (valid
    until the next run).
    """

    def __init__(self, bundle: PathLike, entry: Optional[str] = None, distributed: bool = False) -> None:
        L = _capi.lib()
        self.bundle = os.fspath(bundle)
        options = _capi.SessionOptions()
        L.loom_session_options_initialize(ctypes.byref(options))
        options.entry_point = entry.encode() if entry else None
        options.distributed = 1 if distributed else 0
        handle = ctypes.c_void_p()
        _check(L.loom_session_create(self.bundle.encode(), ctypes.byref(options), ctypes.byref(handle)))
        self._handle: Optional[ctypes.c_void_p] = handle
        self._distributed = distributed
        self._eval: Optional["Session"] = None
        self.tensors: Dict[str, Tensor] = {}
        count = L.loom_session_tensor_count(handle)
        infos = []
        for i in range(count):
            info = _capi.TensorInfo()
            _check(L.loom_session_tensor_info(handle, i, ctypes.byref(info)))
            infos.append(info)
        for i, info in enumerate(infos):
            rank = ctypes.c_int32()
            dims = (ctypes.c_int64 * _capi.LOOM_MAX_RANK)()
            whole: Tuple[int, ...]
            status = L.loom_session_tensor_whole_shape(handle, i, ctypes.byref(rank), dims)
            if status:
                L.loom_status_free(status)
                whole = tuple(info.shape[: info.rank])
            else:
                whole = tuple(dims[: rank.value])
            self.tensors[info.name.decode()] = Tensor(
                index=i,
                name=info.name.decode(),
                kind=_capi.KIND_NAMES.get(info.kind, "unknown"),
                dtype=_capi.DTYPE_NAMES[info.dtype],
                shape=tuple(info.shape[: info.rank]),
                whole_shape=whole,
                nbytes=int(info.bytes),
                updates=infos[info.updates].name.decode() if info.updates >= 0 else None,
            )

    # -- lifetime ----------------------------------------------------------

    def close(self) -> None:
        """Frees the session (and its evaluation session); idempotent."""
        if self._eval is not None:
            self._eval.close()
            self._eval = None
        if self._handle is not None:
            _capi.lib().loom_session_destroy(self._handle)
            self._handle = None

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    @property
    def handle(self) -> ctypes.c_void_p:
        if self._handle is None:
            raise LoomError("the session is closed", "failed precondition")
        return self._handle

    # -- description -------------------------------------------------------

    def _names(self, kind: str) -> List[str]:
        return [t.name for t in self.tensors.values() if t.kind == kind]

    @property
    def inputs(self) -> List[str]:
        return self._names("input")

    @property
    def parameters(self) -> List[str]:
        return self._names("parameter")

    @property
    def outputs(self) -> List[str]:
        return self._names("output")

    @property
    def state(self) -> List[str]:
        return self._names("state")

    @property
    def rank(self) -> int:
        """This process's rank in the distributed run (0 without one)."""
        return int(_capi.lib().loom_session_rank(self.handle))

    @property
    def world_size(self) -> int:
        return int(_capi.lib().loom_session_world_size(self.handle))

    def _tensor(self, name: str) -> Tensor:
        try:
            return self.tensors[name]
        except KeyError:
            raise LoomError(
                f'no tensor "{name}" (the bundle has {", ".join(self.tensors)})',
                "invalid argument",
            ) from None

    # -- tensors -----------------------------------------------------------

    def _prepare(self, t: Tensor, value: object, shape: Tuple[int, ...]) -> np.ndarray:
        array = np.asarray(value)
        if array.shape != shape:
            raise LoomError(
                f'"{t.name}" has shape {list(shape)}, got {list(array.shape)}',
                "invalid argument",
            )
        if t.dtype == "bfloat16":
            if array.dtype == np.uint16:
                return np.ascontiguousarray(array)
            return _to_bfloat16_bits(array)
        # No copy when the array already has the tensor's dtype and layout.
        return np.ascontiguousarray(array, dtype=_numpy_dtype(t.dtype))

    def set(self, name: str, value: object, whole: bool = False) -> None:
        """Copies ``value`` into input, parameter or state ``name``.

        With ``whole=True`` the value has the tensor's whole shape and a
        tensor split over ranks takes this rank's block (no communication).
        """
        t = self._tensor(name)
        array = self._prepare(t, value, t.whole_shape if whole else t.shape)
        L = _capi.lib()
        fn = L.loom_session_set_tensor_whole if whole else L.loom_session_set_tensor
        _check(fn(self.handle, t.index, array.ctypes.data, array.nbytes))

    def __setitem__(self, name: str, value: object) -> None:
        self.set(name, value)

    def view(self, name: str) -> np.ndarray:
        """A read-only array over the session's memory for ``name`` (no
        copy); valid until the next run. bfloat16 tensors are returned as
        their raw uint16 bits."""
        t = self._tensor(name)
        data = ctypes.c_void_p()
        size = ctypes.c_size_t()
        _check(_capi.lib().loom_session_tensor_data(self.handle, t.index, ctypes.byref(data), ctypes.byref(size)))
        dtype = np.dtype(np.uint16) if t.dtype == "bfloat16" else _numpy_dtype(t.dtype)
        if size.value == 0:
            return np.zeros(t.shape, dtype=dtype)
        buffer = (ctypes.c_char * size.value).from_address(data.value or 0)
        array = np.frombuffer(buffer, dtype=dtype).reshape(t.shape)
        array.flags.writeable = False
        return array

    def get(self, name: str, whole: bool = False) -> np.ndarray:
        """A copy of ``name``. With ``whole=True``, the whole tensor: for one
        split over ranks a collective every rank must call."""
        t = self._tensor(name)
        if whole and t.whole_shape != t.shape:
            dtype = np.dtype(np.uint16) if t.dtype == "bfloat16" else _numpy_dtype(t.dtype)
            out = np.empty(t.whole_shape, dtype=dtype)
            _check(_capi.lib().loom_session_tensor_gather(self.handle, t.index, out.ctypes.data, out.nbytes))
        else:
            out = self.view(name).copy()
        if t.dtype == "bfloat16":
            return _from_bfloat16_bits(out)
        return out

    def __getitem__(self, name: str) -> np.ndarray:
        return self.get(name)

    # -- running -----------------------------------------------------------

    def run(self, inputs: Optional[Mapping[str, object]] = None, **more: object) -> Dict[str, np.ndarray]:
        """Sets ``inputs`` (this rank's blocks), runs the entry point and
        returns copies of its outputs that update nothing (for a training
        step: the loss, the learning rate, ...)."""
        for name, value in {**(inputs or {}), **more}.items():
            self.set(name, value)
        _check(_capi.lib().loom_session_run(self.handle))
        return {t.name: self.get(t.name) for t in self.tensors.values() if t.kind == "output" and t.updates is None}

    def train_step(self, batch: Optional[Mapping[str, object]] = None, whole: bool = True) -> float:
        """One training step on ``batch`` (name -> array of the whole,
        global batch; each rank takes its block, as ``loom-run train``
        does; ``whole=False`` for this rank's block). Returns the loss."""
        if "loss" not in self.tensors:
            raise LoomError(f"{self.bundle}'s entry point has no \"loss\" output", "invalid argument")
        for name, value in (batch or {}).items():
            self.set(name, value, whole=whole)
        _check(_capi.lib().loom_session_run(self.handle))
        return float(self.view("loss").reshape(()))

    @property
    def batch_size(self) -> int:
        """The global batch size the bundle was compiled for (dimension 0
        of its inputs' whole shapes)."""
        sizes = {self.tensors[n].whole_shape[0] for n in self.inputs if self.tensors[n].whole_shape}
        if len(sizes) != 1:
            raise LoomError(f"{self.bundle}: the inputs do not agree on one batch size", "invalid argument")
        return sizes.pop()

    def evaluate(self, batches: Iterable[Mapping[str, object]]) -> float:
        """The mean loss of ``eval_step`` over ``batches`` (whole batches),
        with this training session's current parameters."""
        if self._eval is None:
            self._eval = Session(self.bundle, entry="eval_step", distributed=self._distributed)
        ev = self._eval
        for name in ev.parameters:
            # Both sessions are this rank's: the blocks agree.
            ev.set(name, self.view(name))
        total, count = 0.0, 0
        for batch in batches:
            total += ev.train_step(batch)
            count += 1
        if count == 0:
            raise LoomError("evaluate() got no batch", "invalid argument")
        return total / count

    # -- hyperparameters ---------------------------------------------------

    @property
    def hyperparameters(self) -> Dict[str, float]:
        """The run-time hyperparameters (``loomc --runtime-hyperparams``)
        and their values; empty for a bundle with compiled-in values."""
        values = {}
        for t in self.tensors.values():
            if t.kind == "hyperparameter":
                name = t.name[len("hparam.") :]
                out = ctypes.c_double()
                _check(_capi.lib().loom_session_hyperparameter(self.handle, name.encode(), ctypes.byref(out)))
                values[name] = out.value
        return values

    def set_hyperparameter(self, name: str, value: float) -> None:
        """Sets run-time hyperparameter ``name`` ("lr", "weight_decay",
        "clip_norm", "momentum", "beta1", "beta2", "epsilon",
        "warmup_steps", "total_steps", "min_lr") for the following steps."""
        _check(_capi.lib().loom_session_set_hyperparameter(self.handle, name.encode(), float(value)))

    def set_hyperparameters(self, values: Mapping[str, float]) -> None:
        for name, value in values.items():
            self.set_hyperparameter(name, value)

    # -- checkpoints and memory --------------------------------------------

    def save_checkpoint(self, path: PathLike) -> None:
        """Writes parameters, optimizer state and run-time hyperparameters
        to ``path`` atomically, in ``loom-run train``'s checkpoint format
        (``loom-run train --init-from`` reads it). A collective with
        several ranks; rank 0 writes."""
        _check(_capi.lib().loom_session_save_checkpoint(self.handle, os.fspath(path).encode()))

    def load_checkpoint(self, path: PathLike) -> None:
        """Restores what :meth:`save_checkpoint` or ``loom-run train``
        saved; a checkpoint of another model is refused whole."""
        _check(_capi.lib().loom_session_load_checkpoint(self.handle, os.fspath(path).encode()))

    def memory_stats(self) -> Dict[str, int]:
        """Bytes of the session's buffers and of compiled code's
        temporaries (now, at their peak, and the compiler's prediction)."""
        stats = _capi.MemoryStats()
        _check(_capi.lib().loom_session_memory_stats(self.handle, ctypes.byref(stats)))
        return {name: int(getattr(stats, name)) for name, _ in stats._fields_}
