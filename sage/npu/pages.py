"""Large GM images in 4 KB pages.

numpy asks the kernel for transparent huge pages on every large array (madvise). Where the
kernel then defragments memory synchronously (THP defrag=madvise, on a machine whose memory
big processes have fragmented), a fresh 1 GB array took 0.1-5.6 s to fill, against a steady
0.55 s in 4 KB pages; a 268M-element repeat_interleave case spent 5.5 s in empty() and 4.1 s
copying its input. Small arrays keep huge pages: in 4 KB pages the 4 M-element add of
benchmarks/simulator_speed.py lost 10 ms to page faults.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

SMALL_PAGES_FROM = 256 << 20     # bytes: arrays at least this large are made in 4 KB pages

_multiarray = getattr(getattr(np, "_core", None), "multiarray", None)
_set_madvise = getattr(_multiarray, "_set_madvise_hugepage", None)


@contextmanager
def pages_for(nbytes: int) -> Iterator[None]:
    """Arrays made inside the block of `nbytes` or more are made in 4 KB pages."""
    if _set_madvise is None or nbytes < SMALL_PAGES_FROM:
        yield
        return
    before = _set_madvise(False)
    try:
        yield
    finally:
        _set_madvise(before)
