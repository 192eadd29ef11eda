"""Host helpers: tiling decisions that search (a loop over candidates), computed on the host.

A generator's comparisons on symbolic sizes become guards (`sage.kernels.symbolic`): a
search over candidate tile widths (`cols % nc == 0` for every nc up to 4 sqrt(tile)) records
one guard per candidate, so two shapes share a tiling variant only when every candidate
divides both or neither (level1/9_top_k's transposing copies: 40 `p % 112 != 0`-style
guards a variant, a variant per shape). As an Ascend C host tiling function runs ordinary
loops, such a search is one call in the formula (`symbolic.helper_call`): the generator gets
its value for the traced case, and the kernel file's host tiling function calls the same
function (its source is written into the file) on the case's parameters.

Each helper is plain restricted Python (the sandbox's `math` only, no lambdas) and never
raises: a host tiling function may evaluate it before its guards.
"""

from __future__ import annotations

import inspect
import math
from typing import Callable


def square_side(tile_len, align, cols):
    side = math.isqrt(max(tile_len, 1))
    best = 0
    for nc in range(align, min(cols, 4 * side) + 1, align):
        if cols % nc == 0 or cols % nc > nc - align:
            if best == 0 or abs(math.log(nc / side)) < abs(math.log(best / side)):
                best = nc
    return best


# name -> function; a formula (name, a, b, ...) is the function of its arguments' values
HOST_HELPERS: dict[str, Callable[..., int]] = {"square_side": square_side}


def helper_source(name: str) -> str:
    """The helper's definition, as the kernel file writes it."""
    return inspect.getsource(HOST_HELPERS[name])


__all__ = ["HOST_HELPERS", "helper_source", "square_side"]
