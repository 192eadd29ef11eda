"""Compact programs: decompositions that trade speed for kernel text.

Some decompositions have a fast form written per shape geometry and a compact one whose
kernels every case shares: a convolution kept whole for a direct kernel (one kernel per
window geometry) or padded, copied im2col and multiplied; a pooling window summed in one
pass over all its taps (one strided view per tap) or axis by axis (k_d + k_h + k_w views).
The fast forms are the default. A task whose fast kernels would not fit the sandbox's source
limit (a public file spans up to 32 convolution geometries, or pools 3x7x7 windows) is
traced again inside `compact_programs()` (sage/agent/compiler/compiler.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_COMPACT: ContextVar[bool] = ContextVar("compact_programs", default=False)


@contextmanager
def compact_programs(on: bool = True) -> Iterator[None]:
    """Inside (with `on`): the decompositions take their compact forms."""
    token = _COMPACT.set(on)
    try:
        yield
    finally:
        _COMPACT.reset(token)


def is_compact() -> bool:
    return _COMPACT.get()
