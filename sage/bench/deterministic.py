"""The reference runs with torch's deterministic algorithms.

Some CPU kernels are nondeterministic: `index_put_(accumulate=False)` with repeated indices
writes them from several threads, so which value lands differs from run to run (measured
with 2 threads: 160 to 220 of 7168 elements of level1/19_index_put case 35 change between
two runs of the same forward). The eager reference and the float64 truth then disagree with
each other and with any kernel, and a correct kernel fails by chance. With
`torch.use_deterministic_algorithms(True)` torch takes its deterministic implementations
(its documentation lists `Tensor.index_put()` with accumulate=False and, on CPU, with
accumulate=True and `put_`): repeated indices are written in index order, the last one
wins, as the serial definition of the op says. `warn_only` keeps ops that have only a
nondeterministic implementation running (torch warns instead of raising; the warning is
not shown), and torch's filling of uninitialised memory, which that mode also turns on, is
left off: a reference's `empty()` costs what it did. Selections (topk, sort) break ties
toward the lower index (sage/bench/stable_selection.py), for the same reason: one answer.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

import torch
import torch.utils.deterministic

from sage.bench.stable_selection import stable_selection


@contextlib.contextmanager
def deterministic() -> Iterator[None]:
    """torch's deterministic algorithms inside the block; the previous settings after it."""
    enabled, warn_only = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    fill = torch.utils.deterministic.fill_uninitialized_memory
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = False
    try:
        with warnings.catch_warnings(), stable_selection():
            warnings.filterwarnings("ignore", message=".*does not have a deterministic implementation.*")
            yield
    finally:
        torch.use_deterministic_algorithms(enabled, warn_only=warn_only)
        torch.utils.deterministic.fill_uninitialized_memory = fill
