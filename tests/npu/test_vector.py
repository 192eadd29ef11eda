"""Vector instructions against numpy, in the operand dtype, and their cycle costs."""

import ml_dtypes
import numpy as np
import pytest

from sage.npu.hardware import load_preset

BF16 = np.dtype(ml_dtypes.bfloat16)

ELEMENTWISE = """
@kernel
def k(x, y, z, n):
    pipe = TPipe()
    qx = TQue(TPosition.VECIN, 1); qy = TQue(TPosition.VECIN, 1); qz = TQue(TPosition.VECOUT, 1)
    pipe.InitBuffer(qx, 1, n * sizeof(x.dtype)); pipe.InitBuffer(qy, 1, n * sizeof(y.dtype))
    pipe.InitBuffer(qz, 1, n * sizeof(z.dtype))
    xg = GlobalTensor(); xg.SetGlobalBuffer(x)
    yg = GlobalTensor(); yg.SetGlobalBuffer(y)
    zg = GlobalTensor(); zg.SetGlobalBuffer(z)
    a = qx.AllocTensor(x.dtype); b = qy.AllocTensor(y.dtype)
    DataCopy(a, xg, n); DataCopy(b, yg, n)
    qx.EnQue(a); qy.EnQue(b)
    a = qx.DeQue(x.dtype); b = qy.DeQue(y.dtype)
    c = qz.AllocTensor(z.dtype)
    __OP__
    qz.EnQue(c)
    c = qz.DeQue(z.dtype)
    DataCopy(zg, c, n)
    qz.FreeTensor(c); qx.FreeTensor(a); qy.FreeTensor(b)

def forward(x, y):
    z = empty(x.shape, __OUT__)
    k[1](x, y, z, x.numel())
    return z
"""


def run_op(run, op: str, x, y, out_dtype: str = "x.dtype"):
    src = ELEMENTWISE.replace("__OP__", op).replace("__OUT__", out_dtype)
    _, result = run(src, [x, y])
    assert result.error is None, result.error
    return result


BINARY = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "Max": np.maximum,
          "Min": np.minimum}
UNARY = {"Exp": np.exp, "Ln": np.log, "Abs": np.abs, "Sqrt": np.sqrt, "Relu": lambda v: np.maximum(v, 0),
         "Reciprocal": lambda v: 1 / v, "Rsqrt": lambda v: 1 / np.sqrt(v)}


def inputs(dtype, n=512, positive=False, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 2.0, n) if positive else rng.standard_normal(n)
    y = rng.uniform(0.5, 2.0, n)
    return x.astype(dtype), y.astype(dtype)


def expected(fn, dtype, *args):
    """The op computed in float32 and rounded once to the dtype (one instruction, one rounding)."""
    return fn(*(a.astype(np.float32) for a in args)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_ops_in_operand_dtype(run, name, dtype):
    x, y = inputs(dtype)
    result = run_op(run, f"{name}(c, a, b, n)", x, y)
    out = result.outputs[0]
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, expected(BINARY[name], dtype, x, y))


@pytest.mark.parametrize("name", sorted(BINARY) + sorted(UNARY))
def test_bfloat16_arithmetic_is_unsupported_on_atlas_a2(run, check_error, name):
    """CANN's A2 lists have no bfloat16 for these (it is for Cast, copies and Duplicate/Brcb/Gather)."""
    x, y = inputs(BF16, positive=True)
    op = f"{name}(c, a, b, n)" if name in BINARY else f"{name}(c, a, n)"
    src, result = run(ELEMENTWISE.replace("__OP__", op + "  # @op").replace("__OUT__", "x.dtype"), [x, y])
    check_error(result, src, "UnsupportedError", "@op", f"{name} does not support bfloat16 on Atlas A2")
    assert result.error.message.endswith("Cast to float first")


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_ops_in_operand_dtype(run, name, dtype):
    x, y = inputs(dtype, positive=True)
    out = run_op(run, f"{name}(c, a, n)", x, y).outputs[0]
    want = expected(UNARY[name], dtype, x)
    np.testing.assert_allclose(out.astype(np.float32), want.astype(np.float32), rtol=2e-3 if dtype == np.float32 else 1e-2)
    assert out.dtype == np.dtype(dtype)


