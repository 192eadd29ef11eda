"""A tile group: pointwise nodes and reductions over one iteration space, one launch.

The group's iteration space is the full shape F of its nodes, with the reduced axes Rd
(none for a purely pointwise group). A node belongs at the full level (its shape is F) or
the row level (F with Rd kept as 1, or dropped): reductions take the full level to the
row level, and later pointwise work may use both (x - mean). Every operand is mapped into
group coordinates (`GMap`: a stride per axis of F and an offset); a node reads a value
another node of the group made only when both map it identically (then the value never
leaves UB), else from GM as a leaf.

The fusion rule: a node joins a group when its shape fits the group's levels, its
reduction (if any) is the group's, every value it reads from the group maps identically,
and the launch order of groups stays valid (everything it reads from other groups is
launched before this one, and nothing launched later touches what it writes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from sage.agent.compiler.ir import Layout, Node, Ref, contiguous_strides
from sage.agent.compiler.pointwise import FLOATS, IotaOperand, Pointwise, prim_of, reduce_dims
from sage.agent.compiler.refine import groups, refine_group, refinement, split
from sage.kernels import Const, Expr, Inp, Op, Reduce


@dataclass(frozen=True)
class GMap:
    strides: tuple[int, ...]     # per axis of the group's full shape
    offset: int


@dataclass(frozen=True)
class LeafRef:
    """A leaf before numbering: a buffer read through a map, or an index (iota)."""

    buf: int | None              # None: an iota
    gmap: GMap
    dtype: str
    # read only over these columns of the tile (a slice of a `cat` along the columns, see
    # pieces.py): its map points outside its buffer's row elsewhere, so it is never loaded
    # itself but copied in UB out of a leaf of the same buffer the tile holds whole
    window: tuple[int, int] | None = None
    # with a window: loaded itself over the window, `fill` elsewhere (a constant padding)
    fill: float | None = None


@dataclass
class Virtual:
    """A buffer the groups compute where they read it instead of loading it: an arange, a
    fill, or a cheap pointwise node (a cast, a negation) inlined into its readers."""

    kind: str                    # "iota" | "const" | "expr"
    start: float = 0.0
    step: float = 0.0
    node: Node | None = None     # expr: the producer and its expression
    pw: Pointwise | None = None


def compose(gm: GMap, full: tuple[int, ...], shape: tuple[int, ...], lay: Layout, merge: bool = True) -> GMap | None:
    """A read of a dense buffer of `shape` through `gm` (over the group's axes `full`),
    followed back through `lay` (a layout over `shape`): the composite map, or None when
    the read does not stay on the buffer's axes (a reshape that mixes them). With `merge`,
    axes that `lay` keeps contiguous count as one (see `_merged`)."""
    shape, lay_strides = _merged(shape, lay.strides) if merge else (tuple(shape), tuple(lay.strides))
    cs = contiguous_strides(shape)
    axes = [d for d in range(len(shape)) if shape[d] > 1]
    idx = [0] * len(shape)
    rem = gm.offset
    for d in axes:
        idx[d], rem = divmod(rem, cs[d])
    if rem:
        return None
    reach = list(idx)
    strides = []
    for a, st in enumerate(gm.strides):
        if st == 0 or full[a] == 1:
            strides.append(0)
            continue
        d = next((d for d in axes if cs[d] <= st and st % cs[d] == 0), None)
        if d is None:
            return None
        k = st // cs[d]
        reach[d] += k * (full[a] - 1)
        if reach[d] >= shape[d]:
            return None
        strides.append(k * lay_strides[d])
    return GMap(tuple(strides), lay.offset + sum(i * s for i, s in zip(idx, lay_strides)))


def _merged(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """`shape` with each run of axes that `strides` also lays out contiguously merged into one
    (unit axes dropped): a read through a reshape that merges axes (group norm's [N, C, H, W]
    read as [N * G, C / G * H * W]) then follows one axis of the buffer instead of none."""
    out_shape: list[int] = []
    out_strides: list[int] = []
    for n, st in zip(shape, strides):
        if n == 1:
            continue
        if out_shape and out_strides[-1] == st * n:
            out_shape[-1] *= n
            out_strides[-1] = st
        else:
            out_shape.append(n)
            out_strides.append(st)
    return tuple(out_shape) or (1,), tuple(out_strides) or (0,)


@dataclass
class TileGroup:
    full: tuple[int, ...]
    rdims: frozenset[int]
    nodes: list[Node] = field(default_factory=list)
    writes: dict[int, list[tuple[GMap, Expr, Node]]] = field(default_factory=dict)   # buffer -> writes, in order
    exprs: dict[int, Expr] = field(default_factory=dict)                # node index -> its output's expression
    reads: dict[int, set[GMap]] = field(default_factory=dict)           # buffer -> maps it is loaded through
    row_mode: bool = False       # the reduced axes are not innermost in memory: reduce over tile rows
    floats: bool = False         # a node reads or writes a float
    int_arithmetic: bool = False  # a node computes integers (exact only in an int32 program)
    col_axis: int | None = None   # windowed leaves' axis: the tile's columns, never merged with another

    # -- levels ---------------------------------------------------------------------------------
    def level_of(self, shape: tuple[int, ...]) -> str | None:
        if tuple(shape) == self.full:
            return "full"
        if self.rdims:
            keep = tuple(1 if i in self.rdims else d for i, d in enumerate(self.full))
            drop = tuple(d for i, d in enumerate(self.full) if i not in self.rdims)
            if tuple(shape) == keep:
                return "keep"
            if tuple(shape) == drop:
                return "drop"
            # a coarser view of the same index space (refine.py): the group seen before a refinement
            if groups(tuple(shape), self.full) is not None:
                return "full"
            if groups(tuple(shape), drop) is not None:
                return "keep"
        return None

    def gmap(self, layout: Layout, shape: tuple[int, ...]) -> GMap | None:
        """`layout` as read by a node iterating over `shape`, in group coordinates."""
        level = self.level_of(shape)
        if level is None:
            return None
        try:
            lay = layout.broadcast_to(tuple(shape))
        except ValueError:
            return None
        coarse = self._coarse(lay, tuple(shape), level)
        if coarse is not None:
            return coarse
        if level == "full":
            strides = list(lay.strides)
        elif level == "keep":
            strides = [0 if i in self.rdims else s for i, s in enumerate(lay.strides)]
        else:
            it = iter(lay.strides)
            strides = [0 if i in self.rdims else next(it) for i in range(len(self.full))]
        strides = [0 if d == 1 else s for s, d in zip(strides, self.full)]
        return GMap(tuple(strides), lay.offset)

    def _coarse(self, lay: Layout, shape: tuple[int, ...], level: str) -> GMap | None:
        """A map read over a coarser view of the group's space (refine.py), split over its axes."""
        keep = tuple(1 if i in self.rdims else d for i, d in enumerate(self.full))
        drop = tuple(d for i, d in enumerate(self.full) if i not in self.rdims)
        if shape in (self.full, keep, drop):
            return None
        if level == "full":
            parts = groups(shape, self.full)
            assert parts is not None
            strides = list(split(lay.strides, shape, self.full, parts))
        else:
            parts = groups(shape, drop)
            assert parts is not None
            it = iter(split(lay.strides, shape, drop, parts))
            strides = [0 if i in self.rdims else next(it) for i in range(len(self.full))]
        return GMap(tuple(0 if d == 1 else s for s, d in zip(strides, self.full)), lay.offset)

    def maybe_refine(self, shape: tuple[int, ...]) -> None:
        """A pointwise node over another grouping of a reducing group's space: the group is
        re-expressed over the common refinement so that the node can join (refine.py)."""
        if not self.rdims or self.row_mode or self.level_of(shape) is not None:
            return
        fine = refinement(self.full, tuple(shape))
        if fine is not None and groups(self.full, fine) is not None and groups(tuple(shape), fine) is not None:
            refine_group(self, fine)

    # -- building ---------------------------------------------------------------------------------
    def operand(self, ref: Ref, shape: tuple[int, ...], virtual: dict[int, Virtual]) -> Expr | LeafRef | None:
        """What a node iterating over `shape` reads through `ref`: the group's value, a
        constant, or a leaf. None: it cannot be read in this group."""
        gm = self.gmap(ref.layout, shape)
        if gm is None:
            return None
        return self.read(ref.buf, gm, ref.dtype, virtual)

    def read(self, buf: int, gm: GMap, dtype: str, virtual: dict[int, Virtual]) -> Expr | LeafRef | None:
        v = virtual.get(buf)
        if v is not None and v.kind == "const":
            return Const(v.start)
        if v is not None and v.kind == "iota":
            return LeafRef(None, GMap(tuple(s * v.step for s in gm.strides), v.start + v.step * gm.offset), dtype)
        if v is not None:
            return self._inline(v, gm, virtual)
        if buf in self.writes:
            made, expr, _ = self.writes[buf][-1]
            return expr if made == gm else None
        return LeafRef(buf, gm, dtype)

    def _inline(self, v: Virtual, gm: GMap, virtual: dict[int, Virtual]) -> Expr | None:
        """The producer's expression at the points `gm` reads (its operands followed back)."""
        assert v.node is not None and v.pw is not None
        out = v.node.outs[0]
        subs: list = []
        for operand in v.pw.operands:
            if isinstance(operand, IotaOperand):
                subs.append(LeafRef(None, GMap(tuple(s * operand.step for s in gm.strides),
                                               operand.start + operand.step * gm.offset), out.dtype))
                continue
            ref = v.node.ins[operand]
            try:
                lay = ref.layout.broadcast_to(out.shape)
            except ValueError:
                return None
            g2 = compose(gm, self.full, out.shape, lay)
            got = self.read(ref.buf, g2, ref.dtype, virtual) if g2 is not None else None
            if got is None:
                return None
            subs.append(got)
        return substitute(v.pw.expr, subs)

    def node_expr(self, node: Node, pw: Pointwise | None, virtual: dict[int, Virtual]) -> Expr | None:
        """The node's output as an expression over group values and LeafRefs, or None when
        the node cannot join this group."""
        if pw is None:                     # a reduction
            src = node.ins[0]
            arg = self.operand(src, src.shape, virtual) if src is not None else None
            if arg is None or self.level_of(src.shape) != "full":
                return None
            kind = prim_of(node).op
            n = math.prod(self.full[d] for d in self.rdims)
            if kind == "mean":
                return Op("mul", (Reduce("sum", arg), Const(1.0 / max(n, 1))))
            if kind in ("any", "all"):
                return Reduce("max" if kind == "any" else "min", Op("ne", (arg, Const(0.0))))
            if kind not in ("sum", "max", "min"):
                return None
            return Reduce(kind, arg)
        shape = node.outs[0].shape
        if self.level_of(shape) is None:
            return None
        subs: list[Expr | LeafRef] = []
        for operand in pw.operands:
            if isinstance(operand, IotaOperand):
                gm = self.gmap(Layout.dense(shape), shape)
                if gm is None:
                    return None
                subs.append(LeafRef(None, GMap(tuple(s * operand.step for s in gm.strides), operand.start),
                                    node.outs[0].dtype))
                continue
            ref = node.ins[operand]
            got = self.operand(ref, shape, virtual) if ref is not None else None
            if got is None:
                return None
            subs.append(got)
        return substitute(pw.expr, subs)

    def accepts(self, node: Node, pw: Pointwise | None, virtual: dict[int, Virtual]) -> Expr | None:
        if pw is not None:
            self.maybe_refine(tuple(node.outs[0].shape))
            return self._accepts_checked(node, pw, virtual)
        fine = tuple(node.ins[0].shape)
        if self.rdims or fine == self.full or groups(self.full, fine) is None:
            return self._accepts_checked(node, pw, virtual)
        # A reduction over a finer view of this pointwise group's space (a long row reduced
        # in chunks, long_rows.py: abs(x) then amax over x viewed as [rows, chunks, chunk]):
        # the group is re-expressed over that view so that the values reach the reduction in
        # UB instead of through GM; the group's state comes back when the node does not join.
        saved = (self.full, self.rdims, self.writes, self.exprs, self.reads)
        refine_group(self, fine)
        expr = self._accepts_checked(node, pw, virtual)
        if expr is None:
            self.full, self.rdims, self.writes, self.exprs, self.reads = saved
        return expr

    def _accepts_checked(self, node: Node, pw: Pointwise | None, virtual: dict[int, Virtual]) -> Expr | None:
        expr = self._accepts(node, pw, virtual)
        if expr is None or tree_size(expr) > MAX_TREE:
            return None
        rdims = self.rdims or (frozenset(reduce_dims(node)[0]) if pw is None else frozenset())
        if not self._reduced_axes_stay_one_run(rdims, [lf.gmap for lf in leaves_of(expr)]):
            return None
        if _int_arithmetic(node) and self.floats or _touches_floats(node) and self.int_arithmetic:
            # a tile program computes in one dtype: with a float in it, float32, whose
            # integers are exact only below 2^24 (int32 products and sums are not)
            return None
        return expr

    def _reduced_axes_stay_one_run(self, rdims: frozenset[int], new: list[GMap]) -> bool:
        """The tile kernel reduces over one run of memory: a read that walks the reduced axes
        in another pattern (group norm's per-channel weight, read inside a per-group
        reduction) splits the run, so it starts a new group instead of breaking this one."""
        red = [i for i in sorted(rdims) if self.full[i] > 1]
        if len(red) < 2:
            return True
        maps = [*new, *(m for ms in self.reads.values() for m in ms)]
        lead = next((m for m in maps if all(m.strides[i] for i in red)), None)
        if lead is None:
            return True
        red.sort(key=lambda i: -lead.strides[i])
        if self.row_mode:
            return all(_run(m, red, self.full) for m in maps)
        return all(_run(m, red, self.full) or seg_of(m, red, self.full) is not None for m in maps)

    def _accepts(self, node: Node, pw: Pointwise | None, virtual: dict[int, Virtual]) -> Expr | None:
        if pw is None:
            dims, _ = reduce_dims(node)
            if tuple(node.ins[0].shape) != self.full or (self.rdims and frozenset(dims) != self.rdims):
                return None
            if not self.rdims and any(groups(tuple(n.outs[0].shape), self.full) is None for n in self.nodes):
                return None         # every node so far covers the whole space (a finer view counts)
            saved = self.rdims
            self.rdims = frozenset(dims)
            expr = self.node_expr(node, None, virtual)
            self.rdims = saved
            return expr
        out = node.outs[0]
        expr = self.node_expr(node, pw, virtual)
        if expr is None:
            return None
        if self.row_mode and self.level_of(out.shape) == "full" and has_reduce(expr):
            return None              # row mode finishes after the last row: no second pass over the rows
        if node.inplace or out.buf in self.reads:
            # an in-place write must touch exactly what the group reads of that buffer
            gm = self.gmap(out.layout, out.shape)
            if gm is None or any(m != gm for m in self.reads.get(out.buf, ())):
                return None
        return expr

    def add(self, node: Node, expr: Expr, pw: Pointwise | None) -> None:
        if pw is None and not self.rdims:
            self.rdims = frozenset(reduce_dims(node)[0])
            self.row_mode = reduces_outer(node)
        out = node.outs[0]
        gm = self.gmap(out.layout, out.shape)
        assert gm is not None
        self.nodes.append(node)
        self.floats = self.floats or _touches_floats(node)
        self.int_arithmetic = self.int_arithmetic or _int_arithmetic(node)
        self.exprs[node.index] = expr
        self.writes.setdefault(out.buf, []).append((gm, expr, node))
        for leaf in leaves_of(expr):
            if leaf.buf is not None:
                self.reads.setdefault(leaf.buf, set()).add(leaf.gmap)


def _run(m: GMap, red: list[int], full: tuple[int, ...]) -> bool:
    return all(m.strides[a] == m.strides[b] * full[b] for a, b in zip(red, red[1:]))


# A segment's columns are whole 32 B blocks of float32, the dtype of a reducing program:
# the lowering applies a segment value with one instruction starting at the segment.
SEG_ALIGN = 8


def seg_of(m: GMap, red: list[int], full: tuple[int, ...]) -> tuple[int, int] | None:
    """A read that walks the reduced axes (outermost first, `red`) as one value per segment:
    stride 1 along the outer ones (one contiguous run), 0 along the inner ones (group norm's
    per-channel weight inside a (channels x positions) row). (segment length, 1), or None."""
    zero = [i for i, a in enumerate(red) if m.strides[a] == 0]
    p = len(red) - len(zero)
    if not zero or p == 0 or zero != list(range(p, len(red))) or m.strides[red[p - 1]] != 1:
        return None
    if not _run(m, red[:p], full):
        return None
    length = math.prod(full[a] for a in red[p:])
    return (length, 1) if length % SEG_ALIGN == 0 else None


# A group's expressions share the values they read (a recurrence's step t reads step t-1
# twice), but hashing, walking and lowering them see trees: past this many nodes a value is
# written to GM and read back by a new group instead of growing the tree further (a traced
# 4096-step recurrence otherwise doubles its tree every step and never compiles).
MAX_TREE = 512


def tree_size(expr, limit: int = MAX_TREE) -> int:
    """Nodes of `expr` seen as a tree (shared sub-expressions counted at every use), counted
    over its DAG once; stops counting past `limit`."""
    sizes: dict[int, int] = {}

    def size(e) -> int:
        got = sizes.get(id(e))
        if got is None:
            kids = e.args if isinstance(e, Op) else (e.arg,) if isinstance(e, Reduce) else ()
            got = 1
            for k in kids:
                got += size(k)
                if got > limit:
                    break
            sizes[id(e)] = got
        return got

    return size(expr)


_INTS = ("int64", "int32", "int16", "int8", "uint8")
_INT_ARITHMETIC = {"add", "sub", "mul", "neg", "cumsum", "sum", "remainder", "floor_divide"}


def _int_arithmetic(node: Node) -> bool:
    return node.op in _INT_ARITHMETIC and all(o.dtype in _INTS for o in node.outs)


def _touches_floats(node: Node) -> bool:
    return any(r is not None and r.dtype in FLOATS for r in [*node.ins, *node.outs])


def new_group(node: Node, pw: Pointwise | None) -> TileGroup:
    if pw is None:
        dims, _ = reduce_dims(node)
        return TileGroup(tuple(node.ins[0].shape), frozenset(dims), row_mode=reduces_outer(node))
    return TileGroup(tuple(node.outs[0].shape), frozenset())


def reduces_outer(node: Node) -> bool:
    """A reduction whose input's innermost axis in memory is kept: it reduces over rows."""
    src = node.ins[0]
    dims, _ = reduce_dims(node)
    axes = [d for d, n in enumerate(src.shape) if n > 1]
    kept = [d for d in axes if d not in dims]
    if not kept or not any(d in dims for d in axes):
        return False
    inner = min(axes, key=lambda d: (src.layout.strides[d], -d))
    return inner not in dims


def has_reduce(expr) -> bool:
    return any(isinstance(e, Reduce) for e in _walk(expr))


def _walk(expr):
    stack = [expr]
    while stack:
        e = stack.pop()
        yield e
        if isinstance(e, Op):
            stack.extend(e.args)
        elif isinstance(e, Reduce):
            stack.append(e.arg)


def substitute(expr: Expr, subs: list) -> Expr:
    if isinstance(expr, Inp):
        return subs[expr.index]
    if isinstance(expr, Op):
        return Op(expr.name, tuple(substitute(a, subs) for a in expr.args), expr.params)
    if isinstance(expr, Reduce):
        return Reduce(expr.kind, substitute(expr.arg, subs))
    return expr


def leaves_of(expr) -> list[LeafRef]:
    out: list[LeafRef] = []
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, LeafRef):
            out.append(e)
        elif isinstance(e, Op):
            stack.extend(e.args)
        elif isinstance(e, Reduce):
            stack.append(e.arg)
    return out
