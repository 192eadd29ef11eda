"""The tile program's copy and preparation code: `Emit`, and its results' side.

`Emit` adds to `Prepare` (tile_prepare.py, on `CopyIn` of tile_copy_in.py) the store of
each output (converted to its dtype, gathered into its copy-out order) and the copy-out
to GM, and gives the helper functions the program's text calls (`helpers`).
"""

from __future__ import annotations

from sage.kernels.library.casts import cast_lines
from sage.kernels.library.source import DTYPE_SIZE, dsl_dtype, ub_helpers
from sage.kernels.library.tile_copy_in import scratch_slot
from sage.kernels.library.tile_layout import out_pitch, store_width, stored_dtype, widened
from sage.kernels.library.tile_prepare import Prepare
from sage.kernels.library.tile_round import rounded_lines
from sage.kernels.library.tile_spec import Access


class Emit(Prepare):
    """The copy and preparation code of a tile program."""

    def store(self, j: int, acc: Access, ref: str, level: str, mode: str | None = None) -> list[str]:
        """Output j from `ref`, converted to its dtype (`mode`: the rounding of a float -> int32 cast)."""
        spec, lay = self.spec, self.lay
        ct, od = spec.compute, acc.dtype
        dt = dsl_dtype(od)
        plan = lay.out_plans[j]
        count = "nr" if level == "col" else "n"
        target = f"y{j}" if plan in ("rows", "row_loop", "col") else f"z{j}"
        sd = stored_dtype(od, plan) if target != f"y{j}" else od
        lines = [f"y{j} = self.qo{j}.AllocTensor({dt})"]
        if target != f"y{j}":
            lines.append(f"z{j} = self.yb{j}.Get({dsl_dtype(sd)})")
        if mode is not None:
            lines += rounded_lines(target, ref, sd, mode, count, scratch_slot)
        elif sd != ct:
            lines += cast_lines(target, ref, ct, sd, count, scratch_slot)
        else:
            lines.append(f"Adds({target}, {ref}, 0, {count})")
        if target != f"y{j}":
            unit = store_width(od, plan)
            n_out = {"transposed": f"NC * {out_pitch(lay.nr, od, plan)}", "elements": f"NR * NC * {32 // unit}",
                     "col_strided": f"NR * {32 // unit}"}[plan]
            if widened(od, plan):
                lines += [f"w{j} = self.wb{j}.Get(int32)", f"Gather(w{j}, z{j}, self.oo{j}.Get(int32), 0, {n_out})",
                          f"Cast(y{j}, w{j}, RoundMode.CAST_NONE, {n_out})"]
            else:
                dst = f"y{j}.ReinterpretCast(int16)" if sd != od else f"y{j}"     # a byte gathered as int16
                lines.append(f"Gather({dst}, z{j}, self.oo{j}.Get(int32), 0, {n_out})")
        lines.append(f"self.qo{j}.EnQue(y{j})")
        return lines

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
                tp = out_pitch(lay.nr, acc.dtype, plan)
                body.append(f"{ind}DataCopyPad({g}[{b}], y, DataCopyExtParams(nc, nr * {es}, gap_to(nr * {es}, "
                            f"{tp * es}), ({sc} - nr) * {es}, 0))")
            else:
                body += [f"{ind}for r in range({rows}):",
                         f"{ind}    DataCopyPad({g}[{b} + r * {sr}], y[r * NC * {32 // es}], "
                         f"DataCopyExtParams(nc, {es}, 0, {(sc - 1) * es}, 0))"]
            body.append(f"self.qo{j}.FreeTensor(y)")
        return body

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