@pytest.mark.parametrize("dtype", [np.int16, np.int32])
def test_integer_ops_wrap_like_the_hardware(run, dtype):
    x = np.arange(-256, 256, dtype=dtype) * 100
    y = np.full(512, 7, dtype=dtype)
    out = run_op(run, "Mul(c, a, b, n); Adds(c, c, 3, n)", x, y).outputs[0]
    np.testing.assert_array_equal(out, (x * y + 3).astype(dtype))


def test_scalar_ops_round_the_scalar_to_fp16(run):
    x, y = inputs(np.float16)
    out = run_op(run, "Muls(c, a, 0.1, n); Maxs(c, c, -0.05, n); Mins(c, c, 0.15, n)", x, y).outputs[0]
    s = np.float16(0.1)
    want = np.minimum(np.maximum((x * s), np.float16(-0.05)), np.float16(0.15))
    np.testing.assert_array_equal(out, want)


def test_cast_and_compare_select(run):
    x, y = inputs(np.float32)
    op = ("Compare(c.ReinterpretCast(uint8), a, b, CMPMODE.LT, n); "
          "Select(a, c.ReinterpretCast(uint8), a, 0.0, SELMODE.VSEL_TENSOR_SCALAR_MODE, n); DataCopy(c, a, n)")
    # the mask is written by V and read by V: same pipe, no sync needed
    out = run_op(run, op, x, y).outputs[0]
    np.testing.assert_array_equal(out, np.where(x < y, x, 0).astype(np.float32))


def test_cast_rounding_modes(run):
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.7, -2.7] * 8, dtype=np.float32)
    y = np.zeros_like(x)
    for mode, fn in [("CAST_RINT", np.rint), ("CAST_FLOOR", np.floor), ("CAST_CEIL", np.ceil),
                     ("CAST_TRUNC", np.trunc), ("CAST_ROUND", lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5))]:
        out = run_op(run, f"Cast(c, a, RoundMode.{mode}, n)", x, y, "int32").outputs[0]
        np.testing.assert_array_equal(out, fn(x).astype(np.int32), err_msg=mode)


REDUCE_SUM_FP16 = """
    @kernel
    def k(x, z, n):
        pipe = TPipe(); q = TQue(TPosition.VECIN, 1); o = TQue(TPosition.VECOUT, 1); w = TBuf(TPosition.VECCALC)
        pipe.InitBuffer(q, 1, n * 2); pipe.InitBuffer(o, 1, 32); pipe.InitBuffer(w, n * 2)
        xg = GlobalTensor(); xg.SetGlobalBuffer(x); zg = GlobalTensor(); zg.SetGlobalBuffer(z)
        t = q.AllocTensor(float16); DataCopy(t, xg, n); q.EnQue(t); t = q.DeQue(float16)
        r = o.AllocTensor(float16)
        ReduceSum(r, t, w.Get(float16), n)
        o.EnQue(r); r = o.DeQue(float16); DataCopy(zg, r, 16); o.FreeTensor(r); q.FreeTensor(t)

    def forward(x):
        z = empty((16,), float16)
        k[1](x, z, x.numel())
        return z
    """


def test_fp16_reduce_sum_is_an_fp16_tree(run):
    """8192 fp16 values summed as 128-lane trees in fp16 (then a tree of the partials), not in fp32."""
    x = np.random.default_rng(1).uniform(-1, 1, 8192).astype(np.float16)
    _, result = run(REDUCE_SUM_FP16, [x])
    assert result.error is None, result.error
    got = result.outputs[0][0]
    rows = x.reshape(64, 128)
    while rows.shape[1] > 1:  # fp16 pairwise tree per 256 B repeat
        rows = rows[:, 0::2] + rows[:, 1::2]
    partial = rows[:, 0]
    while partial.size > 1:
        partial = partial[0::2] + partial[1::2]
    assert got == partial[0]
    assert got.dtype == np.float16


