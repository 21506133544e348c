"""ctypes declarations of libloomrt's C API (include/loom/runtime.h).

The library is found, in this order, at ``$LOOM_LIBRARY`` (the path of
``libloomrt.so``), under ``$LOOM_HOME/lib`` (a build or install tree), next
to the ``loomc`` on ``PATH`` (``<prefix>/bin/loomc`` and
``<prefix>/lib/libloomrt.so``), and where the dynamic loader finds
``libloomrt``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
from pathlib import Path
from typing import Optional

LOOM_MAX_RANK = 16

# loom_tensor_kind_t
INPUT, PARAMETER, OUTPUT, STATE, HYPERPARAMETER = range(5)
KIND_NAMES = {
    INPUT: "input",
    PARAMETER: "parameter",
    OUTPUT: "output",
    STATE: "state",
    HYPERPARAMETER: "hyperparameter",
}

# loom_dtype_t, in the enum's order.
DTYPE_NAMES = [
    "float32",
    "float64",
    "float16",
    "bfloat16",
    "int64",
    "int32",
    "int16",
    "int8",
    "bool",
]

STATUS_NAMES = {
    1: "invalid argument",
    2: "not found",
    3: "bad bundle",
    4: "failed precondition",
    5: "resource exhausted",
    6: "internal",
    7: "unavailable",
}


class TensorInfo(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("kind", ctypes.c_int),
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_int32),
        ("shape", ctypes.c_int64 * LOOM_MAX_RANK),
        ("bytes", ctypes.c_size_t),
        ("updates", ctypes.c_int64),
    ]


class SessionOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("entry_point", ctypes.c_char_p),
        ("distributed", ctypes.c_int),
    ]


class MemoryStats(ctypes.Structure):
    _fields_ = [
        ("parameter_bytes", ctypes.c_size_t),
        ("state_bytes", ctypes.c_size_t),
        ("input_bytes", ctypes.c_size_t),
        ("output_bytes", ctypes.c_size_t),
        ("temporary_bytes", ctypes.c_size_t),
        ("temporary_peak_bytes", ctypes.c_size_t),
        ("predicted_temporary_peak_bytes", ctypes.c_size_t),
    ]


def _candidates() -> list[Path]:
    found = []
    if os.environ.get("LOOM_LIBRARY"):
        found.append(Path(os.environ["LOOM_LIBRARY"]))
    if os.environ.get("LOOM_HOME"):
        found.append(Path(os.environ["LOOM_HOME"]) / "lib" / "libloomrt.so")
    loomc = shutil.which("loomc")
    if loomc:
        found.append(Path(loomc).resolve().parent.parent / "lib" / "libloomrt.so")
    return found


def _load() -> ctypes.CDLL:
    # RTLD_GLOBAL: the bundles' compiled code (model.so) calls libloomrt's
    # functions, which it finds among the process's global symbols.
    tried = []
    for path in _candidates():
        tried.append(str(path))
        if path.is_file():
            return ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
    name = ctypes.util.find_library("loomrt")
    if name:
        return ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
    raise OSError(
        "cannot find libloomrt.so (tried "
        + (", ".join(tried) if tried else "nothing")
        + " and the loader's path): set LOOM_HOME to Loom's build or install "
        "directory, or LOOM_LIBRARY to the library"
    )


_lib: Optional[ctypes.CDLL] = None


def lib() -> ctypes.CDLL:
    """libloomrt with its functions' signatures declared (loaded once)."""
    global _lib
    if _lib is not None:
        return _lib
    L = _load()
    status = ctypes.c_void_p
    session = ctypes.c_void_p
    size = ctypes.c_size_t
    sigs = {
        "loom_status_code": (ctypes.c_int, [status]),
        "loom_status_message": (ctypes.c_char_p, [status]),
        "loom_status_free": (None, [status]),
        "loom_session_options_initialize": (None, [ctypes.POINTER(SessionOptions)]),
        "loom_session_create": (
            status,
            [ctypes.c_char_p, ctypes.POINTER(SessionOptions), ctypes.POINTER(session)],
        ),
        "loom_session_destroy": (None, [session]),
        "loom_session_rank": (ctypes.c_int, [session]),
        "loom_session_world_size": (ctypes.c_int, [session]),
        "loom_session_mesh_devices": (ctypes.c_int64, [session]),
        "loom_session_tensor_count": (size, [session]),
        "loom_session_tensor_info": (status, [session, size, ctypes.POINTER(TensorInfo)]),
        "loom_session_find_tensor": (status, [session, ctypes.c_char_p, ctypes.POINTER(size)]),
        "loom_session_set_tensor": (status, [session, size, ctypes.c_void_p, size]),
        "loom_session_set_tensor_whole": (status, [session, size, ctypes.c_void_p, size]),
        "loom_session_tensor_gather": (status, [session, size, ctypes.c_void_p, size]),
        "loom_session_tensor_whole_shape": (
            status,
            [session, size, ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_int64)],
        ),
        "loom_session_tensor_data": (
            status,
            [session, size, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(size)],
        ),
        "loom_session_run": (status, [session]),
        "loom_session_set_hyperparameter": (status, [session, ctypes.c_char_p, ctypes.c_double]),
        "loom_session_hyperparameter": (
            status,
            [session, ctypes.c_char_p, ctypes.POINTER(ctypes.c_double)],
        ),
        "loom_session_save_checkpoint": (status, [session, ctypes.c_char_p]),
        "loom_session_load_checkpoint": (status, [session, ctypes.c_char_p]),
        "loom_session_memory_stats": (status, [session, ctypes.POINTER(MemoryStats)]),
        "loom_session_barrier": (status, [session]),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(L, name)
        fn.restype = restype
        fn.argtypes = argtypes
    _lib = L
    return L
