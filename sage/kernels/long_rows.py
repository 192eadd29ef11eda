"""Reductions over rows too long for UB, recorded in two steps.

A tile kernel that reduces over a row keeps the whole row in UB between the reduction
and the work that uses its result (a norm reads x again after its mean). When a fused
program's rows do not fit (a 16,384-column norm with eight values live per row), the
compiler traces the case again inside `long_rows(limit)`: every sum, max and min over a
trailing run of more than `limit` elements is then recorded as partial results over
chunks of at most `limit` elements and a reduction of those. Each step then fits, at the
price of the full-size values going through GM between steps, as a multi-pass kernel on
the chip would read them again.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from contextvars import ContextVar

import torch

from sage.kernels.host_helpers import divisor_at_most

_LIMIT: ContextVar[int | None] = ContextVar("long_rows_limit", default=None)
MIN_CHUNK = 64                 # a chunk shorter than this is not worth a step of its own
# Chunk lengths the compiler tries, longest first, when a fused program's reduced rows do not fit UB.
LONG_ROW_LIMITS = (4096, 2048, 1024, 512)


@contextlib.contextmanager
def long_rows(limit: int) -> Iterator[None]:
    token = _LIMIT.set(limit)
    try:
        yield
    finally:
        _LIMIT.reset(token)


def chunk_of(n: int, limit: int, minimum: int = MIN_CHUNK) -> int | None:
    """The largest divisor of `n` that is at most `limit` (and at least `minimum`). The host
    helper computes it, so that a kernel file's host code can compute the same chunks for the
    shape at hand (`long_row_split`; sage/agent/compiler/generic/derived.py)."""
    return divisor_at_most(n, limit, minimum) or None


def split_long_row(fn, x: torch.Tensor, dims: list[int], keepdim: bool, **kw):  # noqa: ANN001 - torch.sum/amax/amin
    """fn over `dims` (one trailing run of a contiguous x) as chunks then their reduction,
    when inside long_rows() and the run is longer than its limit; else NotImplemented."""
    limit = _LIMIT.get()
    rank = x.dim()
    unit = [d for d in dims if x.shape[d] == 1]
    if limit is not None and unit and len(unit) < len(dims) and x.is_contiguous():
        # reduced axes of size 1 (a batch of one in sum(dim=(0, 2, 3))) are no part of the run
        kept = [d for d in range(rank) if d not in unit]
        inner = [kept.index(d) for d in dims if d not in unit]
        out = split_long_row(fn, x.reshape([x.shape[d] for d in kept]), inner, keepdim, **kw)
        if out is NotImplemented or not keepdim:
            return out
        return out.reshape([1 if d in dims else x.shape[d] for d in range(rank)])
    run = sorted(dims)
    if limit is None or not run or run != list(range(rank - len(run), rank)) or not x.is_contiguous():
        return NotImplemented
    n = math.prod(x.shape[d] for d in run)
    c = chunk_of(n, limit) if n > limit else None
    if c is None:
        return NotImplemented
    return reduce_in_chunks(fn, x, len(run), c, keepdim, **kw)


def reduce_in_chunks(fn, x: torch.Tensor, ndims: int, c: int, keepdim: bool, **kw):  # noqa: ANN001
    """fn over the last `ndims` axes of a contiguous x as fn over chunks of `c` elements, then
    over the chunks' results; a half-precision sum accumulates in float32, as torch does."""
    lead = x.shape[:x.dim() - ndims]
    n = math.prod(x.shape[x.dim() - ndims:])
    half = x.dtype in (torch.float16, torch.bfloat16) and fn is torch.sum
    rows = (x.float() if half else x).reshape(*lead, n // c, c)
    out = fn(fn(rows, [-1], keepdim=False, **kw), [-1], keepdim=False)
    out = out.to(x.dtype) if half else out
    return out.reshape(*lead, *[1] * ndims) if keepdim else out
