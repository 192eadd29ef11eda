"""Cast between element types (V pipe, vconv) with Ascend C's rounding modes."""

from __future__ import annotations

import enum

import numpy as np

from sage.npu import dtypes
from sage.npu.errors import KernelRuntimeError
from sage.npu.ascendc import _checks as chk
from sage.npu.ascendc._half import store_half
from sage.npu.ascendc._vecbase import issue
from sage.npu.ascendc.tensors import LocalTensor


class RoundMode(enum.Enum):
    CAST_NONE = 0   # exact where possible; narrowing float rounds to nearest even; float -> int rounds to nearest even
    CAST_RINT = 1   # round to nearest, ties to even
    CAST_FLOOR = 2
    CAST_CEIL = 3
    CAST_ROUND = 4  # round to nearest, ties away from zero
    CAST_TRUNC = 5
    CAST_ODD = 6    # von Neumann rounding (float narrowing only)


def _round(x: np.ndarray, mode: RoundMode) -> np.ndarray:
    if mode in (RoundMode.CAST_NONE, RoundMode.CAST_RINT):
        return np.rint(x)
    if mode == RoundMode.CAST_FLOOR:
        return np.floor(x)
    if mode == RoundMode.CAST_CEIL:
        return np.ceil(x)
    if mode == RoundMode.CAST_TRUNC:
        return np.trunc(x)
    if mode == RoundMode.CAST_ROUND:
        return np.sign(x) * np.floor(np.abs(x) + 0.5)
    raise KernelRuntimeError(f"Cast: {mode.name} is only defined for float -> float narrowing")


def _narrow_float(x: np.ndarray, dt: np.dtype, mode: RoundMode) -> np.ndarray:
    y = x.astype(dt)  # round to nearest even
    if mode in (RoundMode.CAST_NONE, RoundMode.CAST_RINT, RoundMode.CAST_ROUND):
        return y
    back = y.astype(np.float64)
    wide = x.astype(np.float64)
    if mode == RoundMode.CAST_FLOOR:
        fix = back > wide
        direction = -np.inf
    elif mode == RoundMode.CAST_CEIL:
        fix = back < wide
        direction = np.inf
    elif mode == RoundMode.CAST_TRUNC:
        fix = np.abs(back) > np.abs(wide)
        direction = 0.0
    else:  # CAST_ODD: inexact results take the neighbour with an odd last bit
        bits = y.view(np.uint16 if dt.itemsize == 2 else np.uint32)
        fix = (back != wide) & (bits & 1 == 0) & np.isfinite(wide)
        toward = np.where(back > wide, -np.inf, np.inf)
        y[fix] = np.nextafter(y.astype(np.float32)[fix], toward[fix]).astype(dt) if dt == dtypes.bfloat16 else np.nextafter(y[fix], toward[fix].astype(dt))
        return y
    if dt == dtypes.bfloat16:
        raise KernelRuntimeError(f"Cast to bfloat16 supports CAST_NONE/CAST_RINT/CAST_ROUND/CAST_ODD, not {mode.name}")
    y[fix] = np.nextafter(y[fix], np.asarray(direction, dtype=dt))
    return y


_DIRECT = {(dtypes.float16, dtypes.float32), (dtypes.bfloat16, dtypes.float32), (dtypes.float32, dtypes.float16),
           (dtypes.float32, dtypes.bfloat16)}


def convert(src: np.ndarray, dt: np.dtype, mode: RoundMode) -> np.ndarray:
    sdt = src.dtype
    if (sdt, dt) in _DIRECT and mode in (RoundMode.CAST_NONE, RoundMode.CAST_RINT):
        return src  # exact widening or round-to-nearest-even narrowing: numpy's cast on assignment
    if dtypes.is_float(dt):
        if dtypes.is_float(sdt) and dt.itemsize < sdt.itemsize or (sdt == dtypes.float16 and dt == dtypes.bfloat16) \
                or (sdt == dtypes.bfloat16 and dt == dtypes.float16):
            return _narrow_float(src.astype(np.float32) if sdt == dtypes.bfloat16 else src, dt, mode)
        return src.astype(dt)
    info = np.iinfo(dt)
    if dtypes.is_float(sdt):
        r = _round(src.astype(np.float64), mode)
        r = np.nan_to_num(r, nan=0.0, posinf=info.max, neginf=info.min)
        return np.clip(r, info.min, info.max).astype(dt)
    return np.clip(src.astype(np.int64), info.min, info.max).astype(dt)  # integers saturate


_NEAREST = (RoundMode.CAST_NONE, RoundMode.CAST_RINT)


def Cast(dst, src, round_mode: RoundMode, count: int) -> None:
    """Cast(dst, src, RoundMode.X, count): dst = src converted to dst's dtype. Cost: vconv on the wider type."""
    if not isinstance(round_mode, RoundMode):
        raise KernelRuntimeError(f"Cast needs a RoundMode (e.g. RoundMode.CAST_NONE), got {round_mode!r}")
    if count.__class__ is not int:
        count = chk.count_arg(count, "Cast count")
    if not (dst.__class__ is LocalTensor and src.__class__ is LocalTensor and dst._slot.alloc_gen == dst._gen
            and src._slot.alloc_gen == src._gen and dst._slot.space.name == "UB" and src._slot.space.name == "UB"):
        dst, src = chk.local(dst, "Cast dst", "UB"), chk.local(src, "Cast src", "UB")
    width = max(dst._dtype.itemsize, src._dtype.itemsize)
    issue("Cast", "vconv", dst, (src,), count, itemsize=width)
    if dst._slot is src._slot and dst._off != src._off and dst._dtype.itemsize != src._dtype.itemsize:
        data = src._arr[:count].copy()
    else:
        data = src._arr[:count]
    if dst._dtype is dtypes.float16 and data.dtype == dtypes.float32 and round_mode in _NEAREST:
        store_half(dst._arr[:count], data)  # numpy's bits, minus its slow path for float16 subnormals
    elif dst._dtype is dtypes.float32 and data.dtype == dtypes.float16 and round_mode in _NEAREST:
        dst._arr[:count] = data  # exact widening (what convert() leaves to the assignment)
    else:
        dst._arr[:count] = convert(data, dst._dtype, round_mode)
