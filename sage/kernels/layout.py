"""How the operands of an elementwise kernel lay out against its output.

The library's elementwise kernel views the output as [R, C] and each operand as `full`
(the output's shape), `row` (one row of C broadcast down the rows), `col` (one value per
row), or `scalar`; `broadcast_layout` finds that split. Broadcasts it cannot express
(e.g. [B, 1, N] over [B, M, N]) may still fit the grouped layout [B, G, C]
(`grouped_layout`): tiles stay inside a group of G rows, and an operand can also be one
row per group (`grp`) or one [G, C] slab for all groups (`mod`).
"""

from __future__ import annotations

import math

from sage.kernels.chain import Kind


def broadcast_layout(out: tuple[int, ...], shapes: list[tuple[int, ...]]) -> tuple[list[Kind], int, int] | None:
    """Kinds of operands against `out` seen as [R, C], or None when no single split works
    (e.g. [B, 1, N] over [B, M, N])."""
    n = len(out)
    total = math.prod(out)
    padded = [(1,) * (n - len(sh)) + tuple(sh) for sh in shapes]
    kinds: list[Kind | None] = []
    splits: set[int] = set()
    for sh in padded:
        if sh == tuple(out):
            kinds.append("full")
            continue
        if math.prod(sh) == 1:
            kinds.append("scalar")
            continue
        found = None
        for k in range(1, n):
            if all(d == 1 for d in sh[:k]) and sh[k:] == tuple(out[k:]):
                found = ("row", k)
                break
            if all(d == 1 for d in sh[k:]) and sh[:k] == tuple(out[:k]):
                found = ("col", k)
                break
        if found is None:
            return None
        kinds.append(found[0])
        splits.add(found[1])
    if len(splits) > 1:
        return None
    if not splits:
        return [k for k in kinds if k], 1, total
    k = splits.pop()
    C = math.prod(out[k:])
    return [k_ for k_ in kinds if k_], total // C, C


def grouped_layout(out: tuple[int, ...], shapes: list[tuple[int, ...]]) -> tuple[list[Kind], tuple[int, int]] | None:
    """Output axes split as [B | G | C]: each operand is full, a scalar, a row (C only), a
    column (B and G only), one row per group (B and C: `grp`) or one slab for all groups
    (G and C: `mod`). Returns the kinds and (number of C axes, number of G axes)."""
    out = tuple(out)
    n = len(out)
    padded = [(1,) * (n - len(sh)) + tuple(sh) for sh in shapes]
    for c in range(n - 1, 0, -1):          # C = out[c:]
        for g in range(c - 1, -1, -1):     # G = out[g:c], B = out[:g]
            kinds = [_group_kind(sh, out, g, c) for sh in padded]
            if None not in kinds and ("grp" in kinds or "mod" in kinds):
                return kinds, (n - c, c - g)
    return None


_GROUP_KINDS: dict[tuple[str, str, str], Kind] = {
    ("all", "all", "all"): "full", ("one", "one", "one"): "scalar", ("one", "one", "all"): "row",
    ("all", "one", "all"): "grp", ("one", "all", "all"): "mod", ("all", "all", "one"): "col",
}


def _group_kind(sh: tuple[int, ...], out: tuple[int, ...], g: int, c: int) -> Kind | None:
    def part(lo: int, hi: int) -> str | None:
        if sh[lo:hi] == out[lo:hi]:
            return "all"
        if all(d == 1 for d in sh[lo:hi]):
            return "one"
        return None

    return _GROUP_KINDS.get((part(0, g), part(g, c), part(c, len(out))))
