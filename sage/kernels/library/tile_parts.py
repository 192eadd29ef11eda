"""The tile program's layout (tile size, buffers) and the text of its copies.

`plan_tile` decides how each tensor is copied (`tile_spec.load_plan`) and, once the
compute's temporaries are known, how many rows and columns a tile holds so that every
buffer fits in UB. `Emit` writes the copy-in, the preparation of each operand for the
compute (gathers, casts, scalar reads) and the copy-out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from sage.kernels.chain import Expr, Op, Reduce
from sage.kernels.library.knobs import UB_RESERVED, Knobs
from sage.kernels.library.casts import SCRATCH_SLOT_BYTES, cast_lines, hops
from sage.kernels.library.source import DTYPE_SIZE, dsl_dtype, ub_helpers
from sage.kernels.library.tile_round import rounded_lines, rounded_slots, rounded_store
from sage.kernels.library.tile_resident import ROW_TILES, loop_order, resident_leaves, resident_lines
from sage.kernels.library.tile_seg import seg_copy, seg_elems, seg_info, seg_shape
from sage.kernels.library.tile_split import constants as split_constants
from sage.kernels.library.tile_split import SPLIT_CHUNK_BYTES, narrow_hurts, row_parts
from sage.kernels.library.tile_spec import Access, Iota, TileSpec, leaf_kind, load_plan
from sage.kernels.lowering import Val
from sage.kernels.target import Target

SPAN_LIMIT = 8192          # elements of a span copy per tile row
MAX_ROWS = 255             # repeat-form instructions repeat once per row
CMP_PAD = 128              # comparisons work on whole 256 B repeats: buffers hold this much slack
GATHER_PLANS = ("span", "transposed", "elements", "col_strided")


def walk(e: Expr):
    yield e
    if isinstance(e, Op):
        for a in e.args:
            yield from walk(a)
    elif isinstance(e, Reduce):
        yield from walk(e.arg)


def _ceil(n: int, m: int) -> int:
    return -(-n // m) * m


def square_side(tile_len: int, align: int, cols: int) -> int | None:
    """Columns of a near-square tile of `tile_len` elements, or None. A transposing copy
    moves one burst per tile column (NR elements each) on one side and one per tile row on
    the other, so NR + NC bursts per tile: fewest when the tile is square (a 4 x 1024 tile
    of a float32 transpose moves 1024 bursts of 16 B; a 64 x 64 one, 128 bursts of 256 B).
    The last column chunk must keep the full chunk's UB pitch, because the gather tables
    are built once for the pitch S: cols % NC is 0 or rounds up to NC."""
    side = math.isqrt(tile_len)
    fits = [nc for nc in range(align, min(cols, 4 * side) + 1, align)
            if cols % nc == 0 or cols % nc > nc - align]
    return min(fits, key=lambda nc: abs(math.log(nc / side)), default=None)


def brcb_pad(nr: int) -> int:
    """32 B blocks of a Brcb temporary (one block per tile row): Brcb writes whole repeats of
    8 blocks, and readers take one block per row; one repeat of slack. (Sized like the
    comparison buffers before, 64-row multiples plus CMP_PAD blocks, it took 6 KB for a
    one-row tile: what a 10240-column group norm row lacked to fit UB.)"""
    return _ceil(nr, 8) + 8


def _pitch(n: int, es: int) -> int:
    """Elements of a UB row of n elements of es bytes, padded to the 32 B block."""
    return _ceil(n * es, 32) // es


@dataclass
class TileLayout:
    spec: TileSpec
    knobs: Knobs
    target: Target
    plans: dict[int, str] = field(default_factory=dict)
    out_plans: list[str] = field(default_factory=list)
    out_level: list[str] = field(default_factory=list)
    align: int = 8
    reduce: bool = False
    needs_ramp: bool = False
    bn: int = 2                 # buffers per queue (the knob, or 1 when two do not fit)
    nr: int = 1
    nc: int = 1
    s: int = 8
    cvt_slots: int = 0          # scratch slots for multi-step conversions (casts.py)
    # span leaves that read inside another leaf's span (a pooling window's neighbours): leaf ->
    # (the leaf whose copy brings its elements in, its offset from that leaf's, in elements)
    share: dict[int, tuple[int, int]] = field(default_factory=dict)
    # windowed leaves (Access.window): leaf -> (its host, the shift from its columns to the
    # host's, lo, hi); copied in UB out of the host's tile, never loaded
    windows: dict[int, tuple[int, int, int, int]] = field(default_factory=dict)
    # leaves copied once per change of their base into their own TBuf (tile_resident.py)
    resident: set[int] = field(default_factory=set)
    loop_order: list[int] = field(default_factory=list)
    # row mode: rows split across blocks (tile_split.py), into `parts` per column chunk
    split: bool = False
    accumulators: int = 0       # distinct reductions (row mode: one accumulator row each)
    parts: int = 1

    @property
    def es_c(self) -> int:
        return DTYPE_SIZE[self.spec.compute]

    def span_extra(self, i: int) -> int:
        """Elements leaf i's span copy brings in past its own last one, for its sharers."""
        return max((d for host, d in self.share.values() if host == i), default=0)

    def span_len(self, i: int, nc: int) -> int:
        """Elements of one row of leaf i's span copy."""
        _, sc = self.spec.strides_of(self.spec.leaves[i])
        return (nc - 1) * sc + 1 + self.span_extra(i)

    def loads(self, i: int) -> bool:
        """Leaf i is copied in by its own queue (not read from another leaf's span)."""
        return isinstance(self.spec.leaves[i], Access) and i not in self.share and i not in self.windows \
            and i not in self.resident

    def casts(self, i: int) -> bool:
        """Leaf i gets a compute-dtype copy (a cast, a gather target, or a V-written copy
        the scalar unit may read)."""
        leaf = self.spec.leaves[i]
        return isinstance(leaf, Access) and (leaf.dtype != self.spec.compute or self.plans[i] in GATHER_PLANS
                                             or self.plans[i] in ("col", "scalar", "seg") or i in self.windows)

    # -- sizing -------------------------------------------------------------------------------
    def size(self, made: dict[str, int], masked: bool, int_temp: bool) -> None:
        """Rows and columns per tile for the knobs; when not even one row fits with the
        knob's buffers, one buffer per queue (no double buffering) is tried before giving up."""
        try:
            self._size(made, masked, int_temp)
        except ValueError:
            if self.bn == 1:
                raise
            self.bn = 1
            self._size(made, masked, int_temp)

    def _size(self, made: dict[str, int], masked: bool, int_temp: bool) -> None:
        spec, knobs = self.spec, self.knobs
        budget = self.target.ub_bytes - UB_RESERVED
        cols = spec.cols
        # windowed leaves are copied out of their hosts' whole rows: no column tiles
        self.split, self.parts = False, 1
        persistent = self.reduce and not spec.reduce_rows or bool(self.windows) or "padded" in self.plans.values()
        nc = cols if persistent or cols <= knobs.tile_len else max(self.align, knobs.tile_len // self.align * self.align)
        if spec.reduce_rows:
            # a block takes whole column chunks: make enough of them for every core
            cores = knobs.block_dim or self.target.vector_cores
            loops = math.prod(spec.dims[a] for a in spec.loops)
            per = -(-cores // max(loops, 1))
            if per > 1:
                want = max(256 // self.es_c, _ceil(-(-cols // per), self.align))
                # narrow chunks, or the rows split across blocks (tile_split.py)
                self.split = knobs.row_split and want < nc and narrow_hurts(want, 32 // self.align) \
                    and row_parts(loops * -(-cols // nc), spec.rows, cores) > 1
                if self.split:
                    nc = min(nc, max(self.align, SPLIT_CHUNK_BYTES // self.es_c // self.align * self.align))
                else:
                    nc = min(nc, want)
        side = square_side(knobs.tile_len, self.align, cols) if self.transposes() and not persistent \
            and not spec.reduce_rows and spec.rows > 1 and cols > self.align else None
        square = side is not None
        if side is not None:
            nc = min(nc, side)
        while True:
            s = _ceil(nc, self.align)
            whole = nc >= cols or spec.reduce_rows or square
            nr = max(1, min(spec.rows, MAX_ROWS, knobs.tile_len // s)) if whole else 1
            while nr >= 1:
                if self._bytes(nr, nc, s, made, masked, int_temp) <= budget:
                    self.nr, self.nc, self.s = nr, nc, s
                    if self.split:
                        loops = math.prod(spec.dims[a] for a in spec.loops)
                        self.parts = row_parts(loops * -(-cols // nc), spec.rows, knobs.block_dim or self.target.vector_cores)
                    return
                nr = nr // 2 if nr > 1 else 0
            if persistent or nc <= self.align:
                raise ValueError(f"a tile row of {cols} columns does not fit in UB with the program's buffers")
            nc = max(self.align, nc // 2 // self.align * self.align)

    def transposes(self) -> bool:
        """A leaf or output crosses rows and columns: its GM bursts are tile columns, NR long."""
        return "transposed" in self.plans.values() or "transposed" in self.out_plans

    def _bytes(self, nr: int, nc: int, s: int, made: dict[str, int], masked: bool, int_temp: bool) -> int:
        spec, bn, csz = self.spec, self.bn, self.es_c
        tile = nr * s + CMP_PAD
        total = 0
        for i, leaf in enumerate(spec.leaves):
            if not isinstance(leaf, Access):
                continue
            es, plan = DTYPE_SIZE[leaf.dtype], self.plans[i]
            total += bn * self._leaf_bytes(i, plan, es, nr, nc, s) if self.loads(i) else 0
            total += self._leaf_bytes(i, plan, es, nr, nc, s) if i in self.resident else 0
            if self.casts(i):
                total += (seg_elems(spec, leaf, nr) if plan == "seg" else {
                    "row": s + CMP_PAD, "col": nr + CMP_PAD, "col_strided": nr + CMP_PAD, "scalar": 8}.get(plan, tile)) * csz
            if plan in GATHER_PLANS:
                total += (tile * 4 if self.loads(i) else 0) + tile * es
        for j, out in enumerate(spec.outputs):
            es, plan = DTYPE_SIZE[out.access.dtype], self.out_plans[j]
            total += bn * {"col": _ceil(nr, 64) + CMP_PAD, "col_strided": nr * 32 // es + 32,
                           "transposed": nc * _pitch(nr, es), "elements": nr * nc * 32 // es}.get(plan, tile) * es
            if plan in ("transposed", "elements", "col_strided"):
                total += tile * es + 4 * {"transposed": nc * _pitch(nr, es), "elements": nr * nc * 32 // es,
                                          "col_strided": nr * 32 // es}[plan]
        total += made.get("full", 0) * tile * csz + made.get("row", 0) * (s + CMP_PAD) * csz
        total += made.get("col", 0) * (_ceil(nr, 64) + CMP_PAD) * csz
        total += made.get("brcb", 0) * brcb_pad(nr) * 32
        if spec.reduce_rows:
            total += (s + CMP_PAD) * csz * self.accumulators
        if self.split:
            total += 2 * (s + CMP_PAD) * csz     # the workspace rows' queue
        total += (tile // 8 + 64) if masked else 0
        total += tile * 4 if int_temp else 0
        total += self.cvt_slots * tile * SCRATCH_SLOT_BYTES
        if self.needs_ramp:
            total += (max(s, nr, nc) + 64) * (4 + csz)  # index ramps
        n_bufs = 4 * (len(spec.leaves) + len(spec.outputs)) + sum(made.values()) + 4
        return total + 32 * n_bufs

    def _leaf_bytes(self, i: int, plan: str, es: int, nr: int, nc: int, s: int) -> int:
        leaf = self.spec.leaves[i]
        assert isinstance(leaf, Access)
        _, sc = self.spec.strides_of(leaf)
        if plan == "seg":
            return seg_elems(self.spec, leaf, nr) * es
        return {"rows": nr * s + CMP_PAD, "row_loop": nr * s + CMP_PAD, "row": s + CMP_PAD, "padded": nr * s + CMP_PAD,
                "col": _ceil(nr, 64) + CMP_PAD, "col_strided": nr * 32 // es + 32, "scalar": 32 // es,
                "span": nr * _pitch(self.span_len(i, nc), es), "transposed": nc * _pitch(nr, es),
                "elements": nr * nc * 32 // es}[plan] * es

    def constants(self, knobs: Knobs, target: Target, work_items: bool = False) -> list[str]:
        """Module constants; with `work_items` a block's unit of work is a column chunk
        with all its rows (row-mode reductions), else one tile."""
        spec = self.spec
        n_ct, n_rt = -(-spec.cols // self.nc), -(-spec.rows // self.nr)
        loops = math.prod(spec.dims[a] for a in spec.loops)
        if work_items:
            n_rt = self.parts
        return [f"BUFFER_NUM = {self.bn}", f"CORES = {target.vector_cores}", f"BLOCK_DIM = {knobs.block_dim}",
                f"ALIGN = {self.align}", f"LANES = {256 // self.es_c}", f"EPB = {32 // self.es_c}",
                f"C = {spec.cols}", f"DR = {spec.rows}", f"NC = {self.nc}", f"NR = {self.nr}", f"S = {self.s}",
                f"N_CT = {n_ct}", f"N_RT = {-(-spec.rows // self.nr)}", f"T = {loops * n_ct * n_rt}",
                f"CMP_PAD = {CMP_PAD}", f"TILE_ELEMS = {self.nr * self.s + CMP_PAD}", f"S_PAD = {self.s + CMP_PAD}",
                f"NR_PAD = {_ceil(self.nr, 64) + CMP_PAD}", f"BRCB_PAD = {brcb_pad(self.nr)}", f"RAMP = {max(self.s, self.nr, self.nc) + 64}"
                ] + (split_constants(self.parts, spec.rows, loops * n_ct, self.nc, self.es_c) if self.parts > 1 else [])


def plan_tile(spec: TileSpec, knobs: Knobs, target: Target) -> TileLayout:
    lay = TileLayout(spec, knobs, target, bn=knobs.buffer_num)
    sizes = [DTYPE_SIZE[spec.compute]] + [DTYPE_SIZE[l.dtype] for l in spec.leaves if isinstance(l, Access)]
    sizes += [DTYPE_SIZE[o.access.dtype] for o in spec.outputs]
    lay.align = target.block_bytes // min(sizes)
    reduces: list[Expr] = []
    for e in (e for o in spec.outputs for e in walk(o.expr) if isinstance(e, Reduce)):
        if e not in reduces:
            reduces.append(e)
    lay.reduce, lay.accumulators = bool(reduces), len(reduces)
    for i, leaf in enumerate(spec.leaves):
        if isinstance(leaf, Access):
            lay.plans[i] = load_plan(spec, leaf, spec.cols, SPAN_LIMIT)
    lay.share = shared_spans(spec, lay.plans)
    lay.windows = window_hosts(spec)
    for i in lay.windows:
        lay.plans[i] = "window"
    skip = {*lay.share, *lay.windows}
    lay.loop_order = loop_order(spec, lay.plans, knobs.tile_len)
    lay.resident = resident_leaves(spec, lay.plans, lay.loop_order, knobs.tile_len, skip)
    if not lay.resident:          # no leaf gains from another order: the spec's own
        lay.loop_order = list(spec.loops) + ([] if spec.reduce_rows else [ROW_TILES])
        lay.resident = resident_leaves(spec, lay.plans, lay.loop_order, knobs.tile_len, skip)
    for out in spec.outputs:
        sr, sc = spec.strides_of(out.access)
        if sc == 0:
            lay.out_level.append("col")
            lay.out_plans.append("col" if sr in (0, 1) else "col_strided")
        else:
            lay.out_level.append("full")
            plan = "rows" if sc == 1 and (sr >= spec.cols or sr == 0) else \
                "row_loop" if sc == 1 else "transposed" if sr == 1 and sc >= spec.rows else "elements"
            lay.out_plans.append(plan)
    ct = spec.compute
    lay.cvt_slots = max([hops(leaf.dtype, ct) for i, leaf in enumerate(spec.leaves)
                         if isinstance(leaf, Access) and leaf.dtype != ct]
                        + [hops(ct, o.access.dtype) for o in spec.outputs if o.access.dtype != ct] + [0])
    lay.needs_ramp = any(p in GATHER_PLANS for p in lay.plans.values()) or \
        any(p in ("transposed", "elements", "col_strided") for p in lay.out_plans) or \
        any(isinstance(leaf, Iota) for leaf in spec.leaves)
    if lay.needs_ramp and ct != "int32":
        lay.cvt_slots = max(lay.cvt_slots, hops("int32", ct))
    for o in spec.outputs:
        if rounded_store(o.expr, ct, o.access.dtype) is not None:
            lay.cvt_slots = max(lay.cvt_slots, rounded_slots(o.access.dtype))
    return lay


def shared_spans(spec: TileSpec, plans: dict[int, str]) -> dict[int, tuple[int, int]]:
    """Span leaves of one tensor with the same strides whose elements sit a little after
    another's (the taps of a strided pooling window: x[2i] and x[2i + 1], and the next input
    row's x[W + 2i]): each reads out of the first one's span, made that much longer, instead
    of copying its own. One copy then moves each input byte once, not once per tap, in
    fewer and longer bursts (CANN: bandwidth grows with the bytes of one copy). A tap joins
    while the longer span stays inside one row stride and reads no more elements than the
    taps' own spans would (a tap far away starts its own copy)."""
    share: dict[int, tuple[int, int]] = {}
    runs: dict[tuple, list[int]] = {}
    for i, leaf in enumerate(spec.leaves):
        if plans.get(i) == "span":
            assert isinstance(leaf, Access)
            runs.setdefault((leaf.arg, leaf.dtype, leaf.strides), []).append(i)
    for members in runs.values():
        host = None
        taps = 0
        for i in sorted(members, key=lambda k: spec.leaves[k].offset):
            sr, sc = spec.strides_of(spec.leaves[i])
            own = (spec.cols - 1) * sc + 1
            if host is not None:
                d = spec.leaves[i].offset - spec.leaves[host].offset
                span = own + max([d, *(e for h, e in share.values() if h == host)])
                if span <= min(sr, SPAN_LIMIT) and (d <= sc or span <= (taps + 1) * own):
                    share[i] = (host, d)
                    taps += 1
                    continue
            host, taps = i, 1
    return share


def window_hosts(spec: TileSpec) -> dict[int, tuple[int, int, int, int]]:
    """Each windowed leaf's host: a leaf of the same buffer, dtype and strides without a
    window, whose row holds the window shifted by the offsets' difference (in columns) from
    a 32 B block on (colsel.py checks that one exists)."""
    out: dict[int, tuple[int, int, int, int]] = {}
    for i, leaf in enumerate(spec.leaves):
        if not isinstance(leaf, Access) or leaf.window is None or leaf.fill is not None:
            continue
        lo, hi = leaf.window
        _, sc = spec.strides_of(leaf)
        for h, host in enumerate(spec.leaves):
            if not isinstance(host, Access) or host.window is not None or host.arg != leaf.arg \
                    or host.dtype != leaf.dtype or host.strides != leaf.strides:
                continue
            d = leaf.offset - host.offset
            if sc > 0 and d % sc == 0 and 0 <= lo + d // sc and hi + d // sc <= spec.cols:
                out[i] = (h, d // sc, lo, hi)
                break
        else:
            raise ValueError(f"windowed leaf {i} has no leaf of its buffer to be copied from")
    return out


def _scratch(slot: int, dtype: str) -> str:
    """Intermediate `slot` of a conversion chain, viewed as `dtype`."""
    return f"self.cvt.Get({dsl_dtype(dtype)})[{slot} * TILE_ELEMS * {SCRATCH_SLOT_BYTES // DTYPE_SIZE[dtype]}]"


class Emit:
    """The copy and preparation code of a tile program."""

    def __init__(self, spec: TileSpec, lay: TileLayout) -> None:
        self.spec, self.lay = spec, lay
        self.base_of: dict[tuple[str, int], int] = {}
        for i, leaf in enumerate(spec.leaves):
            self.base_of[("leaf", i)] = len(self.base_of)
        for j in range(len(spec.outputs)):
            self.base_of[("out", j)] = len(self.base_of)
        for j in range(len(spec.outputs)):
            self.base_of[("guard", j)] = len(self.base_of)

    def bases(self) -> list[str]:
        spec = self.spec
        out = []
        items = list(spec.leaves) + [o.access for o in spec.outputs]
        for item in items:
            strides = item.strides if isinstance(item, Access) else item.coefs
            terms = [str(item.offset)] + [f"i{a} * {strides[a]}" for a in spec.loops if strides[a]]
            sr, sc = spec.strides_of(item)
            terms += [f"j0 * {sr}"] if sr else []
            terms += [f"c0 * {sc}"] if sc else []
            out.append(" + ".join(terms))
        for o in spec.outputs:               # whether this tile stores each output (see _guard)
            cond = self._guard(o.access)
            out.append(f"(1 if {cond} else 0)" if cond else "1")
        return out

    def _b(self, what: str, i: int) -> str:
        return f"bs[{self.base_of[(what, i)]}]"

    # -- Init ------------------------------------------------------------------------------
    def init_buffers(self) -> list[str]:
        spec, lay = self.spec, self.lay
        body: list[str] = []
        for i, leaf in enumerate(spec.leaves):
            if not isinstance(leaf, Access):
                continue
            es, plan = DTYPE_SIZE[leaf.dtype], lay.plans[i]
            if lay.loads(i):
                nbytes = lay._leaf_bytes(i, plan, es, lay.nr, lay.nc, lay.s)
                body += [f"self.q{i} = TQue(TPosition.VECIN, BUFFER_NUM)",
                         f"self.pipe.InitBuffer(self.q{i}, BUFFER_NUM, {_ceil(nbytes, 32)})"]
            if i in lay.resident:
                nbytes = lay._leaf_bytes(i, plan, es, lay.nr, lay.nc, lay.s)
                body += [f"self.r{i} = TBuf(TPosition.VECIN)", f"self.pipe.InitBuffer(self.r{i}, {_ceil(nbytes, 32)})",
                         f"self.last{i} = -1"]
            if lay.casts(i):
                count = {"row": "S_PAD", "col": "NR_PAD", "col_strided": "NR_PAD", "scalar": "8"}.get(plan, "TILE_ELEMS")
                count = str(seg_elems(spec, leaf, lay.nr)) if plan == "seg" else count
                body += [f"self.b{i} = TBuf(TPosition.VECCALC)",
                         f"self.pipe.InitBuffer(self.b{i}, buf_bytes({count}, {lay.es_c}))"]
            if plan in GATHER_PLANS:
                body += [f"self.ob{i} = TBuf(TPosition.VECCALC)", f"self.pipe.InitBuffer(self.ob{i}, buf_bytes(TILE_ELEMS, 4))"] \
                    if lay.loads(i) else []
                body += [f"self.gb{i} = TBuf(TPosition.VECCALC)", f"self.pipe.InitBuffer(self.gb{i}, buf_bytes(TILE_ELEMS, {es}))"]
        for j, out in enumerate(spec.outputs):
            es, plan = DTYPE_SIZE[out.access.dtype], lay.out_plans[j]
            count = {"col": _ceil(lay.nr, 64) + CMP_PAD, "col_strided": lay.nr * 32 // es + 32,
                     "transposed": lay.nc * _pitch(lay.nr, es), "elements": lay.nr * lay.nc * 32 // es}.get(
                plan, lay.nr * lay.s + CMP_PAD)
            body += [f"self.qo{j} = TQue(TPosition.VECOUT, BUFFER_NUM)",
                     f"self.pipe.InitBuffer(self.qo{j}, BUFFER_NUM, {_ceil(count * es, 32)})"]
            if plan in ("transposed", "elements", "col_strided"):
                table = {"transposed": lay.nc * _pitch(lay.nr, es), "elements": lay.nr * lay.nc * 32 // es,
                         "col_strided": lay.nr * 32 // es}[plan]
                body += [f"self.oo{j} = TBuf(TPosition.VECCALC)", f"self.pipe.InitBuffer(self.oo{j}, {_ceil(table * 4, 32)})",
                         f"self.yb{j} = TBuf(TPosition.VECCALC)", f"self.pipe.InitBuffer(self.yb{j}, buf_bytes(TILE_ELEMS, {es}))"]
        if lay.cvt_slots:
            body += ["self.cvt = TBuf(TPosition.VECCALC)",
                     f"self.pipe.InitBuffer(self.cvt, buf_bytes({lay.cvt_slots} * TILE_ELEMS, {SCRATCH_SLOT_BYTES}))"]
        if self._needs_ramp():
            body += ["self.rampb = TBuf(TPosition.VECCALC)", "self.pipe.InitBuffer(self.rampb, buf_bytes(RAMP, 4))",
                     "self.rampc = TBuf(TPosition.VECCALC)", f"self.pipe.InitBuffer(self.rampc, buf_bytes(RAMP, {lay.es_c}))"]
        for i, leaf in enumerate(spec.leaves):
            if isinstance(leaf, Iota) and leaf_kind(spec, leaf) in ("full", "row", "col"):
                body += [f"self.ib{i} = TBuf(TPosition.VECCALC)", f"self.pipe.InitBuffer(self.ib{i}, buf_bytes(RAMP, {lay.es_c}))"]
        return body

    def _needs_ramp(self) -> bool:
        return self.lay.needs_ramp

    def init_tables(self, ct: str) -> list[str]:
        """Index ramps, gather offsets and the Iota leaves' coefficient ramps, built once."""
        if not self._needs_ramp():
            return []
        spec, lay = self.spec, self.lay
        body = ["ramp = self.rampb.Get(int32)", "make_ramp(ramp, RAMP)",
                "rampc = self.rampc.Get(" + dsl_dtype(ct) + ")"]
        body += cast_lines("rampc", "ramp", "int32", ct, "RAMP", _scratch) if ct != "int32" else \
            ["Adds(rampc, ramp, 0, RAMP)"]
        for i, leaf in enumerate(spec.leaves):
            plan = lay.plans.get(i)
            if plan in GATHER_PLANS:
                assert isinstance(leaf, Access)
                es = DTYPE_SIZE[leaf.dtype]
                _, sc = spec.strides_of(leaf)
                if i in lay.share:
                    continue                   # it reads its host's span through the host's table
                if plan == "span":
                    pitch = _pitch(lay.span_len(i, lay.nc), es)
                    a, b = pitch * es, sc * es
                elif plan == "transposed":
                    a, b = es, _pitch(lay.nr, es) * es
                elif plan == "elements":
                    a, b = lay.nc * 32, 32
                else:          # col_strided: one value per 32 B block
                    a, b = 32, 0
                rows, cols = (1, "NR") if plan == "col_strided" else ("NR", "NC")
                stride = "S" if plan != "col_strided" else "0"
                table_a, table_b = (b, a) if plan == "col_strided" else (a, b)
                body.append(f"offsets(self.ob{i}.Get(int32), ramp, {rows}, {cols}, {table_a}, {table_b}, {stride})")
        for j, out in enumerate(spec.outputs):
            plan = lay.out_plans[j]
            es = DTYPE_SIZE[out.access.dtype]
            if plan == "transposed":    # dst c * TP + r  <-  src r * S + c
                body.append(f"offsets(self.oo{j}.Get(int32), ramp, NC, NR, {es}, S * {es}, {_pitch(lay.nr, es)})")
            elif plan in ("elements", "col_strided"):   # one source element per 32 B block
                per = 32 // es
                rows, cols, a = (lay.nr, lay.nc, lay.s * es) if plan == "elements" else (1, lay.nr, 0)
                body.append(f"spread(self.oo{j}.Get(int32), {rows}, {cols}, {a}, {es}, {per})")
        for i, leaf in enumerate(spec.leaves):
            if isinstance(leaf, Iota) and leaf_kind(spec, leaf) in ("full", "row", "col"):
                sr, sc = spec.strides_of(leaf)
                coef = sc if leaf_kind(spec, leaf) in ("full", "row") else sr
                body.append(f"Muls(self.ib{i}.Get({dsl_dtype(ct)}), rampc, {coef}, RAMP)")
        return body

    # -- CopyIn ------------------------------------------------------------------------------
    def copy_in(self, only: set[int] | None = None) -> list[str]:
        spec, lay = self.spec, self.lay
        body: list[str] = []
        if only is not None:      # a sharer's elements arrive with its host's copy
            only = only | {lay.share[i][0] for i in only if i in lay.share} | \
                {lay.windows[i][0] for i in only if i in lay.windows}
        for i, leaf in enumerate(spec.leaves):
            if not lay.loads(i) or (only is not None and i not in only):
                continue
            dt = dsl_dtype(leaf.dtype)
            body.append(f"x = self.q{i}.AllocTensor({dt})")
            body += self.copy_lines(i)
            body.append(f"self.q{i}.EnQue(x)")
        return body or ["pass"]

    def copy_lines(self, i: int) -> list[str]:
        """The copy of leaf i's tile from GM into the UB tensor `x`."""
        spec, lay = self.spec, self.lay
        leaf = spec.leaves[i]
        assert isinstance(leaf, Access)
        copy_auto = lay.knobs.copy_mode == "auto"
        es, plan = DTYPE_SIZE[leaf.dtype], lay.plans[i]
        sr, sc = spec.strides_of(leaf)
        g, b = f"self.g_{leaf.arg}", self._b("leaf", i)
        pad = "DataCopyPadExtParams(False, 0, 0, 0)"
        body: list[str] = []
        if plan == "rows":
            line = (f"DataCopyPad(x, {g}[{b}], DataCopyExtParams(nr, nc * {es}, ({sr} - nc) * {es}, "
                    f"row_gap(nc, {es}), 0), {pad})")
            if copy_auto:
                body += [f"if (nc * {es}) % 32 == 0 and (nr == 1 or (nc == {sr} and nc % ALIGN == 0)):",
                         f"    DataCopy(x, {g}[{b}], nr * nc)", "else:", f"    {line}"]
            else:
                body.append(line)
        elif plan == "row_loop":
            body += ["s = (nc + ALIGN - 1) // ALIGN * ALIGN", "for r in range(nr):",
                     f"    DataCopyPad(x[r * s], {g}[{b} + r * {sr}], DataCopyExtParams(1, nc * {es}, 0, 0, 0), {pad})"]
        elif plan == "row":
            body.append(f"DataCopyPad(x, {g}[{b}], DataCopyExtParams(1, nc * {es}, 0, 0, 0), {pad})")
        elif plan == "col":
            body.append(f"DataCopyPad(x, {g}[{b}], DataCopyExtParams(1, nr * {es}, 0, 0, 0), {pad})")
        elif plan == "col_strided":
            body.append(f"DataCopyPad(x, {g}[{b}], DataCopyExtParams(nr, {es}, {(sr - 1) * es}, 0, 0), {pad})")
        elif plan == "scalar":
            body.append(f"DataCopyPad(x, {g}[{b}], DataCopyExtParams(1, {es}, 0, 0, 0), {pad})")
        elif plan == "seg":
            body += seg_copy(spec, leaf, g, b, pad)
        elif plan == "padded":
            # the window's elements, the fill on both sides as the copy's own padding
            assert leaf.window is not None and sc == 1
            lo, hi = leaf.window
            body.append(f"DataCopyPad(x, {g}[{b} + {lo}], DataCopyExtParams(nr, {(hi - lo) * es}, {(sr - (hi - lo)) * es}, "
                        f"gap_to({spec.cols * es}, S * {es}), 0), DataCopyPadExtParams(True, {lo}, {spec.cols - hi}, "
                        f"{leaf.fill!r}))")
        elif plan == "span":
            pitch = _pitch(lay.span_len(i, lay.nc), es)
            body += [f"span = (nc - 1) * {sc} + {1 + lay.span_extra(i)}",
                     f"DataCopyPad(x, {g}[{b}], DataCopyExtParams(nr, span * {es}, ({sr} - span) * {es}, "
                     f"gap_to(span * {es}, {pitch * es}), 0), {pad})"]
        elif plan == "transposed":
            tp = _pitch(lay.nr, es)
            body.append(f"DataCopyPad(x, {g}[{b}], DataCopyExtParams(nc, nr * {es}, ({sc} - nr) * {es}, "
                        f"gap_to(nr * {es}, {tp * es}), 0), {pad})")
        else:   # elements: each element in its own 32 B block
            rows = "nr" if sr else "1"
            body += [f"for r in range({rows}):",
                     f"    DataCopyPad(x[r * NC * {32 // es}], {g}[{b} + r * {sr}], "
                     f"DataCopyExtParams(nc, {es}, {(sc - 1) * es}, 0, 0), {pad})"]
        return body

    # -- Compute: operands ready for the lowering ------------------------------------------------
    def prepare(self, i: int, leaf: Access | Iota, ready: dict[int, Val] | None = None) -> tuple[Val, list[str], list[str]]:
        """(the operand as the lowering sees it, lines, scalar reads to run after a V->S flag);
        `ready`: the leaves prepared before (a windowed leaf's host)."""
        spec, lay = self.spec, self.lay
        ct = spec.compute
        kind = leaf_kind(spec, leaf)
        if isinstance(leaf, Iota):
            return self._iota(i, leaf, kind)
        if i in lay.windows:
            assert ready is not None
            return self._window(i, kind, ready[lay.windows[i][0]].ref)
        plan, dt = lay.plans[i], dsl_dtype(leaf.dtype)
        count = {"full": "n", "row": "nc", "col": "nr", "scalar": "1"}[kind]
        if plan == "seg":
            _, _, pitch, rows = seg_shape(spec, leaf)
            count = f"{rows} * {pitch}"
        if i in lay.resident:
            return self._resident(i, kind, count)
        # a sharer gathers out of its host's span (dequeued first, see `prepare_order`), shifted
        host, shift = lay.share.get(i, (i, 0))
        lines = [f"x{i} = self.q{i}.DeQue({dt})"] if host == i else []
        src = f"x{i}"
        if plan in GATHER_PLANS:
            n_gather = "nr" if plan == "col_strided" else "nr * s" if kind == "full" else "s"
            lines += [f"g{i} = self.gb{i}.Get({dt})",
                      f"Gather(g{i}, x{host}, self.ob{host}.Get(int32), {shift * DTYPE_SIZE[leaf.dtype]}, {n_gather})"]
            src = f"g{i}"
        if not lay.casts(i):
            return Val(kind, src), lines, []
        lines.append(f"c{i} = self.b{i}.Get({dsl_dtype(ct)})")
        if leaf.dtype != ct:
            lines += cast_lines(f"c{i}", src, leaf.dtype, ct, count, _scratch)
        else:
            lines.append(f"Adds(c{i}, {src}, 0, {count})")
        if kind == "scalar":
            return Val("scalar", f"sv{i}"), lines, [f"sv{i} = c{i}.GetValue(0)"]
        return Val(kind, f"c{i}"), lines, []

    def segs(self) -> dict[str, tuple[int, int, int]]:
        """The prepared segment leaves, as the lowering reads them (tile_seg.py)."""
        return {f"c{i}": seg_info(self.spec, leaf) for i, leaf in enumerate(self.spec.leaves)
                if isinstance(leaf, Access) and self.lay.plans.get(i) == "seg"}

    def _resident(self, i: int, kind: str, count: str) -> tuple[Val, list[str], list[str]]:
        leaf = self.spec.leaves[i]
        assert isinstance(leaf, Access)
        ct, dt = self.spec.compute, dsl_dtype(leaf.dtype)
        lines = [f"x{i} = self.r{i}.Get({dt})"]
        convert: list[str] = []
        ref = f"x{i}"
        if self.lay.casts(i):
            ref = f"c{i}"
            lines.append(f"c{i} = self.b{i}.Get({dsl_dtype(ct)})")
            convert = cast_lines(ref, f"x{i}", leaf.dtype, ct, count, _scratch) if leaf.dtype != ct else \
                [f"Adds({ref}, x{i}, 0, {count})"]
        lines += resident_lines(i, self._b("leaf", i), self.copy_lines(i), convert)
        if kind == "scalar":
            return Val("scalar", f"sv{i}"), lines, [f"sv{i} = {ref}.GetValue(0)"]
        return Val(kind, ref), lines, []

    def _window(self, i: int, kind: str, host: str) -> tuple[Val, list[str], list[str]]:
        """A windowed leaf: zeros, and over its window its host's tile `shift` columns on,
        every row at once (one instruction per 256 B of the window)."""
        _, shift, lo, hi = self.lay.windows[i]
        ct = self.spec.compute
        zero = "0" if ct == "int32" else "0.0"
        rows, count = ("nr", "n") if kind == "full" else ("1", "nc")
        return Val(kind, f"c{i}"), [
            f"c{i} = self.b{i}.Get({dsl_dtype(ct)})", f"Duplicate(c{i}, {zero}, {count})",
            f"for k in range(0, {hi - lo}, LANES):",
            f"    Adds(c{i}[{lo} + k], {host}[{lo + shift} + k], 0, min(LANES, {hi - lo} - k), {rows}, "
            "UnaryRepeatParams(1, 1, s // EPB, s // EPB))"], []

    def _iota(self, i: int, leaf: Iota, kind: str) -> tuple[Val, list[str], list[str]]:
        b = self._b("leaf", i)
        sr, _ = self.spec.strides_of(leaf)
        if kind == "scalar":
            return Val("scalar", f"({b})"), [], []
        ct = dsl_dtype(self.spec.compute)
        buf = f"self.ib{i}.Get({ct})"
        # named apart from the Lowerer's scalar temporaries (v0, v1, ...): a scalar sub-expression
        # of the same program must not overwrite the ramp
        if kind == "full":
            # the column ramp (times its coefficient) plus each row's start
            lines = [f"iota{i} = self.tb_iota{i}.Get({ct})", "for r in range(nr):",
                     f"    Adds(iota{i}[r * s], {buf}, {b} + r * {sr}, nc)"]
        else:
            lines = [f"iota{i} = self.tb_iota{i}.Get({ct})",
                     f"Adds(iota{i}, {buf}, {b}, {'nc' if kind == 'row' else 'nr'})"]
        return Val(kind, f"iota{i}"), lines, []

    def iota_buffers(self) -> list[str]:
        spec, lay = self.spec, self.lay
        body = []
        for i, leaf in enumerate(spec.leaves):
            if isinstance(leaf, Iota) and leaf_kind(spec, leaf) != "scalar":
                count = "TILE_ELEMS" if leaf_kind(spec, leaf) == "full" else "RAMP"
                body += [f"self.tb_iota{i} = TBuf(TPosition.VECCALC)",
                         f"self.pipe.InitBuffer(self.tb_iota{i}, buf_bytes({count}, {lay.es_c}))"]
        return body

    # -- results --------------------------------------------------------------------------------
    def store(self, j: int, acc: Access, ref: str, level: str, mode: str | None = None) -> list[str]:
        """Output j from `ref`, converted to its dtype (`mode`: the rounding of a float -> int32 cast)."""
        spec, lay = self.spec, self.lay
        ct, od = spec.compute, acc.dtype
        dt, es = dsl_dtype(od), DTYPE_SIZE[od]
        plan = lay.out_plans[j]
        count = "nr" if level == "col" else "n"
        target = f"y{j}" if plan in ("rows", "row_loop", "col") else f"z{j}"
        lines = [f"y{j} = self.qo{j}.AllocTensor({dt})"]
        if target != f"y{j}":
            lines.append(f"z{j} = self.yb{j}.Get({dt})")
        if mode is not None:
            lines += rounded_lines(target, ref, od, mode, count, _scratch)
        elif od != ct:
            lines += cast_lines(target, ref, ct, od, count, _scratch)
        else:
            lines.append(f"Adds({target}, {ref}, 0, {count})")
        if target != f"y{j}":
            n_out = {"transposed": f"NC * {_pitch(lay.nr, es)}", "elements": f"NR * NC * {32 // es}",
                     "col_strided": f"NR * {32 // es}"}[plan]
            lines.append(f"Gather(y{j}, z{j}, self.oo{j}.Get(int32), 0, {n_out})")
        lines.append(f"self.qo{j}.EnQue(y{j})")
        return lines

    def prepare_order(self, used: set[int]) -> list[int]:
        """The leaves a phase prepares: the used ones and the hosts of used sharers, hosts first."""
        share = self.lay.share
        windows = self.lay.windows
        leaves = used | {share[i][0] for i in used if i in share} | {windows[i][0] for i in used if i in windows}
        return sorted(leaves, key=lambda i: (i in share or i in windows, i))

    def free_leaves(self, leaves: list[int]) -> list[str]:
        return [f"self.q{i}.FreeTensor(x{i})" for i in leaves if self.lay.loads(i)]

    def copy_out(self, only: set[int] | None = None) -> list[str]:
        spec, lay = self.spec, self.lay
        body: list[str] = []
        for j, out in enumerate(spec.outputs):
            if only is not None and j not in only:
                continue
            acc = out.access
            es, plan, dt = DTYPE_SIZE[acc.dtype], lay.out_plans[j], dsl_dtype(acc.dtype)
            sr, sc = spec.strides_of(acc)
            g, b = f"self.g_{acc.arg}", self._b("out", j)
            guard = self._guard(acc)
            rows = "1" if sr == 0 else "nr"
            body.append(f"y = self.qo{j}.DeQue({dt})")
            ind = "    " if guard else ""
            if guard:
                body.append(f"if {self._b('guard', j)}:")
            if plan == "rows":
                body.append(f"{ind}DataCopyPad({g}[{b}], y, DataCopyExtParams({rows}, nc * {es}, row_gap(nc, {es}), "
                            f"({sr} - nc) * {es}, 0))")
            elif plan == "row_loop":
                body += [f"{ind}s = (nc + ALIGN - 1) // ALIGN * ALIGN", f"{ind}for r in range(nr):",
                         f"{ind}    DataCopyPad({g}[{b} + r * {sr}], y[r * s], DataCopyExtParams(1, nc * {es}, 0, 0, 0))"]
            elif plan == "col":
                body.append(f"{ind}DataCopyPad({g}[{b}], y, DataCopyExtParams(1, {rows} * {es}, 0, 0, 0))")
            elif plan == "col_strided":
                body.append(f"{ind}DataCopyPad({g}[{b}], y, DataCopyExtParams(nr, {es}, 0, {(sr - 1) * es}, 0))")
            elif plan == "transposed":
                tp = _pitch(lay.nr, es)
                body.append(f"{ind}DataCopyPad({g}[{b}], y, DataCopyExtParams(nc, nr * {es}, gap_to(nr * {es}, "
                            f"{tp * es}), ({sc} - nr) * {es}, 0))")
            else:
                body += [f"{ind}for r in range({rows}):",
                         f"{ind}    DataCopyPad({g}[{b} + r * {sr}], y[r * NC * {32 // es}], "
                         f"DataCopyExtParams(nc, {es}, 0, {(sc - 1) * es}, 0))"]
            body.append(f"self.qo{j}.FreeTensor(y)")
        return body

    def _guard(self, acc: Access) -> str:
        """Tiles that would write what another tile writes (the output does not vary along a
        loop axis, or along the columns of a column-tiled row) store nothing."""
        spec = self.spec
        conds = [f"i{a} == 0" for a in spec.loops if acc.strides[a] == 0 and spec.dims[a] > 1]
        sr, sc = spec.strides_of(acc)
        if sr == 0 and spec.rows > 1:
            conds.append("j0 == 0")
        if sc == 0 and self.lay.nc < spec.cols:
            conds.append("c0 == 0")
        return " and ".join(conds)

    def helpers(self) -> str:
        return ub_helpers(32) + _HELPERS


_HELPERS = '''
def gap_to(nbytes, pitch):
    # the UB gap, in 32 B blocks, that puts rows of nbytes at a pitch of `pitch` bytes
    return (pitch - (nbytes + 31) // 32 * 32) // 32


def make_ramp(ramp, count):
    # ramp[i] = i: eight values by the scalar unit, then doubling vector adds
    for i in range(8):
        ramp.SetValue(i, i)
    SetFlag(HardEvent.S_V, 0)
    WaitFlag(HardEvent.S_V, 0)
    k = 8
    while k < count:
        Adds(ramp[k], ramp, k, min(k, count - k))
        k = k * 2


def offsets(off, ramp, rows, cols, a, b, pitch):
    # off[r * pitch + c] = r * a + c * b (bytes), for r < rows and c < cols; 0 in the padding
    Duplicate(off, 0, max(rows * pitch, cols))
    Muls(off, ramp, b, cols)
    for r in range(1, rows):
        Adds(off[r * pitch], off, r * a, cols)


def spread(off, rows, cols, a, es, per):
    # off[(r * cols + c) * per] = r * a + c * es: lane 0 of each 32 B block gets one element
    Duplicate(off, 0, rows * cols * per)
    SetFlag(HardEvent.V_S, 0)
    WaitFlag(HardEvent.V_S, 0)
    for r in range(rows):
        for c in range(cols):
            off.SetValue((r * cols + c) * per, r * a + c * es)
    SetFlag(HardEvent.S_V, 0)
    WaitFlag(HardEvent.S_V, 0)

'''
