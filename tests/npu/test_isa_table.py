"""The Atlas A2 instruction table: its rows against CANN's reference, and the DSL refusing
what the chip lacks with UnsupportedError on the kernel line.

Expected values are read off CANN's Ascend C API reference pages (cited in the table), not
from the code under test.
"""

import ml_dtypes
import numpy as np
import pytest

from sage.npu import ascendc
from sage.npu.execute import run_kernel_source
from sage.npu.hardware import load_preset
from sage.npu.isa.table import load_table

BF16 = np.dtype(ml_dtypes.bfloat16)

KERNEL = """
@kernel
def k(x, z, n):
    pipe = TPipe()
    qa = TQue(TPosition.VECIN, 1); qo = TQue(TPosition.VECOUT, 1); tb = TBuf(TPosition.VECCALC)
    pipe.InitBuffer(qa, 1, n * sizeof(x.dtype)); pipe.InitBuffer(qo, 1, n * sizeof(z.dtype)); pipe.InitBuffer(tb, 4096)
    xg = GlobalTensor(); xg.SetGlobalBuffer(x); zg = GlobalTensor(); zg.SetGlobalBuffer(z)
    a = qa.AllocTensor(x.dtype); DataCopy(a, xg, n); qa.EnQue(a); a = qa.DeQue(x.dtype)
    o = qo.AllocTensor(z.dtype); b = o
    m = tb.Get(uint8); h = tb.Get(float16); w = tb.Get(x.dtype)
    __OPS__
    qo.EnQue(o); o = qo.DeQue(z.dtype); DataCopy(zg, o, n); qo.FreeTensor(o); qa.FreeTensor(a)

def forward(x):
    z = empty(x.shape, __OUT__)
    k[1](x, z, x.numel())
    return z
"""


def one_input_kernel(ops: str, out_dtype: str = "x.dtype") -> str:
    """A kernel with input `a` (n elements of x's dtype) and output `o` = `b` (out_dtype); `m` (uint8),
    `h` (half) and `w` (x's dtype) are views of one 4 KiB scratch TBuf."""
    return KERNEL.replace("__OPS__", ops).replace("__OUT__", out_dtype)
VECTOR_NAMES = ["Add", "Sub", "Mul", "Div", "Max", "Min", "And", "Or", "Adds", "Muls", "Maxs", "Mins", "LeakyRelu",
                "Exp", "Ln", "Abs", "Reciprocal", "Sqrt", "Rsqrt", "Relu", "Not", "Duplicate", "Brcb", "Axpy", "Cast",
                "Compare", "CompareScalar", "Select", "Gather", "ReduceSum", "ReduceMax", "ReduceMin",
                "WholeReduceSum", "WholeReduceMax", "WholeReduceMin", "BlockReduceSum", "BlockReduceMax", "Sort",
                "TopK"]
DATA_AND_CUBE = ["DataCopy", "DataCopyPad", "SetAtomicAdd", "SetAtomicMax", "SetAtomicMin", "LoadData", "Mmad",
                 "Fixpipe"]


def test_every_vector_cube_and_copy_instruction_of_the_dsl_has_a_sourced_row():
    table = load_table()
    for name in VECTOR_NAMES + DATA_AND_CUBE:
        assert name in ascendc.__all__, name
        row = table.api[name]
        assert row.doc.endswith(".md"), name
        assert row.dtypes or row.pairs or row.triples or name == "Cast", name
    assert table.meta.doc_base.startswith("https://github.com/mirror-cann/asc-devkit/blob/")
    assert table.limits.max_repeat == 255


@pytest.mark.parametrize("name, expected", [
    # the "Atlas A2 ..." dtype line of each page, read by hand
    ("Add", {"int16", "float16", "int32", "float32"}),
    ("Mul", {"int16", "float16", "int32", "float32"}),
    ("Div", {"float16", "float32"}),
    ("Exp", {"float16", "float32"}),
    ("Relu", {"float16", "int32", "float32"}),
    ("And", {"int16", "uint16"}),
    ("ReduceSum", {"float16", "float32"}),
    ("Duplicate", {"int16", "uint16", "float16", "bfloat16", "int32", "uint32", "float32"}),
])
def test_rows_match_the_reference_pages(name, expected):
    assert set(load_table().api[name].dtypes) == expected


def test_cast_rows_match_the_reference_page():
    rows = {(r.src, r.dst): set(r.modes) for r in load_table().cast}
    directed = {"CAST_RINT", "CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC"}
    assert rows[("float32", "float16")] == directed | {"CAST_ODD", "CAST_NONE"}
    assert rows[("float32", "bfloat16")] == directed
    assert rows[("float32", "int32")] == directed          # no CAST_NONE: a rounding mode must be named
    assert rows[("float16", "float32")] == {"CAST_NONE"}
    assert ("float16", "bfloat16") not in rows and ("bfloat16", "float16") not in rows


# --- kernels ------------------------------------------------------------------------------


def _error(result):
    assert result.error is not None, "expected an error"
    return result.error


@pytest.mark.parametrize("dtype, op, fix", [
    (np.int8, "Add(b, a, a, n)", "Cast to half first"),
    (np.uint8, "Mul(b, a, a, n)", "Cast to half first"),
    (np.int64, "Add(b, a, a, n)", "Cast to int32 first"),
    (np.uint32, "Mul(b, a, a, n)", "use int32"),
    (np.int32, "Exp(b, a, n)", "Cast to float first"),
])
def test_unsupported_dtypes_name_the_fix_and_the_line(run, check_error, dtype, op, fix):
    x = np.arange(64).astype(dtype)
    src, result = run(one_input_kernel(op + "  # @op"), [x])
    check_error(result, src, "UnsupportedError", "@op", "on Atlas A2 (supported:")
    assert fix in result.error.message


