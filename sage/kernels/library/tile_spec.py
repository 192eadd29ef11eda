"""What a tile program computes, and how each of its tensors is read or written.

A tile program evaluates expressions (chain ops of `vector_ops`, `Reduce` over the last
axis) over an iteration space `dims`. Its last axis is the tile's columns; one other axis
(`row`) gives the tile's rows; every other axis is a loop axis, iterated per tile. Every
tensor it reads or writes is an `Access`: a buffer argument with one element stride per
iteration axis (0 where the tensor is broadcast), so views, transposes, slices with steps
and broadcasts of any rank are just strides. An `Iota` leaf is an affine function of the
indices, computed in the kernel (arange, index arithmetic).

Within a tile a tensor is one of the lowering's kinds: `full` (varies along rows and
columns), `row` (only along columns: one row broadcast down the tile), `col` (only along
rows: one value per row) or `scalar`. How a full tensor is copied in depends on its
column stride (`load_plan`): contiguous rows go in one DataCopyPad; others are copied as a
span (or transposed, or element by element) and put in order with `Gather`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from sage.kernels.chain import Expr, Kind

LoadPlan = Literal["rows", "row_loop", "span", "transposed", "elements", "row", "col", "col_strided", "scalar", "seg", "padded"]


class Access(BaseModel):
    model_config = ConfigDict(frozen=True)

    arg: str                       # the kernel argument: a GM buffer
    dtype: str
    numel: int                     # the buffer's elements
    strides: tuple[int, ...]       # element stride per iteration axis
    offset: int = 0
    # read only over columns [lo, hi) (a `colsel` piece): copied in UB from the leaf of the
    # same buffer and strides without a window, shifted by the offsets' difference
    window: tuple[int, int] | None = None
    # a per-segment value along the columns (group norm's per-channel weight inside a
    # per-group row of channels x positions): column c reads offset + (c // seg[0]) * seg[1]
    # (the column stride is 0); see tile_seg.py
    seg: tuple[int, int] | None = None
    # with a window: copied in itself over the window with this value as the copy's padding
    # on both sides (DataCopyPad's left/right padding, a constant pad of the last axis)
    fill: float | None = None


class Iota(BaseModel):
    """value = offset + sum(index[k] * coefs[k]): an index computed in the kernel."""

    model_config = ConfigDict(frozen=True)

    coefs: tuple[int, ...]
    offset: int = 0


class TileOutput(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    expr: Expr
    access: Access


class TileSpec(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str
    dims: tuple[int, ...]          # the iteration space; the last axis is the columns
    row: int | None                # the axis of the tile's rows (None: one row per tile)
    leaves: tuple[Access | Iota, ...]
    outputs: tuple[TileOutput, ...]
    compute: str                   # float32 | float16 | int32
    reduce_rows: bool = False      # Reduce nodes reduce over the row axis (all of it), not the columns

    @property
    def cols(self) -> int:
        return self.dims[-1]

    @property
    def rows(self) -> int:
        return self.dims[self.row] if self.row is not None else 1

    @property
    def loops(self) -> list[int]:
        """The loop axes, outermost first."""
        return [i for i in range(len(self.dims) - 1) if i != self.row]

    def strides_of(self, leaf: Access | Iota) -> tuple[int, int]:
        """(row stride, column stride) inside a tile."""
        s = leaf.strides if isinstance(leaf, Access) else leaf.coefs
        return (s[self.row] if self.row is not None else 0), s[-1]


def leaf_kind(spec: TileSpec, leaf: Access | Iota) -> Kind:
    if isinstance(leaf, Access) and leaf.seg is not None:
        return "full"              # varies along the columns, by segments
    sr, sc = spec.strides_of(leaf)
    if sc == 0:
        return "scalar" if sr == 0 else "col"
    return "row" if sr == 0 else "full"


def load_plan(spec: TileSpec, leaf: Access, nc_max: int, span_limit: int) -> LoadPlan:
    """How a tile of `leaf` is copied into UB (`span_limit`: the most elements a span copy
    may bring in per row)."""
    if leaf.seg is not None:
        return "seg"
    if leaf.fill is not None:
        return "padded"
    sr, sc = spec.strides_of(leaf)
    kind = leaf_kind(spec, leaf)
    if kind == "scalar":
        return "scalar"
    if kind == "col":
        return "col" if sr == 1 else "col_strided"
    if sc == 1:
        if kind == "row":
            return "row"
        return "rows" if sr >= spec.cols else "row_loop"
    if kind == "full" and sr == 1:
        return "transposed"
    if kind == "full" and (nc_max - 1) * sc + 1 <= span_limit and sr >= (spec.cols - 1) * sc + 1:
        return "span"
    return "elements"
