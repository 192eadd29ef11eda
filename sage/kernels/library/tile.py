"""The tile program kernel: pointwise work and reductions over strided tensors of any rank
(spec and copy plans in `tile_spec.py`, the plan and size of a tile in `tile_plan.py` and
`tile_layout.py`, copy and preparation code in `tile_copy_in.py`, `tile_prepare.py` and `tile_emit.py`).

Tiles are NR rows x NC columns of the iteration space; rows sit in UB at a pitch of `s`
elements (a multiple of the 32 B block for every dtype involved), so one vector
instruction covers a tile. Tiles are dealt to blocks in contiguous runs; each tile is
copied in, computed and copied out through queues of depth BUFFER_NUM, so with two buffers
the copies of one tile overlap the compute of the next. The compute is the `Lowerer`'s, in
repeat form: no per-row loops and no scalar reads for broadcasts and reductions.

Reductions come in two modes:
- over the columns (`reduce_rows=False`): a tile holds whole rows, which stay in UB
  between the reduction and the work that uses its result (norms, softmax);
- over the rows (`reduce_rows=True`, the reduced axis is not innermost in memory): a block
  takes one column chunk, folds every row tile into an accumulator row (halving the tile
  with vector adds), and after the last row tile finishes the work on the result and
  stores it (`Finish`): no transposition, contiguous copies only.
"""

from __future__ import annotations

import math

from pydantic import BaseModel

from sage.kernels.chain import Expr, Inp, Op, Reduce, inputs_of, render
from sage.kernels.library import tile_split
from sage.kernels.library.knobs import VENDOR_KNOBS, Knobs
from sage.kernels.library.source import FOLD_OPS, HEADER, accumulate, compensated, dsl_dtype, method
from sage.kernels.library.tile_emit import Emit
from sage.kernels.library.tile_layout import TileLayout
from sage.kernels.library.tile_plan import plan_tile
from sage.kernels.library.tile_resident import ROW_TILES
from sage.kernels.library.tile_round import rounded_store
from sage.kernels.library.tile_spec import Access, TileSpec, leaf_kind
from sage.kernels.lowering import Lowerer, Val, instruction_lines
from sage.kernels.repeat_cost import DISTINCT_BUDGET, RECORD_BUDGET, By, FormChoice, RepeatCosts
from sage.kernels.symbolic import is_sym
from sage.kernels.target import Target, target_for
from sage.npu.hardware import load_preset

# Past DISTINCT_BUDGET GM copies (each a distinct record), a program's tile grows: the knob's
# tile_len doubled, up to what UB holds. Public level1/24's zero fill of a bf16 [128256, 8192]
# gradient made 256 K copies of 4096-element tiles.
MAX_TILE_LEN = 65_536

# When the last column tile is narrower (C % NC), a block's run of tiles starts on a tile row
# (tpb a multiple of N_CT) once it spans this many rows of column tiles. Every block then
# meets the narrow last column tile at the same step, so the simulator runs the blocks as one
# lane group; otherwise `nc` differs between blocks at a different step each time, and the
# launch runs block by block (public level1/29's 5120 x 27648 quantise: 37 s against 8 s).
# The longest block gains at most N_CT - 1 tiles, under 1 / PHASE_ROWS of its work (5 %; 0.8 %
# there, 854 -> 861 tiles).
PHASE_ROWS = 20


class TileTooBig(ValueError):
    """No tile of this program fits in UB (a reduced row longer than UB holds)."""


def tile_source(spec: TileSpec, knobs: Knobs = VENDOR_KNOBS, *, target: Target | None = None) -> str:
    """Definitions of the kernel `<name>_kernel` and its host launcher
    `<name>_launch(<buffer args>)` (the buffers in `tile_args(spec)` order)."""
    return _written(spec, knobs, target or target_for())[1]


def _written(spec: TileSpec, knobs: Knobs, target: Target) -> tuple[_Writer, str]:
    """The program written with the knobs' tile, grown while its tiles' GM copies would pass
    `DISTINCT_BUDGET` (each comparison a guard of a shape-generic kernel's tiling, like the
    rest of the layout's)."""
    written = None
    while True:
        w = _Writer(spec, knobs, target, plan_tile(spec, knobs, target))
        try:
            source = w.write()
        except TileTooBig:
            if written is None:
                raise
            return written            # the grown tile does not fit: the last that did
        # UB already bounds the tile: a bigger knob gives the same tile, and its budget test
        # would only add guards (a variant of its own in public level2/19's file, +14 KB)
        if knobs.tile_len >= MAX_TILE_LEN or w.lay.ub_bound or w.within or w.gm_copies() <= DISTINCT_BUDGET:
            return w, source
        written = w, source
        knobs = knobs.model_copy(update={"tile_len": knobs.tile_len * 2})


