"""Cast between element types (V pipe, vconv) with Ascend C's rounding modes.

Which (src, dst, RoundMode) combinations exist comes from the chip's instruction table
(sage/npu/isa). The rounding itself follows CANN's precision-conversion rules: a result
that the destination cannot hold exactly lies between two neighbours; the mode picks one:
CAST_RINT nearest (ties to even), CAST_ROUND nearest (ties away from zero), CAST_FLOOR /
CAST_CEIL toward -inf / +inf, CAST_TRUNC toward zero, CAST_ODD the neighbour whose last
bit is odd; CAST_NONE is CAST_RINT when precision is lost (exact otherwise). Integer
results saturate. Float overflow keeps IEEE behaviour (nearest modes give inf, modes
toward zero the largest finite value).
"""

from __future__ import annotations

import enum

import numpy as np

from sage.npu import dtypes
from sage.npu.errors import KernelRuntimeError
from sage.npu.isa import legal
from sage.npu.isa.table import cast_modes
from sage.npu.ascendc import _checks as chk
from sage.npu.ascendc._half import store_half
from sage.npu.ascendc._vecbase import issue
from sage.npu.ascendc.tensors import LocalTensor
from sage.npu.sim.lanes import lane_ready


class RoundMode(enum.Enum):
    CAST_NONE = 0   # exact where possible, else as CAST_RINT
    CAST_RINT = 1   # round to nearest, ties to even
    CAST_FLOOR = 2
    CAST_CEIL = 3
    CAST_ROUND = 4  # round to nearest, ties away from zero
    CAST_TRUNC = 5
    CAST_ODD = 6    # von Neumann rounding (float narrowing only)


_NEAREST = (RoundMode.CAST_NONE, RoundMode.CAST_RINT)
_BITS = {2: np.uint16, 4: np.uint32}


def _to_integral(x: np.ndarray, mode: RoundMode) -> np.ndarray:
    """x (float64) rounded to an integral value by `mode`."""
    if mode in _NEAREST:
        return np.rint(x)
    if mode == RoundMode.CAST_FLOOR:
        return np.floor(x)
    if mode == RoundMode.CAST_CEIL:
        return np.ceil(x)
    if mode == RoundMode.CAST_TRUNC:
        return np.trunc(x)
    if mode == RoundMode.CAST_ROUND:
        return np.copysign(np.floor(np.abs(x) + 0.5), x)
    raise KernelRuntimeError(f"Cast: {mode.name} rounds only float -> float narrowing")


def _step(y: np.ndarray, away: np.ndarray, sign: np.ndarray) -> np.ndarray:
    """The neighbour of each float `y` one unit in the last place away from zero (``away``) or
    toward it; a zero steps to the smallest subnormal of sign ``sign``."""
    u = y.copy().view(_BITS[y.dtype.itemsize])
    one = u.dtype.type(1)
    zero = (u << one) == 0  # +0 or -0
    out = np.where(away, u + one, u - one)
    signbit = u.dtype.type(1 << (8 * u.dtype.itemsize - 1))
    out = np.where(zero & away, np.where(sign < 0, signbit | one, one), out)
    return out.astype(u.dtype).view(y.dtype)


def _round_float(wide: np.ndarray, dt: np.dtype, mode: RoundMode) -> np.ndarray:
    """`wide` (float64, the exact source values) rounded into float type `dt` by `mode`."""
    with np.errstate(over="ignore"):  # overflow to inf is the nearest-mode result
        y = np.asarray(wide.astype(np.float32).astype(dt) if dt == dtypes.bfloat16 else wide.astype(dt))
    if mode in _NEAREST:
        return y
    back = y.astype(np.float64)
    inexact = (back != wide) & ~np.isnan(wide)
    if not inexact.any():
        return y
    beyond = np.abs(back) > np.abs(wide)  # nearest-even went away from zero
    other = _step(y, ~beyond, np.sign(wide))
    toward = np.where(beyond, other, y)   # the neighbour nearer zero
    away = np.where(beyond, y, other)     # the neighbour farther from zero
    if mode == RoundMode.CAST_TRUNC:
        pick = toward
    elif mode == RoundMode.CAST_FLOOR:
        pick = np.where(wide > 0, toward, away)
    elif mode == RoundMode.CAST_CEIL:
        pick = np.where(wide > 0, away, toward)
    elif mode == RoundMode.CAST_ROUND:
        t64, a64 = toward.astype(np.float64), away.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            tie_or_more = np.abs(wide - t64) >= np.abs(a64 - t64) / 2
        pick = np.where(np.isinf(a64), y, np.where(tie_or_more, away, toward))
    else:  # CAST_ODD
        odd = (toward.view(_BITS[dt.itemsize]) & 1).astype(bool)
        pick = np.where(odd, toward, away)
    return np.where(inexact, pick, y).astype(dt)


