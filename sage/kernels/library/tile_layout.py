"""The tile program's layout: each tensor's copy plan, the tile's rows and columns and its buffers.

`TileLayout` holds what `plan_tile` (tile_plan.py) decided about each tensor's copy and,
once the compute's temporaries are known, sizes the tile (`size`) so that every buffer
fits in UB; `constants` writes the sizes as the program's module constants. The UB
geometry helpers (`round_up`, `ub_pitch`, `brcb_pad`, `square_side`) and the plan
constants live here too, for the planner and the emitters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from sage.kernels.library.knobs import UB_RESERVED, Knobs
from sage.kernels.library.casts import SCRATCH_SLOT_BYTES
from sage.kernels.library.source import DTYPE_SIZE
from sage.kernels.library.tile_seg import seg_elems
from sage.kernels.library.tile_split import constants as split_constants
from sage.kernels.library.tile_split import SPLIT_CHUNK_BYTES, narrow_hurts, row_parts
from sage.kernels.library.tile_spec import Access, Iota, TileSpec, leaf_kind
from sage.kernels.symbolic import helper_call, pin, value_of
from sage.kernels.target import Target

MAX_ROWS = 255             # repeat-form instructions repeat once per row
CMP_PAD = 128              # comparisons work on whole 256 B repeats: buffers hold this much slack
# A row or column Iota's values hold RAMP elements, max(S, NR, NC) + 64; a comparison of them
# reads up to NR or NC rounded up to CMP_PAD (public level2/10 case 18: 128 of 104)
IOTA_PAD = CMP_PAD - 64
GATHER_PLANS = ("span", "transposed", "elements", "col_strided")


# 1-byte leaves whose gather plans put each element at the start of its own 32 B block, so
# it can be read as an int16 (zero-extended: unsigned types only); other 1-byte gathers
# keep Gather's 8-bit form, which A2 refuses at run time
BYTE_GATHER_PLANS = ("col_strided", "elements")
OUT_GATHER_PLANS = ("transposed", "elements", "col_strided")     # outputs gathered into copy-out order
BYTE_GATHER_DTYPES = ("bool", "uint8")


def byte_gather(dtype: str, plan: str) -> bool:
    return dtype in BYTE_GATHER_DTYPES and plan in BYTE_GATHER_PLANS


def store_width(dtype: str, plan: str) -> int:
    """Bytes a gathered output element takes in UB: a bool or uint8 output spread one per
    32 B block is converted to int16 (its value, then a zero byte) and gathered in Gather's
    16-bit form, so each block starts with its byte (tile_emit.py)."""
    es = DTYPE_SIZE[dtype]
    return gather_size(es) if byte_gather(dtype, plan) else es


def widened(dtype: str, plan: str) -> bool:
    """An int64 output in a gather plan: A2's Gather has no 64-bit form, so its values are
    converted to int32, gathered into the output's element positions, and widened there by
    one int32 -> int64 Cast (the tile computes integers in float32 or int32: no value is lost)."""
    return dtype == "int64" and plan in OUT_GATHER_PLANS


def stored_dtype(dtype: str, plan: str) -> str:
    """The dtype an output is converted to before its copy-out order (int16 for a byte
    gathered in Gather's 16-bit form, int32 for a widened int64)."""
    if widened(dtype, plan):
        return "int32"
    return "int16" if byte_gather(dtype, plan) else dtype


def out_pitch(nr: int, dtype: str, plan: str) -> int:
    """Elements of a transposed output's UB row: nr padded to the 32 B block, and for a
    widened int64 to the block of its int32 offset table (rows of the table start aligned)."""
    return ub_pitch(nr, 4 if widened(dtype, plan) else DTYPE_SIZE[dtype])


def gathered_out(dtype: str, plan: str, nr: int, nc: int) -> int:
    """Elements of an output's gathered UB image (its Gather's count, and its offset table)."""
    unit = store_width(dtype, plan)
    return {"transposed": nc * out_pitch(nr, dtype, plan), "elements": nr * nc * 32 // unit,
            "col_strided": nr * 32 // unit}[plan]


def gather_size(es: int) -> int:
    """Bytes a gathered element takes: A2's Gather has 16- and 32-bit forms only, so a 1-byte
    element is gathered as the int16 its zero-padded block starts with, and an int64 as its
    low int32 word (tile_prepare.py)."""
    return min(max(es, 2), 4)


def gathered_dtype(dtype: str, plan: str) -> str:
    """The dtype a leaf read by a gather plan is gathered as: int16 for a padded byte, the
    low int32 word of an int64 (A2 has no 64-bit Gather; exact for values in int32's range,
    which is what these leaves hold: indices and their offsets; a larger value is wrong and
    the comparison with the reference says so), else its own."""
    if plan not in GATHER_PLANS:
        return dtype
    return "int16" if byte_gather(dtype, plan) else "int32" if dtype == "int64" else dtype


def round_up(n: int, m: int) -> int:
    """n rounded up to a multiple of m."""
    return -(-n // m) * m


def square_side(tile_len: int, align: int, cols: int) -> int:
    """Columns of a near-square tile of `tile_len` elements, or 0 (none). A transposing copy
    moves one burst per tile column (NR elements each) on one side and one per tile row on
    the other, so NR + NC bursts per tile: fewest when the tile is square (a 4 x 1024 tile
    of a float32 transpose moves 1024 bursts of 16 B; a 64 x 64 one, 128 bursts of 256 B).
    The last column chunk must keep the full chunk's UB pitch, because the gather tables
    are built once for the pitch S: cols % NC is 0 or rounds up to NC. A search over the
    candidates, so a host helper: one formula, no guard per candidate (host_helpers.py)."""
    return helper_call("square_side", tile_len, align, cols)


def brcb_pad(nr: int) -> int:
    """32 B blocks of a Brcb temporary (one block per tile row): Brcb writes whole repeats of
    8 blocks, and readers take one block per row; one repeat of slack. (Sized like the
    comparison buffers before, 64-row multiples plus CMP_PAD blocks, it took 6 KB for a
    one-row tile: what a 10240-column group norm row lacked to fit UB.)"""
    return round_up(nr, 8) + 8


def ub_pitch(n: int, es: int) -> int:
    """Elements of a UB row of n elements of es bytes, padded to the 32 B block."""
    return round_up(n * es, 32) // es


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
    compensated: int = 0        # of which float32 sums carried with a compensation row (tile.py _fold)
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
        # UB, not the knob's tile_len, bounds the tile: a bigger knob cannot grow it (tile.py).
        # Both ways here are outcomes of recorded comparisons (the halvings' guards).
        self.ub_bound = False
        persistent = self.reduce and not spec.reduce_rows or bool(self.windows) or "padded" in self.plans.values()
        nc = cols if persistent or cols <= knobs.tile_len else max(self.align, knobs.tile_len // self.align * self.align)
        if spec.reduce_rows:
            # a block takes whole column chunks: make enough of them for every core
            cores = knobs.block_dim or self.target.vector_cores
            loops = math.prod(spec.dims[a] for a in spec.loops)
            per = -(-cores // max(loops, 1))
            if per > 1:
                want = max(256 // self.es_c, round_up(-(-cols // per), self.align))
                # narrow chunks, or the rows split across blocks (tile_split.py)
                self.split = knobs.row_split and want < nc and narrow_hurts(want, 32 // self.align) \
                    and row_parts(loops * -(-cols // nc), spec.rows, cores) > 1
                if self.split:
                    nc = min(nc, max(self.align, SPLIT_CHUNK_BYTES // self.es_c // self.align * self.align))
                else:
                    nc = min(nc, want)
        side = square_side(knobs.tile_len, self.align, cols) if self.transposes() and not persistent \
            and not spec.reduce_rows and spec.rows > 1 and cols > self.align else 0
        square = side > 0
        if square:
            nc = min(nc, side)
        while True:
            s = round_up(nc, self.align)
            whole = nc >= cols or spec.reduce_rows or square
            nr = max(1, min(spec.rows, MAX_ROWS, knobs.tile_len // s)) if whole else 1
            fits = self._rows_that_fit(nr, nc, s, budget, made, masked, int_temp)
            if fits is not None:
                self.ub_bound = self.ub_bound or value_of(fits) < value_of(nr)
                # the tiling decisions: fields of the tiling struct in a shape-generic kernel
                self.nr, self.nc = pin(fits, "nr"), pin(nc, "nc")
                self.s = round_up(self.nc, self.align)
                if self.split:
                    loops = math.prod(spec.dims[a] for a in spec.loops)
                    self.parts = pin(row_parts(loops * -(-cols // nc), spec.rows,
                                               knobs.block_dim or self.target.vector_cores), "parts")
                return
            if persistent or nc <= self.align:
                raise ValueError(f"a tile row of {cols} columns does not fit in UB with the program's buffers")
            nc = max(self.align, nc // 2 // self.align * self.align)
            self.ub_bound = True

    def _rows_that_fit(self, nr: int, nc: int, s: int, budget: int, made: dict[str, int], masked: bool,
                       int_temp: bool) -> int | None:
        """The first of nr, nr // 2, ..., 1 whose tile fits `budget` (None: not even 1 row).

        The search runs on the traced case's values; only its outcome is a guard. The tile's
        bytes grow with its rows (every term of `_bytes` does), so "nr_k fits, nr_(k-1) does
        not" says the same as "each of nr_0 .. nr_(k-1) does not": two guards, where comparing
        on symbolic sizes recorded one per row count tried and gave the host tiling function
        a condition per halving (public level1/31_iou: 9.7 KB for one of them)."""
        def size(rows: int) -> int:
            return self._bytes(rows, nc, s, made, masked, int_temp)

        prev = None
        while value_of(nr) >= 1:
            if value_of(size(nr)) <= value_of(budget):
                # recorded on the symbolic sizes: the shapes this tiling variant is valid for
                if not (nr >= 1 and size(nr) <= budget) or prev is not None and size(prev) <= budget:
                    raise AssertionError("a symbolic size disagrees with its traced value")
                return nr
            prev, nr = nr, (nr // 2 if value_of(nr) > 1 else 0)
        if size(1) <= budget:   # records that not even one row fits (and must not)
            raise AssertionError("a symbolic size disagrees with its traced value")
        return None

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
            total += bn * self.leaf_bytes(i, plan, es, nr, nc, s) if self.loads(i) else 0
            total += self.leaf_bytes(i, plan, es, nr, nc, s) if i in self.resident else 0
            if self.casts(i):
                total += (seg_elems(spec, leaf, nr) if plan == "seg" else {
                    "row": s + CMP_PAD, "col": nr + CMP_PAD, "col_strided": nr + CMP_PAD, "scalar": 8}.get(plan, tile)) * csz
            if plan in GATHER_PLANS:
                total += (tile * 4 if self.loads(i) else 0) + tile * gather_size(es)
        for j, out in enumerate(spec.outputs):
            es, plan = DTYPE_SIZE[out.access.dtype], self.out_plans[j]
            od = out.access.dtype
            total += bn * {"col": round_up(nr, 64) + CMP_PAD, "col_strided": nr * 32 // es + 32,
                           "transposed": nc * out_pitch(nr, od, plan), "elements": nr * nc * 32 // es}.get(plan, tile) * es
            if plan in OUT_GATHER_PLANS:
                image = gathered_out(od, plan, nr, nc)
                total += tile * DTYPE_SIZE[stored_dtype(od, plan)] + 4 * image
                total += 4 * image if widened(od, plan) else 0      # the int32 image before it is widened
        total += made.get("full", 0) * tile * csz + made.get("row", 0) * (s + CMP_PAD) * csz
        total += made.get("col", 0) * (round_up(nr, 64) + CMP_PAD) * csz
        total += made.get("brcb", 0) * brcb_pad(nr) * 32
        if spec.reduce_rows:
            # a compensated sum adds its compensation row, and they share one scratch row
            extra = self.compensated + (1 if self.compensated else 0)
            total += (s + CMP_PAD) * csz * (self.accumulators + extra)
        if self.split:
            total += 2 * (s + CMP_PAD) * csz     # the workspace rows' queue
        total += (tile // 8 + 64) if masked else 0
        total += tile * 4 if int_temp else 0
        total += self.cvt_slots * tile * SCRATCH_SLOT_BYTES
        ramp = max(s, nr, nc) + 64
        if self.needs_ramp:
            total += ramp * (4 + csz)  # index ramps
        # an Iota leaf's coefficient ramp and its values per tile (tile_copy_in, tile_prepare):
        # uncounted, a 6144-column one-hot tile (level1/25 case 33) overflowed UB by 7.5 KB
        iotas = [leaf_kind(spec, leaf) for leaf in spec.leaves if isinstance(leaf, Iota)]
        total += sum(ramp * csz + (tile if kind == "full" else ramp + IOTA_PAD) * csz for kind in iotas if kind != "scalar")
        n_bufs = 4 * (len(spec.leaves) + len(spec.outputs)) + sum(made.values()) + 4
        return total + 32 * n_bufs

    def leaf_bytes(self, i: int, plan: str, es: int, nr: int, nc: int, s: int) -> int:
        leaf = self.spec.leaves[i]
        assert isinstance(leaf, Access)
        _, sc = self.spec.strides_of(leaf)
        if plan == "seg":
            return seg_elems(self.spec, leaf, nr) * es
        return {"rows": nr * s + CMP_PAD, "row_loop": nr * s + CMP_PAD, "row": s + CMP_PAD, "padded": nr * s + CMP_PAD,
                "col": round_up(nr, 64) + CMP_PAD, "col_strided": nr * 32 // es + 32, "scalar": 32 // es,
                "span": nr * ub_pitch(self.span_len(i, nc), es), "transposed": nc * ub_pitch(nr, es),
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
                f"NR_PAD = {round_up(self.nr, 64) + CMP_PAD}", f"BRCB_PAD = {brcb_pad(self.nr)}", f"RAMP = {max(self.s, self.nr, self.nc) + 64}"
                ] + (split_constants(self.parts, spec.rows, loops * n_ct, self.nc, self.es_c) if self.parts > 1 else [])
