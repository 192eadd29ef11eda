"""Cast rounding per (src, dst) pair and RoundMode, against values derived by hand.

The worked examples are those of CANN's precision-conversion page (asc-devkit
docs/zh/api/SIMD-API/基础API/数据结构/precision_conversion.md); the ties are added here:
a value exactly halfway between two neighbours goes to the even one under CAST_RINT and to
the one farther from zero under CAST_ROUND.
"""

import ml_dtypes
import numpy as np
import pytest

BF16 = np.dtype(ml_dtypes.bfloat16)
MODES = ("CAST_RINT", "CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC")

CAST = """
@kernel
def k(x, z, n, pad):
    pipe = TPipe(); qa = TQue(TPosition.VECIN, 1); qo = TQue(TPosition.VECOUT, 1)
    pipe.InitBuffer(qa, 1, pad * sizeof(x.dtype)); pipe.InitBuffer(qo, 1, pad * sizeof(z.dtype))
    xg = GlobalTensor(); xg.SetGlobalBuffer(x); zg = GlobalTensor(); zg.SetGlobalBuffer(z)
    a = qa.AllocTensor(x.dtype); DataCopyPad(a, xg, DataCopyExtParams(1, n * sizeof(x.dtype), 0, 0, 0),
                                             DataCopyPadExtParams(False, 0, 0, 0)); qa.EnQue(a)
    a = qa.DeQue(x.dtype); o = qo.AllocTensor(z.dtype)
    Cast(o, a, RoundMode.__MODE__, pad)
    qo.EnQue(o); o = qo.DeQue(z.dtype)
    DataCopyPad(zg, o, DataCopyExtParams(1, n * sizeof(z.dtype), 0, 0, 0)); qo.FreeTensor(o); qa.FreeTensor(a)

def forward(x):
    z = empty(x.shape, __OUT__)
    k[1](x, z, x.numel(), 64)
    return z
"""


def cast(run, values, src_dtype, dst: str, mode: str) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64).astype(src_dtype)
    _, result = run(CAST.replace("__MODE__", mode).replace("__OUT__", dst), [x])
    assert result.error is None, result.error
    return result.outputs[0].astype(np.float64)


def test_float_to_half_round_is_ties_away_from_zero(run):
    """The issue's case: 2049 lies halfway between the halves 2048 and 2050 (spacing 2 at 2^11)."""
    np.testing.assert_array_equal(cast(run, [2049, -2049, 2051, 2050], np.float32, "float16", "CAST_ROUND"),
                                  [2050, -2050, 2052, 2050])
    np.testing.assert_array_equal(cast(run, [2049, -2049, 2051], np.float32, "float16", "CAST_RINT"),
                                  [2048, -2048, 2052])


@pytest.mark.parametrize("mode, expected", [
    # 0.5 + 2^-12 is exactly half a half-ulp (2^-11) above 0.5
    ("CAST_RINT", 0.5), ("CAST_FLOOR", 0.5), ("CAST_CEIL", 0.5 + 2**-11), ("CAST_ROUND", 0.5 + 2**-11),
    ("CAST_TRUNC", 0.5), ("CAST_ODD", 0.5 + 2**-11), ("CAST_NONE", 0.5),
])
def test_float_to_half_reference_example(run, mode, expected):
    got = cast(run, [0.5 + 2**-12, -(0.5 + 2**-12)], np.float32, "float16", mode)
    mirrored = {"CAST_FLOOR": 0.5 + 2**-11, "CAST_CEIL": 0.5}.get(mode, expected)  # -x: floor/ceil swap
    np.testing.assert_array_equal(got, [expected, -mirrored])


@pytest.mark.parametrize("mode, expected", [
    ("CAST_RINT", 2**12), ("CAST_FLOOR", 2**12), ("CAST_CEIL", 2**12 + 4), ("CAST_ROUND", 2**12 + 4),
    ("CAST_TRUNC", 2**12),
])
def test_int16_to_half_reference_example(run, mode, expected):
    """2^12 + 2 is halfway between the halves 4096 and 4100 (spacing 4 at 2^12)."""
    np.testing.assert_array_equal(cast(run, [2**12 + 2], np.int16, "float16", mode), [expected])