def _exact64(src: np.ndarray) -> np.ndarray:
    # float64 holds every float16/bfloat16/float32 and every int up to 2^53 exactly; int64
    # sources beyond 2^53 are rounded twice (no DSL kernel reaches them)
    return src.astype(np.float64)


def convert(src: np.ndarray, dt: np.dtype, mode: RoundMode) -> np.ndarray:
    """src converted to `dt` by `mode` (no legality check: Cast checks the table, Fixpipe its own
    rules); a conversion to the same type is the identity."""
    sdt = src.dtype
    if dtypes.is_float(dt):
        return src if sdt == dt else _round_float(_exact64(src), dt, mode)
    info = np.iinfo(dt)
    if dtypes.is_float(sdt):
        r = _to_integral(_exact64(src), mode)
        r = np.nan_to_num(r, nan=0.0, posinf=info.max, neginf=info.min)
        return np.clip(r, info.min, info.max).astype(dt)
    return np.clip(src.astype(np.int64), info.min, info.max).astype(dt)  # integers saturate


_LEGAL: set[tuple] = set()  # (src dtype, dst dtype, RoundMode) combinations the table allows


@lane_ready
def Cast(dst, src, round_mode: RoundMode, count: int) -> None:
    """Cast(dst, src, RoundMode.X, count): dst = src converted to dst's dtype. Cost: vconv on the wider type."""
    if not isinstance(round_mode, RoundMode):
        raise KernelRuntimeError(f"Cast needs a RoundMode (e.g. RoundMode.CAST_NONE), got {round_mode!r}")
    if count.__class__ is not int:
        count = chk.count_arg(count, "Cast count")
    if not (dst.__class__ is LocalTensor and src.__class__ is LocalTensor and dst._slot.alloc_gen == dst._gen
            and src._slot.alloc_gen == src._gen and dst._slot.space.name == "UB" and src._slot.space.name == "UB"):
        dst, src = chk.local(dst, "Cast dst", "UB"), chk.local(src, "Cast src", "UB")
    key = (src._dtype, dst._dtype, round_mode)
    if key not in _LEGAL:
        modes = cast_modes().get((src._dtype, dst._dtype))
        if modes is None or round_mode.name not in modes:
            legal.cast(src._dtype, dst._dtype, round_mode.name)
        _LEGAL.add(key)  # (an enum's .name is a slow property: each combination is looked up once)
    width = max(dst._dtype.itemsize, src._dtype.itemsize)
    issue("Cast", "vconv", dst, (src,), count, itemsize=width)
    # (every form below is elementwise: a lane group's rows convert as each lane's would alone)
    if dst._slot is src._slot and dst._off != src._off and dst._dtype.itemsize != src._dtype.itemsize:
        data = src._arr[..., :count].copy()
    else:
        data = src._arr[..., :count]
    out = dst._arr[..., :count]
    if dst._dtype is dtypes.float16 and data.dtype == dtypes.float32 and round_mode in _NEAREST:
        store_half(out, data)  # numpy's bits, minus its slow path for float16 subnormals
    elif dst._dtype is dtypes.float32 and data.dtype == dtypes.float16:
        out[...] = data  # exact widening (the only mode the table allows)
    elif dst._dtype == data.dtype:  # float -> float: rounds each value to an integral one
        out[...] = _to_integral(_exact64(data), round_mode).astype(data.dtype)
    else:
        out[...] = convert(data, dst._dtype, round_mode)