def _gm_copies(lines: list[str], nr):  # noqa: ANN001, ANN202 - nr: an int or a symbolic size
    """GM copies one tile makes (a copy in a row loop once per row): each is a distinct record."""
    per_tile = sum(1 for ln in lines if "DataCopy" in ln)
    looped = any(ln.lstrip().startswith("for r in range(nr)") for ln in lines)
    return per_tile * nr if looped else per_tile


class TileGeometry(BaseModel):
    """What a schedule makes of a tile program (for cost models): the tile, the queue
    depth, the tiles, and the copy plans and vector instructions of one tile."""

    nr: int
    nc: int
    pitch: int
    buffer_num: int
    tiles: int                     # units of work dealt to blocks (tiles, or row-mode column chunks)
    rows_per_item: int             # row tiles per unit of work (row mode), else 1
    row_parts: int = 1             # row mode: parts the rows are split into (tile_split.py; one launch alone)
    plans: dict[int, str]
    out_plans: list[str]
    shared: list[int] = []         # leaves read out of another leaf's span (no copy of their own)
    vector_lines: int              # instructions written for one tile's compute


def tile_geometry(spec: TileSpec, knobs: Knobs = VENDOR_KNOBS, *, target: Target | None = None) -> TileGeometry:
    w, source = _written(spec, knobs, target or target_for())
    lay = w.lay
    n_ct = -(-spec.cols // lay.nc)
    n_rt = -(-spec.rows // lay.nr)
    loops = 1
    for a in spec.loops:
        loops *= spec.dims[a]
    return TileGeometry(nr=lay.nr, nc=lay.nc, pitch=lay.s, buffer_num=lay.bn,
                        tiles=loops * n_ct * (lay.parts if spec.reduce_rows else n_rt),
                        rows_per_item=-(-n_rt // lay.parts) if spec.reduce_rows else 1, row_parts=lay.parts,
                        plans=dict(lay.plans),
                        out_plans=list(lay.out_plans), shared=sorted({*lay.share, *lay.windows}), vector_lines=w.vector_lines or source.count("\n") // 10)


def tile_args(spec: TileSpec) -> list[str]:
    """The launcher's buffer arguments: each distinct buffer once, leaves first."""
    seen: dict[str, None] = {}
    for leaf in spec.leaves:
        if isinstance(leaf, Access):
            seen.setdefault(leaf.arg, None)
    for out in spec.outputs:
        seen.setdefault(out.access.arg, None)
    return list(seen)


def tile_class(spec: TileSpec) -> str:
    """The kernel class of the program: `Init(<tile_args>, tpb, blk)` then `Process()` runs
    tiles blk * tpb .. (blk + 1) * tpb - 1 of its T (module constant) tiles."""
    return "Kernel" + "".join(p.capitalize() for p in spec.name.split("_"))


class _Writer:
    def __init__(self, spec: TileSpec, knobs: Knobs, target: Target, lay: TileLayout) -> None:
        self.spec, self.knobs, self.target, self.lay = spec, knobs, target, lay
        self.cls = tile_class(spec)
        self.args = tile_args(spec)
        self.e = Emit(spec, lay)
        self.masked = self.int_temp = False
        self.made: dict[str, int] = {}
        self.vector_lines = self.site_calls = 0
        self.forms: FormChoice | None = None            # the repeat forms of a tile's compute
        self.finish_forms: FormChoice | None = None     # and of row mode's Finish (one row)
        self.rows = spec.reduce_rows
        # row mode: the reductions, and which outputs are finished after the last row tile
        self.reduces: list[Reduce] = []
        self.late: set[int] = set()
        if self.rows:
            for j, o in enumerate(spec.outputs):
                if spec.strides_of(o.access)[0] == 0:
                    self.late.add(j)
                self._collect(o.expr)

    def _collect(self, e: Expr) -> None:
        if isinstance(e, Reduce):
            if e not in self.reduces:
                self.reduces.append(e)
        elif isinstance(e, Op):
            for a in e.args:
                self._collect(a)

    def write(self) -> str:
        spec = self.spec
        self._lower(None)             # the temporaries the tile needs: the same in either repeat form
        try:
            self.lay.size(self.made, self.masked, self.int_temp)
        except ValueError as exc:
            raise TileTooBig(str(exc)) from None
        # each broadcast and reduction in its cheaper form on the sized tile; in the form of
        # fewer instructions if the tiles would make too many records (repeat_cost.py)
        tile_outs, roots, compute, finish = self._lower("cycles")
        copy_lines = self._copies(tile_outs, roots)      # the same in either repeat form
        records, tiles = self.tile_records(compute, copy_lines), self._tiles()
        self.copies = copies = _gm_copies(copy_lines, self.lay.nr)
        # both budgets in one guard, a copy weighing as many records as the budgets' ratio (it
        # holds only where both do; where it does not, each is tested): a guard each grew a
        # public file of 30 case classes past 64 KB
        # (a tile UB bounds cannot grow: its copies are not tested, the records alone are)
        weight = records + copies * (RECORD_BUDGET // DISTINCT_BUDGET)
        self.within = not self.lay.ub_bound and (
            tiles <= RECORD_BUDGET // weight if not is_sym(weight) else tiles * weight <= RECORD_BUDGET)
        if not self.within and tiles * records > RECORD_BUDGET:
            tile_outs, roots, compute, finish = self._lower("records")
        lines = [HEADER, f"# {spec.name}: tile program over dims {list(spec.dims)} (row axis {spec.row}"
                 f"{', reduced' if self.rows else ''}), compute in {spec.compute}"]
        lines += [f"# out{j} = {render(o.expr)}" for j, o in enumerate(spec.outputs)]
        lines += self.lay.constants(self.knobs, self.target, work_items=self.rows) + ["", ""]
        lines.append(f"class {self.cls}:")
        split = self.lay.parts > 1
        # blk: the block's index among the blocks of this program (a launch may run several)
        lines.append(method("Init", ", ".join(self.args + (["ws"] if split else []) + ["tpb", "blk"]), self.init()))
        lines.append(method("Process", "", self.process()))
        pre_leaves = set().union(*(inputs_of(r) for r in roots)) if roots else set()
        lines.append(method("CopyIn", "bs, nr, nc", self.e.copy_in(pre_leaves)))
        lines.append(method("Compute", "bs, nr, nc, j0", compute))
        lines.append(method("CopyOut", "bs, nr, nc", self.e.copy_out(set(tile_outs)) or ["pass"]))
        if self.rows:
            # what the finishing expressions read besides the accumulators (not the reduced inputs)
            late_leaves = set().union(*(inputs_of(self._late_expr(spec.outputs[j].expr)) for j in self.late)) - set(
                range(len(spec.leaves), len(spec.leaves) + len(self.reduces)))
            lines.append(method("Finish", "bs, nc", ["nr = 1", "j0 = 0", *self.e.copy_in(late_leaves), *finish,
                                                    *self.e.copy_out(self.late)]))
        ct, csz = dsl_dtype(spec.compute), self.lay.es_c
        kinds = [r.kind for r in self.reduces]
        if split:
            lines.append(method("Spill", "t, nc", tile_split.spill(len(kinds), ct, csz)))
            lines.append(method("Combine", "u, nc", tile_split.combine(kinds, spec.compute)))
            lines.append(method("WsIn", "j, row, nc", tile_split.ws_in(ct, csz)))
        lines.append(self.e.helpers())
        if split:
            return "\n".join(lines + tile_split.kernel_and_launch(spec.name, self.cls, self.args, len(kinds), ct))
        args = ", ".join(self.args + ["tpb"])
        lines.append(f"@kernel\ndef {spec.name}_kernel({args}):\n    op = {self.cls}()\n"
                     f"    op.Init({args}, GetBlockIdx())\n    op.Process()\n\n")
        lines.append(f"def {spec.name}_launch({', '.join(self.args)}):\n"
                     "    cores = BLOCK_DIM or CORES\n"
                     "    tpb = (T + cores - 1) // cores\n"
                     f"    if C % NC and tpb >= {PHASE_ROWS} * N_CT:\n"
                     "        tpb = (tpb + N_CT - 1) // N_CT * N_CT\n"
                     f"    {spec.name}_kernel[(T + tpb - 1) // tpb]({', '.join(self.args)}, tpb)\n\n")
        return "\n".join(lines)

    def _lower(self, by: By | None) -> tuple[list[int], list[Expr], list[str], list[str]]:
        """The tile's (outputs, roots, Compute and Finish bodies), each repeat-form site in
        the form `by` picks on the sized tile (None: the column form, before sizing)."""
        spec, lay = self.spec, self.lay
        self.vector_lines = self.site_calls = 0
        if by is None:
            self.forms = self.finish_forms = None
        else:
            costs = RepeatCosts(load_preset(self.target.preset), lay.es_c)
            self.forms, self.finish_forms = FormChoice(costs, lay.nr, lay.nc, by), FormChoice(costs, 1, lay.nc, by)
        tile_outs = [j for j in range(len(spec.outputs)) if j not in self.late]
        roots = [r.arg for r in self.reduces] + [spec.outputs[j].expr for j in tile_outs]
        compute = self.phase(roots, tile_outs, fold=bool(self.reduces), forms=self.forms)
        finish = self.phase([self._late_expr(spec.outputs[j].expr) for j in sorted(self.late)], sorted(self.late),
                            extra=len(self.reduces), forms=self.finish_forms) if self.rows else []
        return tile_outs, roots, compute, finish

    def tile_records(self, compute: list[str], copy_lines: list[str]):  # noqa: ANN201
        """Records one tile makes, about: the chosen forms' instructions and one per other
        instruction line of its copies and compute (an int, or a size where a form's count
        depends on the rows)."""
        others = instruction_lines(compute) - self.site_calls + instruction_lines(copy_lines)
        return self.forms.instructions + others

    def gm_copies(self):  # noqa: ANN201 - an int or a symbolic size
        """GM copies the program's tiles make in one launch."""
        return self._tiles() * self.copies

    def _copies(self, tile_outs: list[int], roots: list[Expr]) -> list[str]:
        pre_leaves = set().union(*(inputs_of(r) for r in roots)) if roots else set()
        return self.e.copy_in(pre_leaves) + self.e.copy_out(set(tile_outs))

    def _tiles(self):  # noqa: ANN202 - an int or a symbolic size
        spec, lay = self.spec, self.lay
        return math.prod(spec.dims[a] for a in spec.loops) * -(-spec.cols // lay.nc) * -(-spec.rows // lay.nr)

    def _late_expr(self, e: Expr) -> Expr:
        """A finishing expression with each reduction's accumulator as an extra input."""
        if isinstance(e, Reduce):
            return Inp(len(self.spec.leaves) + self.reduces.index(e))
        if isinstance(e, Op):
            return Op(e.name, tuple(self._late_expr(a) for a in e.args), e.params)
        return e

    # -- Init ---------------------------------------------------------------------------------
    def init(self) -> list[str]:
        body = ["self.t0 = blk * tpb", "self.t1 = min(T, self.t0 + tpb)", "self.pipe = TPipe()"]
        for arg in self.args:
            body += [f"self.g_{arg} = GlobalTensor()", f"self.g_{arg}.SetGlobalBuffer({arg})"]
        body += self.e.init_buffers() + self.e.iota_buffers()
        if self.lay.parts > 1:
            body += tile_split.init_lines(self.lay.es_c)
        csz = self.lay.es_c
        for k, count in (("full", "TILE_ELEMS"), ("row", "S_PAD"), ("col", "NR_PAD"), ("brcb", "BRCB_PAD * EPB")):
            for j in range(self.made.get(k, 0)):
                t = f"t{k[0]}{j}"
                body += [f"self.tb_{t} = TBuf(TPosition.VECCALC)",
                         f"self.pipe.InitBuffer(self.tb_{t}, buf_bytes({count}, {csz}))"]
        for j, r in enumerate(self.reduces):
            for b in (("accb", "cmpb") if compensated(r.kind, self.spec.compute) else ("accb",)):
                body += [f"self.{b}{j} = TBuf(TPosition.VECCALC)", f"self.pipe.InitBuffer(self.{b}{j}, buf_bytes(S_PAD, {csz}))"]
        if any(compensated(r.kind, self.spec.compute) for r in self.reduces):    # row mode's only
            body += ["self.ksb = TBuf(TPosition.VECCALC)", f"self.pipe.InitBuffer(self.ksb, buf_bytes(S_PAD, {csz}))"]
        if self.masked:
            body += ["self.mkb = TBuf(TPosition.VECCALC)", "self.pipe.InitBuffer(self.mkb, buf_bytes(TILE_ELEMS, 1) // 8 + 64)"]
        if self.int_temp:
            body += ["self.tib = TBuf(TPosition.VECCALC)", "self.pipe.InitBuffer(self.tib, buf_bytes(TILE_ELEMS, 4))"]
        return body + self.e.init_tables(self.spec.compute)

    # -- Process ------------------------------------------------------------------------------
    def process(self) -> list[str]:
        bases = ", ".join(self.e.bases())
        if self.lay.parts > 1:
            # the first tile of a part starts the accumulator (Compute's j0 == 0)
            return tile_split.process(self._decode("u"), [f"bs = [{bases}]", "self.CopyIn(bs, nr, nc)",
                                                          "self.Compute(bs, nr, nc, j0 - r0)", "self.CopyOut(bs, nr, nc)"],
                                      bases)
        body = ["for t in range(self.t0, self.t1):"] + ["    " + ln for ln in self._decode("t")]
        body.append("    nc = min(NC, C - c0)")
        tile = ["nr = min(NR, DR - j0)", f"bs = [{bases}]", "self.CopyIn(bs, nr, nc)",
                "self.Compute(bs, nr, nc, j0)", "self.CopyOut(bs, nr, nc)"]
        if not self.rows:
            return body + ["    " + ln for ln in tile]
        body += ["    for j0 in range(0, DR, NR):"] + ["        " + ln for ln in tile]
        return body + ["    j0 = 0", f"    bs = [{', '.join(self.e.bases())}]", "    self.Finish(bs, nc)"]

    def _decode(self, unit: str) -> list[str]:
        """c0, the loop indices (and j0 outside row mode) of work unit `unit`."""
        body = [f"c0 = {unit} % N_CT * NC", f"o = {unit} // N_CT"]
        for ax in reversed(self.lay.loop_order):      # innermost first (tile_resident.py)
            if ax == ROW_TILES:
                body += ["j0 = o % N_RT * NR", "o = o // N_RT"]
            else:
                body += [f"i{ax} = o % {self.spec.dims[ax]}", f"o = o // {self.spec.dims[ax]}"]
        return body

    # -- Compute -------------------------------------------------------------------------------
    def phase(self, roots: list[Expr], outs: list[int], fold: bool = False, extra: int = 0,
              forms: FormChoice | None = None) -> list[str]:
        """Lowered code for `roots` (the reduction operands first when `fold`), storing
        outputs `outs`; `extra` accumulators are inputs after the leaves (row mode's finish)."""
        spec = self.spec
        if not roots:
            return []
        pre = ["s = (nc + ALIGN - 1) // ALIGN * ALIGN", "n = nr * s"]
        inputs: dict[int, Val] = {}
        scalar_reads: list[str] = []
        used = set().union(*(inputs_of(r) for r in roots))
        for i in self.e.prepare_order({i for i in used if i < len(spec.leaves)}):
            val, lines, reads = self.e.prepare(i, spec.leaves[i], inputs)
            pre += lines
            scalar_reads += reads
            inputs[i] = Val(val.kind, val.ref, temp=True) if self._lendable(i, val) else val
        for j in range(extra):
            inputs[len(spec.leaves) + j] = Val("row", f"acc{j}")
            pre.append(f"acc{j} = self.accb{j}.Get({dsl_dtype(spec.compute)})")
        if scalar_reads:
            pre += ["SetFlag(HardEvent.V_S, 0)", "WaitFlag(HardEvent.V_S, 0)", *scalar_reads,
                    "SetFlag(HardEvent.S_V, 0)", "WaitFlag(HardEvent.S_V, 0)"]
        n_fold = len(self.reduces) if fold else 0
        modes = {}
        for k, j in enumerate(outs):
            got = rounded_store(roots[n_fold + k], spec.compute, spec.outputs[j].access.dtype)
            if got is not None:
                roots[n_fold + k], modes[j] = got
        kinds = [leaf_kind(spec, leaf) for leaf in spec.leaves] + ["row"] * extra
        if spec.row is None:
            # One row per tile (NR = 1, TILE_ELEMS = S_PAD): a value along the columns is the
            # whole tile. Lowered as a row it would be copied into a full tile before every store
            # or mixed operand, one instruction per 256 B: 64 per 16 KB tile of a plain cast.
            kinds = ["full" if k == "row" else k for k in kinds]
            inputs = {i: Val("full", v.ref, v.temp) if v.kind == "row" else v for i, v in inputs.items()}
        low = Lowerer(kinds=kinds, inputs=inputs, dtype=spec.compute, repeat_form=True, reduce_rows=self.rows,
                      segs=self.e.segs(), forms=forms)
        results = low.lower_all(roots)
        post: list[str] = []
        folds: list[str] = []
        folded: set[str] = set()
        for j, (r, res) in enumerate(zip(self.reduces[:n_fold], results)):
            # the fold halves its operand in place: a value stored too (the stores below run
            # first) or folded twice is folded from a copy
            folds += self._fold(low, r.kind, res, j, shared=res.ref in folded)
            folded.add(res.ref)
        for j, res in zip(outs, results[n_fold:]):
            want = "col" if self.lay.out_level[j] == "col" else "full"
            if self.rows and j in self.late:
                want = "row" if res.kind in ("row", "scalar") else "full"
            if res.kind != want:
                res = low._materialize(res, want)
            post += self.e.store(j, spec.outputs[j].access, res.ref, "col" if want == "col" else "full",
                                 modes.get(j))
        post += folds
        post += self.e.free_leaves([i for i in inputs if i < len(spec.leaves) and isinstance(spec.leaves[i], Access)])
        self.masked = self.masked or low.uses_mask
        self.int_temp = self.int_temp or low.int_temp
        for k, v in low.made.items():
            self.made[k] = max(self.made.get(k, 0), v)
        gets = [f"t{k[0]}{j} = self.tb_t{k[0]}{j}.Get({dsl_dtype(spec.compute)})"
                for k in ("full", "row", "col", "brcb") for j in range(low.made[k])]
        if low.uses_mask:
            gets += ["mk = self.mkb.Get(uint8)", "pn = (n + CMP_PAD - 1) // CMP_PAD * CMP_PAD",
                     "pnc = (nc + CMP_PAD - 1) // CMP_PAD * CMP_PAD", "pnr = (nr + CMP_PAD - 1) // CMP_PAD * CMP_PAD"]
        if low.int_temp:
            gets.append("ti = self.tib.Get(int32)")
        self.vector_lines += instruction_lines(low.lines)
        self.site_calls += low.site_calls
        return pre + gets + low.lines + post

    def _lendable(self, i: int, val: Val) -> bool:
        """A leaf's tile-sized compute-dtype copy, written afresh every tile (a cast): after its
        last use the lowering may compute into it, one full temporary fewer in UB (what lets
        group_norm_swish's 10240-column rows double-buffer). Not a resident copy (kept across
        tiles), a segment leaf's few values, or in row mode (folds reuse their operands)."""
        lay = self.lay
        return (not self.rows and val.kind == "full" and val.ref == f"c{i}" and lay.casts(i)
                and i not in lay.resident and lay.plans.get(i) != "seg")

    def _fold(self, low: Lowerer, kind: str, x: Val, j: int, shared: bool = False) -> list[str]:
        """Row mode: the tile's rows folded onto its first row (halving), then into the
        accumulator (the first row tile starts it)."""
        fn = FOLD_OPS[kind]
        src = x.ref
        lines = []
        if not x.temp or x.kind != "full" or shared:
            full = low._materialize(x, "full") if x.kind != "full" else None
            src = full.ref if full is not None else low.temp("full")
            if full is None:
                lines.append(f"Adds({src}, {x.ref}, 0, n)")
        ct = dsl_dtype(self.spec.compute)
        return lines + [f"acc = self.accb{j}.Get({ct})", "h = nr", "while h > 1:", "    half = h // 2",
                        f"    {fn}({src}, {src}, {src}[(h - half) * s], half * s)", "    h = h - half",
                        *accumulate(kind, self.spec.compute, j, src, "j0 == 0")]

