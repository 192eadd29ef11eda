"""Activation high-level APIs (Gelu, FasterGelu, FasterGeluV2, Sigmoid, Silu, Swish) as Ascend C's
Atlas A2 implementation issues them: the same basic instructions, constants, PipeBarriers,
temporary-buffer split and chunking (asc-devkit impl/adv_api/detail/activation/*, cited per
API in sage/npu/isa/atlas_a2.toml). Arithmetic is in the operand dtype, as on the chip.
"""

from __future__ import annotations

from sage.npu import dtypes
from sage.npu.ascendc import _hlbase as hl
from sage.npu.ascendc import vector as v
from sage.npu.ascendc.cast import Cast, RoundMode
from sage.npu.ascendc._hlbase import barrier, steps

GELU_MIN_TMP = 3 * 256  # GetGeluMinTmpSize: three 256 B repeats
SIGMOID_MIN_TMP = 256   # GetSigmoidMaxMinTmpSize's minimum


def _divide(dst, num, den, n: int, fast: bool) -> None:
    """num / den: Div, or Reciprocal then Mul under highPerformance (less accurate, cheaper)."""
    if fast:
        steps(n, (v.Reciprocal, den, den), (v.Mul, dst, num, den))
    else:
        steps(n, (v.Div, dst, num, den))


def _gelu_tanh(dst, src, a, b, n: int, fast: bool) -> None:
    """x * sigmoid(y), y = 1.5957691216057308 * (x + 0.044715 x^3), in the overflow-safe form
    x / (1 + exp(-|y|)) * exp(min(y, 0)) (gelu_impl.h GeluCalcSimplifiedAvoid)."""
    steps(n, (v.Mul, a, src, src), (v.Mul, b, src, a), (v.Muls, a, b, 0.044715), (v.Add, b, src, a),
          (v.Muls, a, b, 1.5957691216057308), (v.Mins, b, a, 0.0), (v.Exp, b, b), (v.Abs, a, a),
          (v.Muls, a, a, -1.0), (v.Exp, a, a), (v.Adds, a, a, 1.0))
    _divide(a, src, a, n, fast)
    steps(n, (v.Mul, dst, a, b))


def _faster_gelu(dst, src, a, n: int, fast: bool) -> None:
    """x / (1 + exp(-1.702 x)) (gelu_impl.h FastGeluCalcSimplified)."""
    steps(n, (v.Muls, a, src, -1.702), (v.Exp, a, a), (v.Adds, a, a, 1.0))
    _divide(dst, src, a, n, fast)


def _faster_gelu_v2(dst, src, a, b, c, n: int, fast: bool) -> None:
    """x * (sgn(x) * (-0.1444 (min(|0.7071 x|, 1.769) - 1.769)^2 + 0.5) + 0.5), sgn(x) taken as
    (x + 1e-12) / |x + 1e-12| (gelu_impl.h FastGeluV2CalcSimplified)."""
    steps(n, (v.Muls, a, src, 0.7071), (v.Abs, a, a), (v.Mins, a, a, 1.769), (v.Adds, a, a, -1.769),
          (v.Mul, a, a, a), (v.Muls, a, a, -0.1444), (v.Adds, a, a, 0.5), (v.Adds, b, src, 0.000000000001),
          (v.Abs, c, b))
    _divide(b, b, c, n, fast)
    steps(n, (v.Mul, a, a, b), (v.Adds, a, a, 0.5), (v.Mul, dst, src, a))


