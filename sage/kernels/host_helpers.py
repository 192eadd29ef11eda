"""Host helpers: tiling decisions that search (a loop over candidates), computed on the host.

A generator's comparisons on symbolic sizes become guards (`sage.kernels.symbolic`): a
search over candidate tile widths (`cols % nc == 0` for every nc up to 4 sqrt(tile)) records
one guard per candidate, so two shapes share a tiling variant only when every candidate
divides both or neither (level1/9_top_k's transposing copies: 40 `p % 112 != 0`-style
guards a variant, a variant per shape). As an Ascend C host tiling function runs ordinary
loops, such a search is one call in the formula (`symbolic.helper_call`): the generator gets
its value for the traced case, and the kernel file's host tiling function calls the same
function (its source is written into the file) on the case's parameters.

The shape helpers (`padded_shape` ...) are the host half of the derived candidates of
sage/agent/compiler/generic/derived.py: a padded or resized output's shape from the op's
attributes, as an Ascend C host tiling function computes it from the attrs it is given.

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


def padded_shape(shape, pad):
    out = list(shape)
    rank = len(out)
    for k in range(len(pad) // 2):
        axis = rank - 1 - k
        if axis >= 0:
            out[axis] = out[axis] + pad[2 * k] + pad[2 * k + 1]
    return out


def pad_offset(shape, pad):
    out = padded_shape(shape, pad)
    offset = 0
    stride = 1
    for axis in range(len(out) - 1, -1, -1):
        k = len(out) - 1 - axis
        if 2 * k < len(pad):
            offset = offset + pad[2 * k] * stride
        stride = stride * out[axis]
    return offset


def sized_shape(shape, size):
    return list(shape[:2]) + list(size)


def scaled_shape(shape, scale):
    out = list(shape[:2])
    for k in range(2, len(shape)):
        s = scale if isinstance(scale, (int, float)) else scale[k - 2]
        out.append(math.floor(float(shape[k]) * s))
    return out


def repeated_shape(shape, reps):
    lead = len(reps) - len(shape)
    if lead < 0:
        return list(shape)
    out = []
    for k in range(len(reps)):
        d = shape[k - lead] if k >= lead else 1
        out.append(d * reps[k])
    return out


def cat_shape(dim, shapes):
    out = list(shapes[0])
    axis = dim % len(out)
    for shape in shapes[1:]:
        out[axis] = out[axis] + shape[axis]
    return out


def cat_offset(dim, shapes, k, flat):
    axis = dim % len(shapes[0])
    start = 0
    for shape in shapes[:k]:
        start = start + shape[axis]
    if not flat:
        return start
    inner = 1
    for d in shapes[0][axis + 1:]:
        inner = inner * d
    return start * inner


def mixed_shape(first, rest, k):
    return list(first[:k]) + list(rest[k:])


def shape_prod(shape, lo, hi):
    n = 1
    for d in shape[lo:hi if hi >= 0 else len(shape)]:
        n = n * d
    return n


def divisor_at_most(n, limit, minimum):
    for c in range(min(n, limit), minimum - 1, -1):
        if c > 0 and n % c == 0:
            return c
    return 0


def grouped_run(shape, groups, lo, hi, what):
    run = shape_prod(shape, lo, hi)
    if groups < 1 or run % groups != 0 or run == 0:
        return 0.0 if what >= 2 else 0
    if what == 0:
        return run // groups
    if what == 1:
        return shape_prod(shape, 0, lo) * groups
    if what == 2:
        return 1.0 / (run // groups)
    return float(run // groups)


def long_row_split(shape, lo, hi, limit, what):
    return grouped_row_split(shape, 1, lo, hi, limit, what)


# The shortest chunk, 64, is sage/kernels/long_rows.py's MIN_CHUNK written out: a helper's
# text goes into kernel files on its own (tests/agent/compiler/test_long_row_classes.py
# checks that both chunk alike).
def grouped_row_split(shape, groups, lo, hi, limit, what):
    run = shape_prod(shape, lo, hi)
    if groups < 1 or run % groups != 0:
        return 0
    n = run // groups
    c = divisor_at_most(n, limit, 64) if n > limit else 0
    if c == 0:
        return 0
    if what == 0:
        return c
    if what == 1:
        return n // c
    return shape_prod(shape, 0, lo) * groups * (n // c)


# name -> function; a formula (name, a, b, ...) is the function of its arguments' values
HOST_HELPERS: dict[str, Callable[..., object]] = {
    "square_side": square_side,
    # derived shapes (sage/agent/compiler/generic/derived.py): an op's output from its attributes
    "padded_shape": padded_shape, "pad_offset": pad_offset, "sized_shape": sized_shape,
    "scaled_shape": scaled_shape, "mixed_shape": mixed_shape, "shape_prod": shape_prod,
    "cat_shape": cat_shape, "cat_offset": cat_offset, "repeated_shape": repeated_shape,
    # a reduction over a row too long for UB, in chunks (sage/kernels/long_rows.py)
    "divisor_at_most": divisor_at_most, "long_row_split": long_row_split, "grouped_row_split": grouped_row_split,
    "grouped_run": grouped_run,
}


def helper_source(name: str) -> str:
    """The helper's definition, as the kernel file writes it."""
    return inspect.getsource(HOST_HELPERS[name])


__all__ = ["HOST_HELPERS", "divisor_at_most", "grouped_row_split", "grouped_run", "helper_source", "long_row_split",
           "pad_offset", "padded_shape", "repeated_shape", "scaled_shape", "shape_prod", "sized_shape", "square_side"]
