"""The tile program's set-up and copy-in text: `CopyIn`, the first layer of `Emit` (tile_emit.py).

Each tile's GM base offsets (and whether it stores each output), the Init code of every
queue and buffer, the index tables built once (ramps, gather offsets), and the copy of
each leaf's tile from GM into UB by its plan.
"""

from __future__ import annotations

from sage.kernels.library.casts import SCRATCH_SLOT_BYTES, cast_lines
from sage.kernels.library.source import DTYPE_SIZE, dsl_dtype
from sage.kernels.library.tile_layout import (CMP_PAD, GATHER_PLANS, OUT_GATHER_PLANS, TileLayout, byte_gather,
                                               gather_size, gathered_out, out_pitch, round_up, store_width, stored_dtype,
                                               ub_pitch, widened)
from sage.kernels.library.tile_seg import seg_copy, seg_elems
from sage.kernels.library.tile_spec import Access, Iota, TileSpec, leaf_kind

# A 1-byte element alone in its 32 B block, followed by a zero byte: read as the int16 at its
# (even) offset it is its own value, since A2's Gather has no 8-bit form (tile_prepare.py)
BYTE_PAD = "DataCopyPadExtParams(True, 0, 1, 0)"


def scratch_slot(slot: int, dtype: str) -> str:
    """Intermediate `slot` of a conversion chain, viewed as `dtype`."""
    return f"self.cvt.Get({dsl_dtype(dtype)})[{slot} * TILE_ELEMS * {SCRATCH_SLOT_BYTES // DTYPE_SIZE[dtype]}]"


class CopyIn:
    """The bases, buffers, tables and copy-in code of a tile program."""

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

    # -- Init ------------------------------------------------------------------------------
    def init_buffers(self) -> list[str]:
        spec, lay = self.spec, self.lay
        body: list[str] = []
        for i, leaf in enumerate(spec.leaves):
            if not isinstance(leaf, Access):
                continue
            es, plan = DTYPE_SIZE[leaf.dtype], lay.plans[i]
            if lay.loads(i):
                nbytes = lay.leaf_bytes(i, plan, es, lay.nr, lay.nc, lay.s)
                body += [f"self.q{i} = TQue(TPosition.VECIN, BUFFER_NUM)",
                         f"self.pipe.InitBuffer(self.q{i}, BUFFER_NUM, {round_up(nbytes, 32)})"]
            if i in lay.resident:
                nbytes = lay.leaf_bytes(i, plan, es, lay.nr, lay.nc, lay.s)
                body += [f"self.r{i} = TBuf(TPosition.VECIN)", f"self.pipe.InitBuffer(self.r{i}, {round_up(nbytes, 32)})",
                         f"self.last{i} = -1"]
            if lay.casts(i):
                count = {"row": "S_PAD", "col": "NR_PAD", "col_strided": "NR_PAD", "scalar": "8"}.get(plan, "TILE_ELEMS")
                count = str(seg_elems(spec, leaf, lay.nr)) if plan == "seg" else count
                body += [f"self.b{i} = TBuf(TPosition.VECCALC)",
                         f"self.pipe.InitBuffer(self.b{i}, buf_bytes({count}, {lay.es_c}))"]
            if plan in GATHER_PLANS:
                body += [f"self.ob{i} = TBuf(TPosition.VECCALC)", f"self.pipe.InitBuffer(self.ob{i}, buf_bytes(TILE_ELEMS, 4))"] \
                    if lay.loads(i) else []
                body += [f"self.gb{i} = TBuf(TPosition.VECCALC)",
                         f"self.pipe.InitBuffer(self.gb{i}, buf_bytes(TILE_ELEMS, {gather_size(es)}))"]
        for j, out in enumerate(spec.outputs):
            es, plan = DTYPE_SIZE[out.access.dtype], lay.out_plans[j]
            od = out.access.dtype
            count = {"col": round_up(lay.nr, 64) + CMP_PAD, "col_strided": lay.nr * 32 // es + 32,
                     "transposed": lay.nc * out_pitch(lay.nr, od, plan), "elements": lay.nr * lay.nc * 32 // es}.get(
                plan, lay.nr * lay.s + CMP_PAD)
            body += [f"self.qo{j} = TQue(TPosition.VECOUT, BUFFER_NUM)",
                     f"self.pipe.InitBuffer(self.qo{j}, BUFFER_NUM, {round_up(count * es, 32)})"]
            if plan in OUT_GATHER_PLANS:
                table = gathered_out(od, plan, lay.nr, lay.nc)
                zs = DTYPE_SIZE[stored_dtype(od, plan)]
                body += [f"self.oo{j} = TBuf(TPosition.VECCALC)", f"self.pipe.InitBuffer(self.oo{j}, {round_up(table * 4, 32)})",
                         f"self.yb{j} = TBuf(TPosition.VECCALC)", f"self.pipe.InitBuffer(self.yb{j}, buf_bytes(TILE_ELEMS, {zs}))"]
                if widened(od, plan):
                    body += [f"self.wb{j} = TBuf(TPosition.VECCALC)", f"self.pipe.InitBuffer(self.wb{j}, {round_up(table * 4, 32)})"]
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
        body += cast_lines("rampc", "ramp", "int32", ct, "RAMP", scratch_slot) if ct != "int32" else \
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
                    pitch = ub_pitch(lay.span_len(i, lay.nc), es)
                    a, b = pitch * es, sc * es
                elif plan == "transposed":
                    a, b = es, ub_pitch(lay.nr, es) * es
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
            od = out.access.dtype
            zs = DTYPE_SIZE[stored_dtype(od, plan)] if plan in OUT_GATHER_PLANS else es
            if plan == "transposed":    # dst c * TP + r  <-  src r * S + c
                body.append(f"offsets(self.oo{j}.Get(int32), ramp, NC, NR, {zs}, S * {zs}, {out_pitch(lay.nr, od, plan)})")
            elif plan in ("elements", "col_strided"):   # one source element per 32 B block
                per = 32 // store_width(od, plan)
                rows, cols, a = (lay.nr, lay.nc, lay.s * zs) if plan == "elements" else (1, lay.nr, 0)
                body.append(f"spread(self.oo{j}.Get(int32), {rows}, {cols}, {a}, {zs}, {per})")
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
        pad = BYTE_PAD if byte_gather(leaf.dtype, plan) else "DataCopyPadExtParams(False, 0, 0, 0)"
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
            pitch = ub_pitch(lay.span_len(i, lay.nc), es)
            body += [f"span = (nc - 1) * {sc} + {1 + lay.span_extra(i)}",
                     f"DataCopyPad(x, {g}[{b}], DataCopyExtParams(nr, span * {es}, ({sr} - span) * {es}, "
                     f"gap_to(span * {es}, {pitch * es}), 0), {pad})"]
        elif plan == "transposed":
            tp = ub_pitch(lay.nr, es)
            body.append(f"DataCopyPad(x, {g}[{b}], DataCopyExtParams(nc, nr * {es}, ({sc} - nr) * {es}, "
                        f"gap_to(nr * {es}, {tp * es}), 0), {pad})")
        else:   # elements: each element in its own 32 B block
            rows = "nr" if sr else "1"
            body += [f"for r in range({rows}):",
                     f"    DataCopyPad(x[r * NC * {32 // es}], {g}[{b} + r * {sr}], "
                     f"DataCopyExtParams(nc, {es}, {(sc - 1) * es}, 0, 0), {pad})"]
        return body

