"""Keep numpy's OpenBLAS single-threaded while a kernel is simulated.

The simulator's BLAS calls (Mmad's tile products) are small and many. With OpenBLAS's
default of one thread per CPU, every such call wakes worker threads that busy-wait; on a
machine shared with other processes this cost 10-60x the product itself (a 1024^3 fp16
matmul kernel: 0.12 s single-threaded, 1-8 s threaded, nearly all of it inside Mmad).
OpenBLAS's level-3 threads split the output, not the k sum, so results are the same bits.

numpy's wheels bundle OpenBLAS with prefixed symbol names; the library is found among the
shared objects the process has loaded. With another BLAS (or none found) nothing changes.
"""

from __future__ import annotations

import ctypes
from contextlib import contextmanager
from functools import lru_cache

_SETTERS = ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_", "openblas_set_num_threads")
_GETTERS = ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_", "openblas_get_num_threads")


@lru_cache(maxsize=1)
def _openblas() -> tuple | None:
    """(get_num_threads, set_num_threads) of the OpenBLAS numpy uses, or None."""
    import numpy as np  # noqa: F401 - loads numpy's BLAS, so that it is in the process map
    try:
        with open("/proc/self/maps") as maps:
            paths = sorted({line.split()[-1] for line in maps if "openblas" in line.lower() and "/" in line})
    except OSError:  # not Linux: leave the BLAS alone
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        get = next((getattr(lib, n) for n in _GETTERS if hasattr(lib, n)), None)
        put = next((getattr(lib, n) for n in _SETTERS if hasattr(lib, n)), None)
        if get is not None and put is not None:
            get.restype = ctypes.c_int
            put.argtypes = [ctypes.c_int]
            return get, put
    return None


@contextmanager
def single_threaded_blas():
    """Within the block, numpy's OpenBLAS uses one thread; the previous count is restored after."""
    fns = _openblas()
    if fns is None:
        yield
        return
    get, put = fns
    before = get()
    if before == 1:
        yield
        return
    put(1)
    try:
        yield
    finally:
        put(before)


def set_blas_threads(count: int) -> None:
    """numpy's OpenBLAS on `count` threads from now on (nothing when it is not found)."""
    fns = _openblas()
    if fns is not None:
        fns[1](count)


def blas_threads() -> int | None:
    """The thread count of numpy's OpenBLAS, or None when it is not found."""
    fns = _openblas()
    return None if fns is None else fns[0]()
