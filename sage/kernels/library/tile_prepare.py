"""The operands of a tile program's compute: `Prepare`, the middle layer of `Emit` (tile_emit.py).

A leaf's tile as the lowering reads it: dequeued, gathered out of its own or its host's
span, cast to the compute dtype, read as a scalar, copied once per change of its base
(resident leaves), cut out of its host's tile (windowed leaves) or built from a ramp
(Iota leaves); which leaves a phase prepares, and their release.
"""

from __future__ import annotations

from sage.kernels.library.casts import cast_lines
from sage.kernels.library.source import DTYPE_SIZE, dsl_dtype
from sage.kernels.library.tile_copy_in import CopyIn, scratch_slot
from sage.kernels.library.tile_layout import GATHER_PLANS, IOTA_PAD, gathered_dtype
from sage.kernels.library.tile_resident import resident_lines
from sage.kernels.library.tile_seg import seg_info, seg_shape
from sage.kernels.library.tile_spec import Access, Iota, leaf_kind
from sage.kernels.lowering import Val


class Prepare(CopyIn):
    """The preparation of each leaf for the compute."""

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
        src_dtype = leaf.dtype
        if plan in GATHER_PLANS:
            n_gather = "nr" if plan == "col_strided" else "nr * s" if kind == "full" else "s"
            # a byte starts its own 32 B block, a zero byte after it (BYTE_PAD): the int16 there is
            # its value; an int64's low word is at its own address (little-endian)
            src_dtype = gathered_dtype(leaf.dtype, plan)
            view = f"x{host}.ReinterpretCast({dsl_dtype(src_dtype)})" if src_dtype != leaf.dtype else f"x{host}"
            lines += [f"g{i} = self.gb{i}.Get({dsl_dtype(src_dtype)})",
                      f"Gather(g{i}, {view}, self.ob{host}.Get(int32), {shift * DTYPE_SIZE[leaf.dtype]}, {n_gather})"]
            src = f"g{i}"
        if not lay.casts(i):
            return Val(kind, src), lines, []
        lines.append(f"c{i} = self.b{i}.Get({dsl_dtype(ct)})")
        if src_dtype != ct:
            lines += cast_lines(f"c{i}", src, src_dtype, ct, count, scratch_slot)
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
            convert = cast_lines(ref, f"x{i}", leaf.dtype, ct, count, scratch_slot) if leaf.dtype != ct else \
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
                count = "TILE_ELEMS" if leaf_kind(spec, leaf) == "full" else f"RAMP + {IOTA_PAD}"
                body += [f"self.tb_iota{i} = TBuf(TPosition.VECCALC)",
                         f"self.pipe.InitBuffer(self.tb_iota{i}, buf_bytes({count}, {lay.es_c}))"]
        return body

    def prepare_order(self, used: set[int]) -> list[int]:
        """The leaves a phase prepares: the used ones and the hosts of used sharers, hosts first."""
        share = self.lay.share
        windows = self.lay.windows
        leaves = used | {share[i][0] for i in used if i in share} | {windows[i][0] for i in used if i in windows}
        return sorted(leaves, key=lambda i: (i in share or i in windows, i))

    def free_leaves(self, leaves: list[int]) -> list[str]:
        return [f"self.q{i}.FreeTensor(x{i})" for i in leaves if self.lay.loads(i)]

