"""A piecewise read cut only along the tile's columns, as one program: `colsel`.

`pieces.py` cuts a reader of a `cat` into one program per box. When the boxes differ only
along the reader's innermost axis in memory (a rotate-half `cat((-x2, x1), -1)`), the
reader stays one program over whole rows: the read of the temporary becomes
`colsel(p0, p1, ...)`, piece k's value over its columns [c_k, c_k+1). A piece's leaves
are windowed (`LeafRef.window`): their maps hold only inside the window (x2 read at
column c is x[c + D/2], past the row for c >= D/2). Each windowed leaf must have a host,
a leaf of the same buffer and strides without a window whose row holds the window
shifted by the offsets' difference; the kernel copies it out of the host in UB
(`tile_prepare.py`). So x is copied in once in whole rows, the rotated halves read in UB,
instead of two programs each copying both halves of x (and cos, sin) in half rows.
"""

from __future__ import annotations

from sage.agent.compiler.fusion import Group
from sage.agent.compiler.tilegroup import GMap, LeafRef, TileGroup, leaves_of
from sage.kernels import Expr, Op, Reduce

# Window edges on this many elements: a 32 B block of 2-byte values, so every window
# starts on a block in UB for the compute dtypes (float32, float16, int32) and the loads.
EDGE = 16

# Columns of a selected row at most: the kernel holds whole rows (no column tiles), and
# its in-UB copies step rows by a repeat stride of at most 255 blocks (2040 float32).
MAX_COLS = 2032

Box = tuple[tuple[int, int], ...]


def column_select(g: Group, buf: int, boxes: list[Box], pieces: list[dict[GMap, Expr]],
                  maps: list[GMap | None]) -> Group | None:
    """The reader `g` as one program reading `buf` through `colsel`, or None when the boxes
    do not split only its columns or a windowed leaf has no host."""
    tile = g.tile
    assert tile is not None
    if tile.rdims or len(boxes) < 2 or any(m is None for m in maps):
        return None
    cut = [a for a in range(len(tile.full)) if any(b[a] != (0, tile.full[a]) for b in boxes)]
    if len(cut) != 1:
        return None
    a = cut[0]
    if tile.full[a] > MAX_COLS:
        return None
    if any(m.strides[a] != 1 for m in maps):          # type: ignore[union-attr]
        return None                                   # not the innermost axis of what it writes
    boxes_pieces = sorted(zip(boxes, pieces), key=lambda bp: bp[0][a][0])
    edges = [b[a][0] for b, _ in boxes_pieces] + [tile.full[a]]
    if any(e % EDGE for e in edges[:-1]):
        return None
    params = tuple((f"c{k}", float(e)) for k, e in enumerate(edges))

    def select(gm: GMap) -> Expr:
        args = tuple(_windowed(p[gm], b[a], a) for b, p in boxes_pieces)
        return Op("colsel", args, params)

    stores = [(node, ref, _replace(expr, buf, select)) for node, ref, expr in g.stores]
    if not all(_hosted(e, tile.full[a], a) for _, _, e in stores):
        return None
    sub = TileGroup(tile.full, tile.rdims, row_mode=tile.row_mode, col_axis=a)
    out = Group(g.index, "tile", list(g.nodes), sub)
    out.stores = [(node, ref, _unwindow(e)) for node, ref, e in stores]
    out.maps = list(maps)                             # type: ignore[arg-type]
    return out


def _windowed(e: Expr, span: tuple[int, int], a: int) -> Expr:
    """A piece's value over its box, as a value over the whole axis `a` read only in `span`."""
    lo, hi = span
    if isinstance(e, LeafRef):
        gm = GMap(e.gmap.strides, e.gmap.offset - lo * e.gmap.strides[a])
        # an index is computed, not loaded: valid on every column
        return LeafRef(e.buf, gm, e.dtype, None if e.buf is None or e.gmap.strides[a] == 0 else (lo, hi))
    if isinstance(e, Op):
        return Op(e.name, tuple(_windowed(x, span, a) for x in e.args), e.params)
    if isinstance(e, Reduce):
        return Reduce(e.kind, _windowed(e.arg, span, a))
    return e


def _replace(e, buf: int, select):
    if isinstance(e, LeafRef):
        return select(e.gmap) if e.buf == buf else e
    if isinstance(e, Op):
        return Op(e.name, tuple(_replace(x, buf, select) for x in e.args), e.params)
    if isinstance(e, Reduce):
        return Reduce(e.kind, _replace(e.arg, buf, select))
    return e


def _hosts(e: Expr) -> dict[tuple, list[LeafRef]]:
    out: dict[tuple, list[LeafRef]] = {}
    for lf in leaves_of(e):
        if lf.buf is not None and lf.window is None:
            out.setdefault((lf.buf, lf.gmap.strides), []).append(lf)
    return out


def host_shift(lf: LeafRef, hosts: list[LeafRef], n: int, a: int) -> tuple[LeafRef, int] | None:
    """(the host of windowed leaf `lf`, the shift in columns from its window to the host's
    columns), when the shifted window stays in the host's row and starts on a block."""
    lo, hi = lf.window or (0, n)
    st = lf.gmap.strides[a]
    for h in hosts:
        d = lf.gmap.offset - h.gmap.offset
        if h.dtype == lf.dtype and st > 0 and d % st == 0 and 0 <= lo + d // st and hi + d // st <= n and (lo + d // st) % EDGE == 0:
            return h, d // st
    return None


def _hosted(e: Expr, n: int, a: int) -> bool:
    hosts = _hosts(e)
    for lf in leaves_of(e):
        if lf.window is None or lf.buf is None:
            continue
        same = hosts.get((lf.buf, lf.gmap.strides), [])
        if any(h.gmap == lf.gmap for h in same):
            continue                  # read whole elsewhere: the window is not needed
        if host_shift(lf, same, n, a) is None:
            return False
    return True


def _unwindow(e: Expr) -> Expr:
    """Windowed leaves that another leaf reads whole at the same map become that leaf."""
    whole = {(lf.buf, lf.gmap) for lf in leaves_of(e) if lf.buf is not None and lf.window is None}

    def walk(x):
        if isinstance(x, LeafRef):
            return LeafRef(x.buf, x.gmap, x.dtype) if (x.buf, x.gmap) in whole else x
        if isinstance(x, Op):
            return Op(x.name, tuple(walk(y) for y in x.args), x.params)
        if isinstance(x, Reduce):
            return Reduce(x.kind, walk(x.arg))
        return x

    return walk(e)
