"""float32 -> float16 stores with numpy's exact bits, in fewer passes than numpy's own cast.

numpy converts to float16 element by element in software (~4.5 ns per element, and ~6x
that for results in the float16 subnormal range, |x| < 2^-14, e.g. most of a softmax row
over 4096 columns). Here the whole array is converted with a few vectorised integer and
float operations instead, round half to even like numpy's converter (checked against it on
every float32 bit pattern, tests/npu/test_half_and_blas.py samples them):

- normal results: the float32 bits rounded to 10 mantissa bits (+ half an ulp, minus one
  unless the kept bit is odd), exponent rebased; a carry rounds up into the exponent;
- subnormal results: |x| + 0.5 in float32, whose FPU rounding to units of 2^-24 is exactly
  float16's subnormal grid (half to even);
- the two are merged with a minimum: where the result is normal the subnormal formula gives
  a number at least as large (it counts units of 2^-24, a normal's bits count fewer), and
  where it is subnormal the normal formula gives a larger one (it wraps around below 2^-14,
  or gives 1024, the smallest normal, to the values that round up to it);
- inf and NaN (|x| >= 2^16 after rounding) as numpy: NaN keeps its top payload bits.
"""

from __future__ import annotations

import numpy as np

_U = np.uint32
_ABS = _U(0x7fffffff)
_MIN_NORMAL = _U(0x38800000)   # 2^-14: below it the float16 result is subnormal (or zero)
_OVERFLOW = _U(0x47800000)     # 2^16: from here on inf (or NaN)
_INF_BITS = _U(0x7f800000)
# + half an ulp minus one (0xfff), and the float32 -> float16 exponent rebias less one binade,
# (127 - 15 + 1) << 23, in one constant: mod 2^32, every lane below 2^-14 that does not round up
# to it wraps around to a huge value, which the minimum drops; the binade is added back after the shift
_ROUND_REBIAS = _U((0xfff - ((127 - 15 + 1) << 23)) % (1 << 32))
_BINADE = _U(1 << 10)
_HALF = np.float32(0.5)
_HALF_BITS = _U(0x3f000000)
_SIGN16 = _U(0x8000)


def half_bits(src: np.ndarray) -> np.ndarray:
    """The float16 bit patterns (uint16) numpy's ``src.astype(float16)`` gives, for a contiguous float32 array."""
    return _bits32(src).astype(np.uint16)


def _bits32(src: np.ndarray) -> np.ndarray:
    """half_bits, each pattern still in a uint32 lane."""
    u = src.view(_U)
    a = u & _ABS
    t = a >> _U(13)
    t &= _U(1)
    t += a
    t += _ROUND_REBIAS             # ties go to even: + 0xfff, + 1 more when the kept bit is odd
    t >>= _U(13)
    t += _BINADE
    if a.size == 0:
        return t
    top = a.max()
    if a.min() < _MIN_NORMAL:
        if top > _INF_BITS:  # a signalling NaN lane raises 'invalid' (its lane is overwritten below)
            with np.errstate(invalid="ignore"):
                sub = a.view(np.float32) + _HALF
        else:  # (no NaN: no error state to set, which costs more than the addition)
            sub = a.view(np.float32) + _HALF  # the FPU rounds to whole units of 2^-24, half to even
        sub = sub.view(_U)
        sub -= _HALF_BITS
        np.minimum(t, sub, out=t)
    if top >= _OVERFLOW:      # inf; NaN keeps its top payload bits and stays a NaN, as in numpy
        payload = (a >> _U(13)) & _U(0x3ff)
        payload[payload == 0] = 1
        np.copyto(t, np.where(a > _INF_BITS, _U(0x7c00) | payload, _U(0x7c00)), where=a >= _OVERFLOW)
    sign = u >> _U(16)
    sign &= _SIGN16
    t |= sign
    return t


def store_half(dst: np.ndarray, src: np.ndarray) -> None:
    """dst[...] = src for a contiguous float16 dst and float32 src of one shape, bit for bit as numpy."""
    np.copyto(dst.view(np.uint16), _bits32(src), casting="unsafe")  # narrowed on the way: one pass fewer
