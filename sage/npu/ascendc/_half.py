"""float32 -> float16 stores with numpy's exact bits, without numpy's slow path for tiny values.

numpy converts to float16 in software, and results in the float16 subnormal range
(|x| < 2^-14, e.g. most of a softmax row over 4096 columns) take ~6x longer per element
than normal ones. When a store has such elements, the whole array is converted here with
integer operations instead: round half to even, like numpy's converter (checked against
it on every float32 bit pattern). Arrays without them go through numpy's own cast.
"""

from __future__ import annotations

import numpy as np

_U = np.uint32
_ABS = _U(0x7fffffff)
_MIN_NORMAL = _U(0x38800000)   # 2^-14: below it the float16 result is subnormal (or zero)
_OVERFLOW = _U(0x47800000)     # 2^16: from here on inf (or NaN)
_INF_BITS = _U(0x7f800000)
_REBIAS = _U((127 - 15) << 10)  # float32 -> float16 exponent bias, in float16 bit position
_HALF = np.float32(0.5)
_HALF_BITS = _U(0x3f000000)


def half_bits(src: np.ndarray) -> np.ndarray:
    """The float16 bit patterns (uint16) numpy's ``src.astype(float16)`` gives, for a contiguous float32 array."""
    u = src.view(_U)
    a = u & _ABS
    t = a >> _U(13)
    t &= _U(1)
    t += a
    t += _U(0xfff)                 # + half an ulp, minus one unless the kept bit is odd: ties go to even
    t >>= _U(13)
    t -= _REBIAS                   # a mantissa carry rounds up into the exponent, up to inf
    tiny = a < _MIN_NORMAL
    if tiny.any():
        with np.errstate(invalid="ignore", over="ignore"):  # NaN/Inf lanes are overwritten below
            sub = a.view(np.float32) + _HALF  # the FPU rounds to whole units of 2^-24, half to even
        sub = sub.view(_U)
        sub -= _HALF_BITS
        np.copyto(t, sub, where=tiny)
    big = a >= _OVERFLOW
    if big.any():                  # inf; NaN keeps its top payload bits and stays a NaN, as in numpy
        payload = (a >> _U(13)) & _U(0x3ff)
        payload[payload == 0] = 1
        np.copyto(t, np.where(a > _INF_BITS, _U(0x7c00) | payload, _U(0x7c00)), where=big)
    t |= (u >> _U(16)) & _U(0x8000)
    return t.astype(np.uint16)


def store_half(dst: np.ndarray, src: np.ndarray) -> None:
    """dst[...] = src for a contiguous float16 dst and float32 src of one shape, bit for bit as numpy."""
    if (src.view(_U) & _ABS < _MIN_NORMAL).any():
        dst.view(np.uint16)[...] = half_bits(src)
    else:
        dst[...] = src