def test_the_issue_example_message(run):
    _, result = run(one_input_kernel("Exp(b, a, n)"), [np.ones(64, BF16)])
    assert _error(result).message == ("Exp does not support bfloat16 on Atlas A2 (supported: half, float); "
                                      "Cast to float first")


def _v_busy(result) -> float:
    assert result.error is None, result.error
    return result.profile.pipes["V"].busy_cycles


def test_repeat_times_above_255_is_refused_and_255_costs_its_repeats(run, check_error):
    n = 64 * 256  # fp32: 256 repeats of 64 lanes
    x = np.ones(n, np.float32)
    src, result = run(one_input_kernel("Adds(b, a, 1.0, 64, 256, UnaryRepeatParams())  # @rep"), [x])
    check_error(result, src, "UnsupportedError", "@rep", "repeatTimes 256 is outside [0, 255]")
    head, slope = load_preset().vector.costs["vadds"].b32
    _, ok = run(one_input_kernel("Adds(b, a, 1.0, 64, 255, UnaryRepeatParams())"), [x])
    assert _v_busy(ok) == round(head + slope * 255)
    np.testing.assert_array_equal(ok.outputs[0][:64 * 255], 2.0)


@pytest.mark.parametrize("dtype, mask, ok", [
    (np.float32, 64, True), (np.float32, 65, False), (np.float16, 128, True), (np.float16, 129, False),
    (np.float32, 0, False),
])
def test_continuous_mask_ranges(run, dtype, mask, ok):
    x = np.ones(256, dtype)
    _, result = run(one_input_kernel(f"Muls(b, a, 2.0, {mask}, 1, UnaryRepeatParams())"), [x])
    if ok:
        assert result.error is None, result.error
    else:
        assert _error(result).type == "UnsupportedError"
        assert "mask must be in [1, " in result.error.message


def test_bitwise_mask_two_words_for_16_bit_operands(run):
    """The reference's example: mask = [8, 2] selects lane 3 (low word 0b1000) and lane 65 (high word 0b10)."""
    x = np.arange(256, dtype=np.float16)
    _, result = run(one_input_kernel("Duplicate(b, 0.0, 128, 2); Muls(b, a, 2.0, [8, 2], 1, UnaryRepeatParams())"),
                    [x])
    out = result.outputs[0]
    expected = np.zeros(256, np.float16)
    expected[[3, 65]] = x[[3, 65]] * 2
    np.testing.assert_array_equal(out, expected)


def test_bitwise_mask_high_word_must_be_zero_for_32_bit_operands(run):
    x = np.ones(64, np.float32)
    _, result = run(one_input_kernel("Muls(b, a, 2.0, [1, 1], 1, UnaryRepeatParams())"), [x])
    assert _error(result).type == "UnsupportedError" and "high mask word must be 0" in result.error.message


def test_compare_on_int32_supports_only_eq(run, check_error):
    x = np.arange(64, dtype=np.int32)
    body = "Compare(m, a, a, CMPMODE.{}, n)  # @cmp"
    src, result = run(one_input_kernel(body.format("LT")), [x])
    check_error(result, src, "UnsupportedError", "@cmp", "supports only CMPMODE.EQ")
    _, ok = run(one_input_kernel(body.format("EQ")), [x])
    assert ok.error is None, ok.error


def test_axpy_pairs(run, check_error):
    src, result = run(one_input_kernel("Axpy(h, a, 2.0, n)  # @axpy"), [np.ones(64, np.float32)])
    check_error(result, src, "UnsupportedError", "@axpy", "Axpy does not support float->half")


@pytest.mark.parametrize("src_dtype, dst, mode, text", [
    (np.float16, "bfloat16", "CAST_NONE", "Cast half -> bfloat16 is not supported"),
    (np.float32, "int32", "CAST_NONE", "does not support RoundMode.CAST_NONE"),
    (np.int32, "float16", "CAST_NONE", "Cast int32 -> half is not supported"),
])
def test_cast_pairs_and_modes_outside_the_table(run, check_error, src_dtype, dst, mode, text):
    x = np.ones(64, src_dtype)
    src, result = run(one_input_kernel(f"Cast(o, a, RoundMode.{mode}, n)  # @cast", out_dtype=dst), [x])
    check_error(result, src, "UnsupportedError", "@cast", text)


def test_repeat_size_comes_from_the_preset():
    """A chip with 512 B repeats: Compare needs 512 B multiples and ReduceSum counts 512 B repeats."""
    spec = load_preset()
    wide = spec.model_copy(update={"vector": spec.vector.model_copy(update={"repeat_bytes": 512})})
    x = np.ones(64, np.float32)  # 256 B
    src = "from sage.npu.ascendc import *\n" + one_input_kernel("Compare(m, a, a, CMPMODE.EQ, n)")
    result = run_kernel_source(src, [x], preset=wide)
    assert _error(result).type == "AlignmentError" and "multiple of 512 B" in result.error.message
    x = np.ones(128 * 128, np.float32)  # ReduceSum: 128 lanes per 512 B repeat -> 128 + 1 repeats, 2 heads
    src = "from sage.npu.ascendc import *\n" + one_input_kernel("ReduceSum(b, a, w, n)")
    result = run_kernel_source(src, [x], preset=wide)
    head, slope = spec.vector.costs["vcadd"].b32
    assert _v_busy(result) == round(2 * head + slope * (128 + 1))
