"""Segment leaves: a value that is constant along runs of a tile's columns.

Group norm reduces each (n, group) row of channels x positions, then multiplies by a
per-channel weight: along the row's columns the weight is w[c // HW], a value per segment
of HW columns, which no stride describes (the kernel's operands are affine in the
indices). Such a leaf (`Access.seg` = (segment length, stride between segments)) is copied
in as its per-row segment values only (a few elements a row), brought to the compute dtype,
and applied by the lowering one segment at a time with the scalar form of the op (`Muls`,
`Adds` on HW columns, the value read by the scalar unit): no tile-sized buffer, and the
normalisation and the affine stay one launch. Segments start on 32 B blocks (HW x 4 bytes
a multiple of 32, checked where the leaf is made, agent/compiler/tilegroup.py).
"""

from __future__ import annotations

from sage.kernels.library.source import DTYPE_SIZE
from sage.kernels.library.tile_spec import Access, TileSpec


def _ceil(n: int, m: int) -> int:
    return -(-n // m) * m


def seg_shape(spec: TileSpec, leaf: Access) -> tuple[int, int, int, str]:
    """(segment length L, segments per row, UB row pitch in elements, rows expression)."""
    assert leaf.seg is not None
    length = leaf.seg[0]
    nseg = -(-spec.cols // length)
    es = DTYPE_SIZE[leaf.dtype]
    pitch = _ceil(nseg * es, 32) // es
    sr, _ = spec.strides_of(leaf)
    return length, nseg, pitch, ("nr" if sr else "1")


def seg_elems(spec: TileSpec, leaf: Access, nr: int) -> int:
    """Elements of the UB copy of a tile's segment values."""
    _, _, pitch, rows = seg_shape(spec, leaf)
    return (nr if rows == "nr" else 1) * pitch + 64


def seg_copy(spec: TileSpec, leaf: Access, g: str, b: str, pad: str) -> list[str]:
    """The per-row segment values (contiguous: stride 1 between segments) into `x`."""
    _, nseg, pitch, rows = seg_shape(spec, leaf)
    es = DTYPE_SIZE[leaf.dtype]
    sr, _ = spec.strides_of(leaf)
    return [f"DataCopyPad(x, {g}[{b}], DataCopyExtParams({rows}, {nseg * es}, {max(sr - nseg, 0) * es}, "
            f"gap_to({nseg * es}, {pitch * es}), 0), {pad})"]


def seg_info(spec: TileSpec, leaf: Access) -> tuple[int, int, int]:
    """What the lowering needs: (L, segments per row, pitch between rows' values or 0)."""
    length, nseg, pitch, rows = seg_shape(spec, leaf)
    return length, nseg, (pitch if rows == "nr" else 0)
