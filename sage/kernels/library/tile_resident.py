"""Resident leaves: a tile program's operand that stays the same from one tile to the next
is copied in once per change, not once per tile.

A bias row (stride 0 along the tile's rows and every loop axis) or rotary's cos and sin
(stride 0 along the batch axis) are copied in per tile through their queue like every other
operand; each copy pays the GM path's fixed cost (K ~ 14.9 KB at the peak rate, ~240 cycles
for a 256 B row) for bytes the block already holds. A resident leaf lives in its own TBuf:
the kernel compares its GM base with the last one copied and copies (and casts) only when
it changed, with explicit flags (V_MTE2 before overwriting what the vector unit may still
read, MTE2_V before the vector unit reads it), as hand-written Ascend C keeps a broadcast
operand (`SetFlag<HardEvent::MTE2_V>` / `WaitFlag`). The loop axis along which the most such
leaves stay put becomes the innermost, so consecutive tiles share them.
"""

from __future__ import annotations

from sage.kernels.library.tile_spec import Access, TileSpec

# Plans that copy the tile in directly (no gather tables): a tile whose base did not move
# holds the same elements (a moved row or column tile moves the base).
RESIDENT_PLANS = ("rows", "row_loop", "row", "col", "scalar")


# The row tiles' index in a loop order (the loop axes are the spec's axes).
ROW_TILES = -1
# Tiles in a row that must share a leaf's base for it to be resident: each change costs the
# vector unit a wait for the copy (it is not prefetched like a queued one), so a base that
# moves every other tile (a per-channel scalar over two row tiles) is better left queued.
MIN_RUN = 4


def loop_order(spec: TileSpec, plans: dict[int, str], tile_len: int) -> list[int]:
    """The tile indices, outermost first: the loop axes and ROW_TILES (innermost by default,
    after the column tiles). The index along which the most directly copied leaves keep
    their base goes innermost (ties keep the default)."""
    order = list(spec.loops) + ([] if spec.reduce_rows else [ROW_TILES])
    cands = [i for i, p in plans.items() if p in RESIDENT_PLANS]
    moving = _moving(spec, order, tile_len)
    if not cands or not moving:
        return order

    def still(a: int) -> int:
        return sum(1 for i in cands if _stride(spec, i, a) == 0)

    best = max(moving, key=lambda a: (still(a), order.index(a)))
    return order if still(best) == 0 else [a for a in order if a != best] + [best]


def _extent(spec: TileSpec, a: int, tile_len: int) -> int:
    """Values index `a` takes (row tiles: the rows over the rows a tile of `tile_len` holds)."""
    if a != ROW_TILES:
        return spec.dims[a]
    per = max(1, min(spec.rows, 255, tile_len // max(spec.cols, 1)))
    return -(-spec.rows // per)


def _moving(spec: TileSpec, order: list[int], tile_len: int) -> list[int]:
    """The indices that take more than one value."""
    return [a for a in order if _extent(spec, a, tile_len) > 1]


def _stride(spec: TileSpec, i: int, a: int) -> int:
    leaf = spec.leaves[i]
    assert isinstance(leaf, Access)
    return spec.strides_of(leaf)[0] if a == ROW_TILES else leaf.strides[a]


def resident_leaves(spec: TileSpec, plans: dict[int, str], order: list[int], tile_len: int,
                    skip: set[int]) -> set[int]:
    """Leaves whose GM base stays put over at least MIN_RUN consecutive tiles (stride 0 along
    the innermost moving indices): direct copies, one column tile (the columns would move
    the base every tile). In row mode a block's unit is one column chunk whose row tiles run
    innermost: a leaf that does not vary along the rows keeps its base over all of them."""
    if spec.reduce_rows:
        if _extent(spec, ROW_TILES, tile_len) < MIN_RUN:
            return set()
        return {i for i, leaf in enumerate(spec.leaves) if isinstance(leaf, Access) and i not in skip
                and plans.get(i) in RESIDENT_PLANS and spec.strides_of(leaf)[0] == 0}
    if spec.cols > tile_len:
        return set()
    moving = _moving(spec, order, tile_len)
    out = set()
    for i, leaf in enumerate(spec.leaves):
        if not isinstance(leaf, Access) or i in skip or plans.get(i) not in RESIDENT_PLANS:
            continue
        run = 1                   # consecutive tiles that share the leaf's base
        for a in reversed(moving):
            if _stride(spec, i, a):
                break
            run *= _extent(spec, a, tile_len)
        if run >= MIN_RUN:
            out.add(i)
    return out


def resident_lines(i: int, base: str, copy: list[str], convert: list[str]) -> list[str]:
    """Copy (into `x`) and convert leaf i when its base moved since the last tile."""
    body = [f"if self.last{i} >= 0:", "    SetFlag(HardEvent.V_MTE2, 0)", "    WaitFlag(HardEvent.V_MTE2, 0)",
            f"x = x{i}", *copy, "SetFlag(HardEvent.MTE2_V, 0)", "WaitFlag(HardEvent.MTE2_V, 0)",
            f"self.last{i} = {base}", *convert]
    return [f"if {base} != self.last{i}:"] + ["    " + ln for ln in body]