@pytest.mark.parametrize("mode, example, tie", [
    # example 0.5 + 2^-9 + 2^-11 (above the midpoint 0.5 + 2^-9); tie 1 + 2^-8 (bf16 spacing 2^-7 at 1)
    ("CAST_RINT", 0.5 + 2**-8, 1.0), ("CAST_FLOOR", 0.5, 1.0), ("CAST_CEIL", 0.5 + 2**-8, 1 + 2**-7),
    ("CAST_ROUND", 0.5 + 2**-8, 1 + 2**-7), ("CAST_TRUNC", 0.5, 1.0),
])
def test_float_to_bfloat16(run, mode, example, tie):
    np.testing.assert_array_equal(cast(run, [0.5 + 2**-9 + 2**-11, 1 + 2**-8], np.float32, "bfloat16", mode),
                                  [example, tie])


@pytest.mark.parametrize("src", [np.int32, np.int64])
@pytest.mark.parametrize("mode, example, tie", [
    # float has 24 significant bits: spacing 4 at 2^25. Example 2^25 + 3; tie 2^25 + 2
    ("CAST_RINT", 2**25 + 4, 2**25), ("CAST_FLOOR", 2**25, 2**25), ("CAST_CEIL", 2**25 + 4, 2**25 + 4),
    ("CAST_ROUND", 2**25 + 4, 2**25 + 4), ("CAST_TRUNC", 2**25, 2**25),
])
def test_int_to_float(run, src, mode, example, tie):
    np.testing.assert_array_equal(cast(run, [2**25 + 3, 2**25 + 2], src, "float32", mode), [example, tie])


@pytest.mark.parametrize("mode, expected", [
    ("CAST_RINT", [2**22, -2, 2]), ("CAST_FLOOR", [2**22, -3, 2]), ("CAST_CEIL", [2**22 + 1, -2, 3]),
    ("CAST_ROUND", [2**22 + 1, -3, 3]), ("CAST_TRUNC", [2**22, -2, 2]),
])
@pytest.mark.parametrize("src", [np.float32, np.float16, BF16])
def test_float_to_int32(run, src, mode, expected):
    values = [2**22 + 0.5, -2.5, 2.5]
    if src != np.float32:  # 2^22 + 0.5 is not a half or bfloat16: keep the two small ties
        values, expected = values[1:], expected[1:]
    np.testing.assert_array_equal(cast(run, values, src, "int32", mode), expected)


@pytest.mark.parametrize("mode, expected", [
    ("CAST_RINT", [0, 2, -0]), ("CAST_FLOOR", [0, 1, -1]), ("CAST_CEIL", [1, 2, -0]), ("CAST_ROUND", [1, 2, -1]),
    ("CAST_TRUNC", [0, 1, -0]),
])
def test_float_to_float_rounds_to_integers(run, mode, expected):
    np.testing.assert_array_equal(cast(run, [0.5, 1.5, -0.5], np.float32, "float32", mode), expected)


@pytest.mark.parametrize("mode", MODES)
def test_half_to_int8_saturates(run, mode):
    """Reference example 2^7 - 0.5: every mode gives 127 (128 saturates to int8's maximum)."""
    np.testing.assert_array_equal(cast(run, [2**7 - 0.5, -200], np.float16, "int8", mode), [127, -128])


@pytest.mark.parametrize("dst", ["int16", "int8"])
def test_half_to_small_ints_round_ties_away(run, dst):
    np.testing.assert_array_equal(cast(run, [2.5, -2.5, 0.5], np.float16, dst, "CAST_ROUND"), [3, -3, 1])
    np.testing.assert_array_equal(cast(run, [2.5, -2.5, 0.5], np.float16, dst, "CAST_RINT"), [2, -2, 0])


def test_float_to_half_overflow(run):
    """Nearest modes overflow to inf from 65520 (halfway to 2^16) on; toward-zero modes keep 65504."""
    np.testing.assert_array_equal(cast(run, [65519, 65520, 1e6], np.float32, "float16", "CAST_ROUND"),
                                  [65504, np.inf, np.inf])
    np.testing.assert_array_equal(cast(run, [1e6, -1e6], np.float32, "float16", "CAST_TRUNC"), [65504, -65504])


def test_widening_is_exact(run):
    x = [1 / 3, -65504, 2**-24]
    np.testing.assert_array_equal(cast(run, x, np.float16, "float32", "CAST_NONE"),
                                  np.asarray(x).astype(np.float16).astype(np.float64))
    np.testing.assert_array_equal(cast(run, [1 / 3], BF16, "float32", "CAST_NONE"),
                                  np.asarray([1 / 3]).astype(BF16).astype(np.float64))
