"""A floating sum, max or min over one short axis that is not the innermost in memory, whose
reduced rows are small and many, as elementwise ops over its slices: `x.sum(dim=1)` over
[16000, 2, 256] is `x[:, 0] + x[:, 1]`.

Lowered as a reduction, such an axis makes the tile program's rows the 2 reduced rows of one
outer index, so the kernel runs one tiny tile per outer index (moe_finalize_routing's
stand-in, public level2/6 case 29: 16,000 of them, past the simulator's instruction-record
cap). Lowered elementwise, the slices are strided leaves of one tile over [16000, 256].

Numerics are torch's: its CPU reduction over an outer axis adds the slices one after another
into an accumulator (in float32 for half types, rounded once at the end), which is what the
chain of adds does.
"""

from __future__ import annotations

import math

import torch

SMALL_AXIS = 8          # longer axes stay reductions: their tiles are not tiny
# The reduced rows of one outer index (the axis times what lies inside it) under this many
# float32 bytes make a tiny tile. Above it the reduction measured faster: the suite's
# moe_finalize_routing sums [1024, 2, 2048] (16 KB rows of 2) at 0.331x as a reduction and
# 0.308x unrolled (benchmarks/run_delta.py over the suite, docs/results.md).
TINY_ROWS_BYTES = 16384
# ... and only where there are many of them: unrolled, the graph depends on the axis length,
# so cases that differ in it no longer share a kernel (public level2/27's mean over H <= 8
# heads went from 112 kernels to 138). Under this many tiles the reduction's tiny tiles cost
# time but stay far from the simulator's instruction-record cap.
MANY_TILES = 4096
_COMBINE = {torch.sum: torch.add, torch.amax: torch.maximum, torch.amin: torch.minimum}


def unrolled(fn, x: torch.Tensor, dims: list[int], keepdim: bool):  # noqa: ANN001 - torch.sum/amax/amin
    """fn(x, dims, keepdim) as elementwise ops over the slices of its one short non-innermost
    reduced axis (axes of size 1 aside); NotImplemented when that is not the shape."""
    if fn not in _COMBINE or not x.is_floating_point() or x.dim() < 2:
        return NotImplemented
    axes = [d for d in dims if x.shape[d] > 1]
    if len(axes) != 1 or not 1 < x.shape[axes[0]] <= SMALL_AXIS:
        return NotImplemented
    d = axes[0]
    innermost = min((a for a in range(x.dim()) if x.shape[a] > 1), key=lambda a: x.stride(a))
    rows = x.shape[d] * x.stride(d)
    if d == innermost or rows * 4 >= TINY_ROWS_BYTES or x.numel() // rows < MANY_TILES:
        return NotImplemented
    half = fn is torch.sum and x.dtype in (torch.float16, torch.bfloat16)
    parts = (x.float() if half else x).unbind(d)
    out = parts[0]
    for p in parts[1:]:
        out = _COMBINE[fn](out, p)
    out = out.to(x.dtype) if half else out
    shape = [1 if a in dims else x.shape[a] for a in range(x.dim())] if keepdim else \
        [x.shape[a] for a in range(x.dim()) if a not in dims]
    return out.reshape(shape) if math.prod(shape) == out.numel() else NotImplemented