def test_fp16_reduce_sum_overflows_where_fp32_would_not(run):
    x = np.full(8192, 10.0, dtype=np.float16)  # the sum, 81920, is above fp16's max 65504
    _, result = run(REDUCE_SUM_FP16, [x])
    assert np.isinf(result.outputs[0][0])


def _v_busy(run, op):
    x, y = inputs(np.float16, n=2048)
    return run_op(run, op, x, y).profile.pipes["V"].busy_cycles


def test_add_cycles_follow_the_cost_table(run):
    head, slope = load_preset().vector.costs["vadd"].b16
    repeats = 2048 * 2 // 256
    assert _v_busy(run, "Add(c, a, b, n)") == round(head + slope * repeats)


def test_back_to_back_vector_instructions_pipeline_their_heads(run):
    head, slope = load_preset().vector.costs["vadd"].b16
    repeats = 16
    two = _v_busy(run, "Add(c, a, b, n); Add(c, c, b, n)")
    assert two == round(2 * slope * repeats + head)  # the second one is queued: no second head
    barrier = _v_busy(run, "Add(c, a, b, n); PipeBarrier(PIPE_V); Add(c, c, b, n)")
    assert barrier == round(2 * (slope * repeats + head))


def test_mask_repeat_form(run):
    x, y = inputs(np.float32, n=256)
    # 2 repeats of the first 32 lanes of each 64-lane fp32 repeat
    out = run_op(run, "Duplicate(c, 0.0, n); Add(c, a, b, 32, 2, BinaryRepeatParams())", x, y).outputs[0]
    want = np.zeros(256, np.float32)
    for r in range(2):
        sl = slice(r * 64, r * 64 + 32)
        want[sl] = x[sl] + y[sl]
    np.testing.assert_array_equal(out, want)


def test_whole_reduce_and_brcb(run):
    x, y = inputs(np.float32, n=512)
    op = ("WholeReduceMax(c, a, 64, 8, 1, 1, 8, ReduceOrder.ORDER_ONLY_VALUE); "
          "Brcb(b, c, 1, BrcbRepeatParams(1, 8)); DataCopy(c, b, n)")
    out = run_op(run, op, x, y).outputs[0]
    maxes = x.reshape(8, 64).max(axis=1)
    np.testing.assert_array_equal(out[:64], np.repeat(maxes, 8))


def test_axpy_leaky_relu_and_block_reduce(run):
    x, y = inputs(np.float32, n=512)
    op = ("Axpy(b, a, 0.5, n); LeakyRelu(c, b, 0.1, n); "
          "BlockReduceSum(a, c, 8, 64, 1, 1, 8); WholeReduceSum(b, c, 64, 8, 1, 1, 8); "
          "DataCopy(c[0], a, 64); DataCopy(c[64], b, 64)")
    out = run_op(run, op, x, y).outputs[0]
    axpy = y + x * np.float32(0.5)
    leaky = np.where(axpy >= 0, axpy, axpy * np.float32(0.1))
    np.testing.assert_allclose(out[:64], leaky.reshape(64, 8).sum(axis=1), rtol=1e-6)
    np.testing.assert_allclose(out[64:72], leaky.reshape(8, 64).sum(axis=1), rtol=1e-5)


def test_reduce_max_with_index(run):
    x, y = inputs(np.float32, n=512)
    op = "ReduceMax(c, a, b, n, True); DataCopy(a, c, 8)"
    src_out = run_op(run, op, x, y).outputs[0]
    assert src_out[0] == x.max()
    assert src_out[1:2].view(np.uint32)[0] == int(np.argmax(x))
