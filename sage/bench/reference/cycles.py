"""Python's cycle collector held off while a reference is traced and timed.

A trace and its timing make hundreds of thousands of small objects that all stay alive until
the case is done (nms: 54,000 aten calls in its cases 1-4, each with its metadata, graph
node, work and time). The collector's passes over them found nothing to free and took 37 %
of that time (measured with `gc.callbacks`). Objects are still freed by reference counting
as usual; only cycles wait for the collector's next pass once the block is left.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def without_cycle_collection() -> Iterator[None]:
    """The cycle collector off for the block (nested blocks leave it to the outermost)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
