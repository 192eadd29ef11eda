"""Iteration spaces of one group seen at a finer grain: a reshape inside a fusion group.

A tile group iterates over its full shape F; a node of another shape S that holds the same
dense index space (group_norm_swish normalises x as [N, G, C/G * H * W], then applies the
per-channel affine to the result reshaped back to [N, C, H, W]) could not join it. Both are
groupings of one finer shape R, their common refinement ([N, G, C/G, H, W] there): the group
is re-expressed over R (every map's stride on an axis of F split over the R axes that make
it) and the node's reads map onto R the same way, so the affine joins the normalisation's
launch. Maps are unchanged as sets of addresses; only the axes are finer.
"""

from __future__ import annotations

import math

Shape = tuple[int, ...]


def refinement(a: Shape, b: Shape) -> Shape | None:
    """The coarsest shape that both `a` and `b` group (row-major, same element count), with
    no size-1 axes; None when none exists (a boundary of one does not divide the other's)."""
    n = math.prod(a)
    if n != math.prod(b) or n <= 1:
        return None
    bounds = sorted(_suffixes(a) | _suffixes(b))
    sizes: list[int] = []
    prev = 1
    for x in bounds:
        if x % prev:
            return None
        sizes.append(x // prev)
        prev = x
    return tuple(reversed(sizes))


def _suffixes(shape: Shape) -> set[int]:
    out, p = set(), 1
    for d in reversed(shape):
        p *= d
        if d > 1:
            out.add(p)
    return out


def groups(shape: Shape, fine: Shape) -> list[list[int]] | None:
    """For each axis of `shape`, the axes of `fine` it is made of (consecutive; none for a
    size-1 axis), or None when `shape` is not a grouping of `fine`."""
    out: list[list[int]] = [[] for _ in shape]
    j = len(fine) - 1
    for i in range(len(shape) - 1, -1, -1):
        need, got = shape[i], 1
        while got < need and j >= 0:
            got *= fine[j]
            out[i].insert(0, j)
            j -= 1
        if got != need:
            return None
    return out if all(fine[k] == 1 for k in range(j + 1)) else None


def split(strides: tuple[int, ...], shape: Shape, fine: Shape, parts: list[list[int]]) -> tuple[int, ...]:
    """Strides over `fine` of a map with `strides` over `shape` (`parts` = groups(shape, fine))."""
    out = [0] * len(fine)
    for st, axes in zip(strides, parts):
        inner = 1
        for r in reversed(axes):
            out[r] = st * inner
            inner *= fine[r]
    return tuple(out)


def refine_group(tile, fine: Shape) -> None:
    """Re-express a TileGroup over `fine` (a refinement of its full shape): every map it holds
    (writes, reads, the leaves of its expressions) split over the finer axes."""
    from sage.agent.compiler.tilegroup import GMap, LeafRef
    from sage.kernels import Op, Reduce

    parts = groups(tile.full, fine)
    assert parts is not None

    def conv(gm: GMap) -> GMap:
        return GMap(split(gm.strides, tile.full, fine, parts), gm.offset)

    def walk(e):
        if isinstance(e, LeafRef):
            return LeafRef(e.buf, conv(e.gmap), e.dtype, e.window, e.fill)
        if isinstance(e, Op):
            return Op(e.name, tuple(walk(a) for a in e.args), e.params)
        if isinstance(e, Reduce):
            return Reduce(e.kind, walk(e.arg))
        return e

    tile.writes = {b: [(conv(g), walk(e), n) for g, e, n in ws] for b, ws in tile.writes.items()}
    tile.exprs = {k: walk(e) for k, e in tile.exprs.items()}
    tile.reads = {b: {conv(g) for g in gs} for b, gs in tile.reads.items()}
    tile.rdims = frozenset(r for a in tile.rdims for r in parts[a])
    tile.full = tuple(fine)
