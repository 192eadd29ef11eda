"""Elementwise high-level APIs: values against torch (exact forms) and against the documented
approximations where Ascend C's differ; costs derived by hand from the preset's cost table and
the implementations' instruction counts; temp-buffer rules."""

import math

import ml_dtypes
import numpy as np
import pytest
import torch

from sage.npu.hardware import load_preset

UNARY = """
@kernel
def k(x, z, n, tmp):
    pipe = TPipe(); qa = TQue(TPosition.VECIN, 1); qo = TQue(TPosition.VECOUT, 1); tb = TBuf(TPosition.VECCALC)
    pipe.InitBuffer(qa, 1, n * sizeof(x.dtype)); pipe.InitBuffer(qo, 1, n * sizeof(x.dtype)); pipe.InitBuffer(tb, tmp)
    xg = GlobalTensor(); xg.SetGlobalBuffer(x); zg = GlobalTensor(); zg.SetGlobalBuffer(z)
    a = qa.AllocTensor(x.dtype); DataCopy(a, xg, n); qa.EnQue(a); a = qa.DeQue(x.dtype)
    o = qo.AllocTensor(x.dtype); t = tb.Get(uint8)
    __OP__
    qo.EnQue(o); o = qo.DeQue(x.dtype); DataCopy(zg, o, n); qo.FreeTensor(o); qa.FreeTensor(a)

def forward(x, tmp):
    z = empty(x.shape, x.dtype)
    k[1](x, z, x.numel(), tmp)
    return z
"""
COSTS = load_preset().vector.costs


def run_unary(run, op: str, x: np.ndarray, tmp: int = 4096):
    src, result = run(UNARY.replace("__OP__", op + "  # @op"), [x, tmp])
    return src, result


def values(run, op, x, tmp=4096) -> np.ndarray:
    _, result = run_unary(run, op, x, tmp)
    assert result.error is None, result.error
    return result.outputs[0].astype(np.float64)


def x32(n=2048, scale=3.0, seed=0):
    return (np.random.default_rng(seed).standard_normal(n) * scale).astype(np.float32)


def t64(x):
    return torch.from_numpy(x.astype(np.float64))


@pytest.mark.parametrize("op, ref, tol", [
    ("Sigmoid(o, a, t, n)", lambda x: torch.sigmoid(x), 1e-6),
    ("Silu(o, a, n)", lambda x: torch.nn.functional.silu(x), 2e-6),
    ("Swish(o, a, n, 1.5)", lambda x: x * torch.sigmoid(1.5 * x), 2e-6),
    ("Tanh(o, a, t, n)", torch.tanh, 1e-6),
    ("Erf(o, a, t, n)", torch.erf, 1e-6),
    ("Sign(o, a, t, n)", torch.sign, 0.0),
    ("Gelu(o, a, t, n)", lambda x: torch.nn.functional.gelu(x, approximate="tanh"), 2e-6),
    ("FasterGelu(o, a, t, n)", lambda x: x * torch.sigmoid(1.702 * x), 2e-6),
    ("Sin(o, a, t, n)", torch.sin, 1e-6),
    ("Cos(o, a, t, n)", torch.cos, 1e-6),
])
def test_float32_values_against_torch(run, op, ref, tol):
    x = x32()
    np.testing.assert_allclose(values(run, op, x), ref(t64(x)).numpy(), rtol=0, atol=tol)


@pytest.mark.parametrize("op, ref", [("Log(o, a, n)", torch.log), ("Log2(o, a, n)", torch.log2),
                                     ("Log10(o, a, n)", torch.log10)])
def test_logs(run, op, ref):
    x = np.random.default_rng(1).uniform(0.01, 100, 1024).astype(np.float32)
    np.testing.assert_allclose(values(run, op, x), ref(t64(x)).numpy(), rtol=2e-6, atol=0)