def _gelu_family(name, body, parts, dst, src, tmp, count, high_precision, fast) -> None:
    """The shared frame of the three Gelus (gelu_impl.h GeluClass): the temp split into `parts`
    work tensors (+1 float conversion tensor for half under highPrecision), chunk by chunk."""
    tmp, count = hl.tmp_and_count(tmp, count)
    dt, count = hl.operands(name, dst, src, count)
    work = hl.temp_buffer(name, tmp, GELU_MIN_TMP, dst, src)
    if high_precision and dt == dtypes.float16:
        stack, views = hl.split(work, dtypes.float32, parts + 1)
        conv = views[-1]
        for off, n in hl.chunks(count, stack):
            Cast(conv, src[off], RoundMode.CAST_NONE, n)
            barrier()
            body(conv, conv, *views[:-1], n, fast)
            Cast(dst[off], conv, RoundMode.CAST_NONE, n)
            barrier()
        return
    stack, views = hl.split(work, dt, parts)
    for off, n in hl.chunks(count, stack):
        body(dst[off], src[off], *views, n, fast)


def Gelu(dst, src, sharedTmpBuffer, dataSize=None, highPrecision=False, highPerformance=False) -> None:
    """Tanh-form GELU, x*sigmoid(1.5958*(x + 0.044715x^3)) (exact erf GELU: build it from Erf). Temp >= 768 B;
    13 instrs per temp/(2 sizeof); highPrecision: half computed in float; highPerformance:
    Reciprocal+Mul for Div."""
    _gelu_family("Gelu", _gelu_tanh, 2, dst, src, sharedTmpBuffer, dataSize, highPrecision, highPerformance)


def FasterGelu(dst, src, sharedTmpBuffer, dataSize=None, highPrecision=False, highPerformance=False) -> None:
    """x / (1 + exp(-1.702x)). Temp >= 768 B; 4 instrs per temp/sizeof."""
    _gelu_family("FasterGelu", _faster_gelu, 1, dst, src, sharedTmpBuffer, dataSize, highPrecision,
                 highPerformance)


def FasterGeluV2(dst, src, sharedTmpBuffer, dataSize=None, highPrecision=False, highPerformance=False) -> None:
    """x*(sgn(x)*(0.5 - 0.1444*(min(|0.7071x|, 1.769) - 1.769)^2) + 0.5). Temp >= 768 B; 13 instructions per
    temp/(3 sizeof)."""
    _gelu_family("FasterGeluV2", _faster_gelu_v2, 3, dst, src, sharedTmpBuffer, dataSize, highPrecision,
                 highPerformance)


def Sigmoid(dst, src, sharedTmpBuffer, calCount=None) -> None:
    """1 / (1 + exp(-x)). Temp >= 256 B; 5 instrs per temp/sizeof."""
    tmp, count = hl.tmp_and_count(sharedTmpBuffer, calCount)
    dt, count = hl.operands("Sigmoid", dst, src, count)
    work = hl.temp_buffer("Sigmoid", tmp, SIGMOID_MIN_TMP, dst, src)
    split, (ones,) = hl.split(work, dt, 1, unit=32 // dt.itemsize)
    for off, n in hl.chunks(count, split):
        d, s = dst[off], src[off]
        barrier()
        steps(n, (v.Muls, d, s, -1.0), (v.Exp, d, d))
        v.Adds(d, d, 1.0, n)  # no barrier: the Duplicate below does not depend on it
        steps(n, (v.Duplicate, ones, 1.0), (v.Div, d, ones, d))


def _over_one_plus_exp(name: str, dst, src, count, scale: float) -> None:
    """x / (1 + exp(scale * x)) over the whole count, no temp (silu/swish_common_impl.h, A2 path)."""
    dt, count = hl.operands(name, dst, src, count)
    steps(count, (v.Muls, dst, src, dt.type(scale)), (v.Exp, dst, dst), (v.Adds, dst, dst, 1.0), (v.Div, dst, src, dst))


def Silu(dst, src, dataSize) -> None:
    """x / (1 + exp(-x)); no temp, 4 instructions; dst must not be src."""
    _over_one_plus_exp("Silu", dst, src, dataSize, -1.0)


def Swish(dst, src, dataSize, scalarValue) -> None:
    """x / (1 + exp(-scalarValue*x)); no temp, 4 instructions."""
    _over_one_plus_exp("Swish", dst, src, dataSize, -1.0 * float(scalarValue))
