"""Sin and Cos as Ascend C's Atlas A2 implementation issues them (asc-devkit
impl/adv_api/detail/math/sin/sin_common_impl.h, cos/cos_common_impl.h, *_v220_impl.h):
range reduction x0 = x - k*pi with pi split in four (five for Cos) parts, the sign (-1)^k from
floor(k/2)*4 - 2k + 1, and an odd degree-9 polynomial x0*P(x0^2). All in float; half is cast
in and out (CAST_NONE).
"""

from __future__ import annotations

from sage.npu import dtypes
from sage.npu.ascendc import _hlbase as hl
from sage.npu.ascendc import vector as v
from sage.npu.ascendc._hlbase import barrier, steps
from sage.npu.ascendc.cast import Cast, RoundMode

MIN_TMP = {2: 8 * 256, 4: 3 * 256}  # GetSinMaxMinTmpSize / GetCosMaxMinTmpSize
INV_PI = 0.3183098733425140380859375
PI_PARTS = (3.140625, 0.0009670257568359375, 6.2771141529083251953125e-7, 1.21644916362129151821136474609375e-10,
            -1.0290623200529979163359041220560e-13)
HALF_PI, HALF_PI_REST = 1.57079637050628662109375, -0.00000004371139000189375
POLY = (2.604926501e-6, -0.0001980894471, 0.008333049340, -0.1666665792)


def _reduce(x, src, k, kpi, n: int, cos: bool) -> None:
    """k = round(x/pi) (Cos: rint(x/pi + 1/2)); x0 = x - k*pi, pi summed from its parts (Cos adds pi/2 on the way)."""
    if cos:
        steps(n, (v.Muls, k, src, INV_PI), (v.Adds, k, k, 0.5), (Cast, k, k, RoundMode.CAST_RINT))
    else:
        steps(n, (v.Muls, k, src, INV_PI), (Cast, k, k, RoundMode.CAST_ROUND))
    steps(n, (v.Muls, kpi, k, PI_PARTS[0]), (v.Sub, x, src, kpi), (v.Muls, kpi, k, PI_PARTS[1]), (v.Sub, x, x, kpi))
    if cos:
        steps(n, (v.Adds, x, x, HALF_PI))
    for part in PI_PARTS[2:5 if cos else 4]:
        steps(n, (v.Muls, kpi, k, part), (v.Sub, x, x, kpi))
    if cos:
        steps(n, (v.Adds, x, x, HALF_PI_REST))


def _polynomial(dst, x, k, kpi, n: int, cos: bool) -> None:
    """dst = (-1)^k * x0 * P(x0^2), P = (((R0 s + R1) s + R2) s + R3) s + 1 (Cos clamps to [-1, 1])."""
    steps(n, (v.Mul, kpi, x, x), (v.Muls, dst, k, 0.5), (Cast, dst, dst, RoundMode.CAST_FLOOR), (v.Muls, dst, dst, 4.0),
          (v.Muls, k, k, -2.0), (v.Add, dst, dst, k), (v.Adds, dst, dst, 1.0), (v.Muls, k, kpi, POLY[0]),
          (v.Adds, k, k, POLY[1]))
    for coeff in (*POLY[2:], 1.0):
        steps(n, (v.Mul, k, k, kpi), (v.Adds, k, k, coeff))
    steps(n, (v.Mul, k, k, x), (v.Mul, dst, k, dst))
    if cos:
        steps(n, (v.Mins, dst, dst, 1.0), (v.Maxs, dst, dst, -1.0))


def _trig(name: str, cos: bool, dst, src, tmp, count) -> None:
    tmp, count = hl.tmp_and_count(tmp, count)
    dt, count = hl.operands(name, dst, src, count)
    work = hl.temp_buffer(name, tmp, MIN_TMP[dt.itemsize], dst, src)
    if dt == dtypes.float16:
        stack, (conv, k, kpi, x) = hl.split(work, dtypes.float32, 4)
        for off, n in hl.chunks(count, stack):
            Cast(conv, src[off], RoundMode.CAST_NONE, n)
            barrier()
            _reduce(x, conv, k, kpi, n, cos)
            _polynomial(conv, x, k, kpi, n, cos)
            Cast(dst[off], conv, RoundMode.CAST_NONE, n)
            barrier()
        return
    stack, (k, kpi, x) = hl.split(work, dtypes.float32, 3)
    for off, n in hl.chunks(count, stack):
        _reduce(x, src[off], k, kpi, n, cos)
        _polynomial(dst[off], x, k, kpi, n, cos)


def Sin(dst, src, sharedTmpBuffer, calCount=None) -> None:
    """(-1)^k * x0*P(x0^2) (degree 9), x0 = x - k*pi, k = round(x/pi), in float. Temp >= 768 B (half 2048);
    27 instrs per temp/12 (half temp/16)."""
    _trig("Sin", False, dst, src, sharedTmpBuffer, calCount)


def Cos(dst, src, sharedTmpBuffer, calCount=None) -> None:
    """Sin's polynomial at x0 + pi/2, k = rint(x/pi + 1/2), clamped to [-1, 1]. Temp as Sin; 34 instrs per chunk."""
    _trig("Cos", True, dst, src, sharedTmpBuffer, calCount)
