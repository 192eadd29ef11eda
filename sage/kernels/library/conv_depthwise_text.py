"""The per-unit text of conv_depthwise.py's kernel: input copies, padding rows, taps, Gather offsets."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sage.kernels.library.source import DTYPE_SIZE, dsl_dtype

if TYPE_CHECKING:
    from sage.kernels.library.conv_depthwise import DepthwiseSpec, _Geometry


def _ceil(n: int, unit: int) -> int:
    return -(-n // unit) * unit


def copies(spec: DepthwiseSpec, g: _Geometry) -> str:
    """The unit's input rows lo..hi-1 (relative to ih0) into its slot, once. Stride 1: column
    u is padded column u (the left zeros from leftPadding); else the data starts at the
    32 B-aligned column ceil(p_w)."""
    es = DTYPE_SIZE[spec.dtype]
    pw = spec.padding[1]
    if spec.shifted:
        p, left, dst_col = g.base, pw, 0
    else:
        p, left, dst_col = g.pitch, 0, _ceil(pw, 32 // es)
    count = spec.w
    fill = (_ceil((left + count) * es, 32) - (left + count) * es) // es
    right = min(fill, 32 // es - left)
    gap = (p * es - _ceil((left + right + count) * es, 32)) // 32
    pad = f"DataCopyPadExtParams(True, {left}, {right}, 0)" if left or right else "DataCopyPadExtParams(False, 0, 0, 0)"
    return (f"            if hi > lo:\n"
            f"                DataCopyPad(xin[lo * {p} + {dst_col}], self.g_x[plane * {spec.h * spec.w} + (ih0 + lo) * {spec.w}], "
            f"DataCopyExtParams(hi - lo, {count * es}, 0, {gap}, 0), {pad})")


def pad_rows(spec: DepthwiseSpec, g: _Geometry) -> str:
    """Rows above and below the image are zero in every copy (a previous unit may have filled them)."""
    p, copies = (g.base if spec.shifted else g.pitch), 1
    lines = []
    for j in range(copies):
        base = j * g.rows_in * p
        lines += [f"            if lo > 0:", f"                Duplicate(xin[{base}], 0.0, lo * {p})",
                  f"            if hi < {g.rows_in}:", f"                Duplicate(xin[{base} + max(hi, lo) * {p}], 0.0, ({g.rows_in} - max(hi, lo)) * {p})"]
    return "\n".join(lines)


def taps(spec: DepthwiseSpec, g: _Geometry) -> str:
    es = DTYPE_SIZE[spec.dtype]
    (_, pw), (dh, dw) = spec.padding, spec.dilation
    p, acc_n = g.pitch, g.rows * g.opitch
    lines = []
    for i in range(spec.kh):
        for j in range(spec.kw):
            wv = f"wf.GetValue(ch * {spec.kh * spec.kw} + {i * spec.kw + j})"
            if spec.shifted:
                lines.append(f"            Axpy(acc, shv[{j * g.rows_in * p + i * dh * p}], {wv}, {acc_n})")
            else:
                base = (i * dh * p + j * dw + _ceil(pw, 32 // es) - pw) * es
                lines += [f"            Gather(self.gbuf.Get({dsl_dtype(spec.dtype)}), xin, self.ibuf.Get(int32), {base}, {acc_n})",
                          f"            Axpy(acc, self.gbuf.Get({dsl_dtype(spec.dtype)}), {wv}, {acc_n})"]
    return "\n".join(lines)


def offsets(spec: DepthwiseSpec, g: _Geometry) -> str:
    """Byte offsets of output (r, ow)'s tap-(0, 0) input inside a slot; padding columns of the
    accumulator (ow >= OW) read column 0 (never stored)."""
    es = DTYPE_SIZE[spec.dtype]
    sh, sw = spec.stride
    _, ow = spec.out_hw
    return f'''        offs = self.ibuf.Get(int32)
        SetFlag(HardEvent.V_S, 1)
        WaitFlag(HardEvent.V_S, 1)
        for q in range({g.opitch}):
            offs.SetValue(q, q * {sw * es} if q < {ow} else 0)
        SetFlag(HardEvent.S_V, 1)
        WaitFlag(HardEvent.S_V, 1)
        for q in range(1, {g.rows}):
            Adds(offs[q * {g.opitch}], offs, q * {sh * g.pitch * es}, {g.opitch})'''


def shift_table(spec: DepthwiseSpec, g: _Geometry) -> str:
    """Stride 1: byte offsets of copy row r, column u in the copied rows (pitch g.base); the
    shift of filter column j is Gather's base address. Built once: a ramp, then rows by doubling."""
    es = DTYPE_SIZE[spec.dtype]
    p, n = g.pitch, g.rows_in * g.pitch
    return f'''        tb = self.tbl.Get(int32)
        SetFlag(HardEvent.V_S, 1)
        WaitFlag(HardEvent.V_S, 1)
        for q in range(8):
            tb.SetValue(q, q * {es})
        SetFlag(HardEvent.S_V, 1)
        WaitFlag(HardEvent.S_V, 1)
        ln = 8
        while ln < {p}:
            Adds(tb[ln], tb, ln * {es}, min(ln, {p} - ln))
            ln = ln * 2
        ln = 1
        while ln < {g.rows_in}:
            Adds(tb[ln * {p}], tb, ln * {g.base * es}, min(ln, {g.rows_in} - ln) * {p})
            ln = ln * 2
        shv = self.shb.Get({dsl_dtype(spec.dtype)})'''


def shift_copies(spec: DepthwiseSpec, g: _Geometry) -> str:
    """Stride 1: copy j (column u = padded column u + j*dw) gathered from the copied rows,
    after which the input slot is free for the next unit's copy."""
    if not spec.shifted:
        return ""
    es, dw = DTYPE_SIZE[spec.dtype], spec.dilation[1]
    n = g.rows_in * g.pitch
    lines = [f"            Gather(shv[{j * n}], xin, tb, {j * dw * es}, {n})" for j in range(spec.kw)]
    return "\n".join(lines + ["            SetFlag(HardEvent.V_MTE2, s)"])