def test_gelu_tanh_form_differs_from_exact_gelu_and_erf_gives_the_exact_one(run):
    x = np.linspace(-4, 4, 1024).astype(np.float32)
    got = values(run, "Gelu(o, a, t, n)", x)
    exact = torch.nn.functional.gelu(t64(x)).numpy()
    tanh_form = torch.nn.functional.gelu(t64(x), approximate="tanh").numpy()
    assert np.abs(got - tanh_form).max() < 2e-6
    assert np.abs(got - exact).max() > 1e-4  # the approximation shows at fp32
    # exact GELU from Erf: y = x * 0.5 * (1 + erf(x * 0.70710678))
    op = "Muls(o, a, 0.7071067811865476, n); Erf(o, o, t, n); Adds(o, o, 1.0, n); Mul(o, o, a, n); Muls(o, o, 0.5, n)"
    np.testing.assert_allclose(values(run, op, x), exact, rtol=0, atol=2e-6)


def _erf_documented(x: np.ndarray) -> np.ndarray:
    """erf_common_impl.h's rational approximation, evaluated in float64: clip to +-3.92, P(x)/Q(x)."""
    x = np.clip(x.astype(np.float64), -3.92, 3.92)
    s = x * x
    p = ((((((0.053443748819 * s + 0.75517016694e1) * s + 0.10162808918e3) * s + 0.13938061484e4) * s
           + 0.50637915060e4) * s + 0.29639384698e5) * x)
    q = ((((s + 0.31212858877e2) * s + 0.39856963806e3) * s + 0.30231248150e4) * s + 0.13243365831e5) * s \
        + 0.26267224157e5
    return p / q


def test_erf_follows_the_documented_rational_approximation(run):
    x = np.concatenate([np.linspace(-6, 6, 1000), [0.0, 1e-3, 3.91, 3.93, 10.0]]).astype(np.float32)
    x = np.pad(x, (0, 1024 - x.size))
    got = values(run, "Erf(o, a, t, n)", x)
    np.testing.assert_allclose(got, _erf_documented(x), rtol=0, atol=5e-7)  # float32 steps vs float64
    assert got[x == 10.0][0] == pytest.approx(_erf_documented(np.array([3.92]))[0], abs=1e-7)  # clipped


def test_tanh_follows_the_documented_exp_form(run):
    """(e^2x - 1) / (e^2x + 1) in float32: near 0 the subtraction costs relative accuracy, as on the chip."""
    x = np.array([1e-4, -1e-4, 0.5, 9.0, -20.0] + [0.0] * 59, np.float32)
    got = values(run, "Tanh(o, a, t, n)", x)
    c = np.clip(x, np.float32(-8.8), np.float32(8.8))
    e = np.exp(c * np.float32(2))
    formula = ((e + np.float32(-1)) / (e + np.float32(1))).astype(np.float64)
    np.testing.assert_array_equal(got, formula)
    assert abs(got[0] / math.tanh(1e-4) - 1) > 1e-5  # relative error near 0: not torch's tanh
    assert got[3] == pytest.approx(math.tanh(8.8), abs=1e-7)  # clipped at 8.8


def test_sin_cos_reduce_large_arguments_by_pi_in_parts(run):
    """x0 = x - k*pi with pi split into parts keeps float accuracy far from 0 (a single-constant reduction
    would lose ~|k| * 1e-7); half is computed in float and rounded once."""
    x = np.array([100.0, -1000.0, 1e4, 3.14159265, -1.5707963] + [0.25] * 59, np.float32)
    for op, fn in (("Sin(o, a, t, n)", torch.sin), ("Cos(o, a, t, n)", torch.cos)):
        np.testing.assert_allclose(values(run, op, x), fn(t64(x)).numpy(), rtol=0, atol=2e-6)
        xh = x32(scale=4).astype(np.float16)
        np.testing.assert_allclose(values(run, op, xh), fn(t64(xh)).numpy(), rtol=0, atol=2 ** -11)


def test_half_gelu_high_precision_is_closer(run):
    x = x32(scale=2).astype(np.float16)
    ref = torch.nn.functional.gelu(t64(x), approximate="tanh").numpy()
    plain = np.abs(values(run, "Gelu(o, a, t, n)", x) - ref).max()
    precise = np.abs(values(run, "Gelu(o, a, t, n, True)", x) - ref).max()
    assert precise < plain
    assert precise <= 2 ** -10 * 4  # within a few half ulps of |y| <= 4


def _cost(key: str, itemsize: int, n: int) -> float:
    head, slope = COSTS[key].b32 if itemsize == 4 else COSTS[key].b16
    return head + slope * math.ceil(n * itemsize / 256)


def v_busy(run, op, x, tmp=4096) -> float:
    _, result = run_unary(run, op, x, tmp)
    assert result.error is None, result.error
    return result.profile.pipes["V"].busy_cycles


def test_silu_costs_its_four_instructions(run):
    """Silu on 2048 floats: Muls, Exp, Adds, Div over 32 repeats, each after a PipeBarrier (pays its head)."""
    expected = sum(_cost(k, 4, 2048) for k in ("vmuls", "vexp", "vadds", "vdiv"))
    assert v_busy(run, "Silu(o, a, n)", x32()) == pytest.approx(expected, abs=1)


def test_sin_issues_27_instructions_per_chunk(run):
    """Sin on 2048 floats with a 4096 B temp: three work tensors of 320 floats -> 7 chunks (6 x 320 + 128) of
    the 27 instructions of sin_common_impl.h (10 for the range reduction, 17 for sign and polynomial)."""
    _, result = run(UNARY.replace("__OP__", "Sin(o, a, t, n)"), [x32(), 4096], trace=True)
    v_names = [e["name"] for e in result.trace if e.get("ph") == "X" and e.get("tid") == "V"]
    assert len(v_names) == 7 * 27
    assert v_names[:10] == ["Muls", "Cast", "Muls", "Sub", "Muls", "Sub", "Muls", "Sub", "Muls", "Sub"]


def test_gelu_costs_its_expansion_per_chunk(run):
    """Gelu, 2048 floats, 4096 B temp: two work tensors of 512 floats -> 4 chunks of 13 instructions."""
    per_chunk = ["vmul", "vmul", "vmuls", "vadd", "vmuls", "vmins", "vexp", "vabs", "vmuls", "vexp", "vadds",
                 "vdiv", "vmul"]
    expected = 4 * sum(_cost(k, 4, 512) for k in per_chunk)
    assert v_busy(run, "Gelu(o, a, t, n)", x32(), tmp=4096) == pytest.approx(expected, abs=1)
    # a bigger temp: one chunk of 2048, fewer heads
    one = sum(_cost(k, 4, 2048) for k in per_chunk)
    assert v_busy(run, "Gelu(o, a, t, n)", x32(), tmp=16384) == pytest.approx(one, abs=1)


def test_temp_too_small_is_a_clear_error(run, check_error):
    src, result = run_unary(run, "Gelu(o, a, t, n)", x32(), tmp=512)
    check_error(result, src, "KernelRuntimeError", "@op", "holds 512 B, it needs at least 768 B")
    src, result = run_unary(run, "Erf(o, a, t, n)", x32().astype(np.float16), tmp=1024)
    check_error(result, src, "KernelRuntimeError", "@op", "needs at least 2048 B")


def test_without_a_temp_the_free_ub_is_used(run, check_error):
    x = x32()
    np.testing.assert_allclose(values(run, "Tanh(o, a, n)", x), torch.tanh(t64(x)).numpy(), atol=1e-6)
    # a UB filled by InitBuffer leaves nothing: the error says to pass a temp
    src, result = run_unary(run, "Tanh(o, a, n)", x, tmp=196608 - 2 * 2048 * 4)
    check_error(result, src, "CapacityError", "@op", "pass a sharedTmpBuffer")


@pytest.mark.parametrize("op", ["Gelu(o, a, t, n)", "Sigmoid(o, a, t, n)", "Silu(o, a, n)", "Tanh(o, a, t, n)"])
def test_bfloat16_is_unsupported(run, check_error, op):
    src, result = run_unary(run, op, x32().astype(ml_dtypes.bfloat16))
    check_error(result, src, "UnsupportedError", "@op", "does not support bfloat16 on Atlas A2")
