"""Library kernels against torch: every generator, small shapes with unaligned last dims,
float32 / float16 / bfloat16, several schedules."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from sage.kernels import (
    CubeKnobs, ElementwiseSpec, Knobs, MatmulSpec, RowSpec, const, elementwise_source, elementwise_tiling, inp,
    matmul_source, op, row_source,
)
from sage.npu.execute import run_kernel_source

TOL = {"float32": 2e-5, "float16": 2e-3, "bfloat16": 1.2e-2}
RNG = np.random.default_rng(7)


def as_dtype(a: np.ndarray, dt: str) -> np.ndarray:
    return a.astype(ml_dtypes.bfloat16) if dt == "bfloat16" else a.astype(dt)


def torch_of(a: np.ndarray) -> torch.Tensor:
    return torch.tensor(np.asarray(a).astype(np.float32))


def run(source: str, args: list) -> np.ndarray:
    result = run_kernel_source(source, args)
    assert result.error is None, result.error
    assert result.profile.time_us > 0
    return result.outputs[0].astype(np.float32)


def rel_err(got: np.ndarray, ref: np.ndarray) -> float:
    return float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-6))


UNARY = {
    "relu": F.relu, "exp": torch.exp, "abs": torch.abs, "neg": torch.neg, "square": torch.square,
    "sigmoid": torch.sigmoid, "tanh": torch.tanh, "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu, "mish": F.mish,
    "softplus": F.softplus, "elu": F.elu, "hardsigmoid": F.hardsigmoid, "hardswish": F.hardswish,
    "leaky_relu": F.leaky_relu,
}


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_unary_ops_match_torch_on_an_unaligned_shape(dtype):
    x = as_dtype(RNG.standard_normal((5, 301)).astype(np.float32) * 3, dtype)
    for name, fn in UNARY.items():
        spec = ElementwiseSpec(expr=op(name, inp(0)), in_dtypes=(dtype,), kinds=("full",), out_dtype=dtype)
        got = run(elementwise_source(spec), [x])
        assert rel_err(got, fn(torch_of(x)).numpy()) < TOL[dtype], name


def test_positive_domain_ops_and_pow():
    x = (RNG.random((3, 77)) + 0.25).astype(np.float32)
    cases = {
        op("log", inp(0)): torch.log, op("sqrt", inp(0)): torch.sqrt, op("rsqrt", inp(0)): torch.rsqrt,
        op("reciprocal", inp(0)): torch.reciprocal, op("log1p", inp(0)): torch.log1p,
        op("pow_scalar", inp(0), exponent=2.5): lambda t: t ** 2.5,
        op("clamp", inp(0), min=0.5, max=1.0): lambda t: t.clamp(0.5, 1.0),
    }
    for expr, fn in cases.items():
        spec = ElementwiseSpec(expr=expr, in_dtypes=("float32",), kinds=("full",), out_dtype="float32")
        assert rel_err(run(elementwise_source(spec), [x]), fn(torch_of(x)).numpy()) < 1e-5, expr


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_broadcast_kinds_and_chains(dtype):
    M, N = 40, 301
    a = RNG.standard_normal((M, N)).astype(np.float32)
    row = RNG.standard_normal(N).astype(np.float32)
    col = RNG.standard_normal((M, 1)).astype(np.float32) + 4.0
    cases = [
        (op("sub", inp(1), inp(0)), ("full", "row"), [a, row], lambda a_, r: r - a_),
        (op("div", inp(0), inp(1)), ("full", "col"), [a, col], lambda a_, c: a_ / c),
        (op("div", inp(1), inp(0)), ("full", "col"), [a + 9, col], lambda a_, c: c / a_),
        (op("mul", inp(0), inp(1)), ("row", "col"), [row, col], lambda r, c: r * c),
        (op("log_add_exp", inp(0), inp(1)), ("full", "row"), [a, row], torch.logaddexp),
        (op("add", inp(0), op("sigmoid", inp(1))), ("full", "col"), [a, col], lambda a_, c: a_ + torch.sigmoid(c)),
        (op("mul", op("silu", inp(0)), op("add", inp(1), inp(2))), ("full", "full", "row"), [a, 2 * a, row],
         lambda x, y, r: F.silu(x) * (y + r)),
        (op("mul", inp(0), inp(1)), ("full", "scalar"), [a, np.array([2.5], np.float32)], lambda x, s: x * s),
    ]
    for expr, kinds, args, fn in cases:
        args = [as_dtype(v, dtype) for v in args]
        spec = ElementwiseSpec(expr=expr, in_dtypes=(dtype,) * len(args), kinds=kinds, out_dtype=dtype)
        ref = fn(*[torch_of(v) for v in args]).numpy()
        assert rel_err(run(elementwise_source(spec), args), ref) < TOL[dtype], expr


def test_cast_and_int32():
    x = RNG.standard_normal((7, 33)).astype(np.float32)
    spec = ElementwiseSpec(expr=op("identity", inp(0)), in_dtypes=("float32",), kinds=("full",), out_dtype="float16")
    assert np.array_equal(run(elementwise_source(spec), [x]), x.astype(np.float16).astype(np.float32))
    xi = RNG.integers(-50, 50, (7, 33)).astype(np.int32)
    spec = ElementwiseSpec(expr=op("maximum", op("mul", inp(0), inp(1)), inp(0)), in_dtypes=("int32", "int32"),
                           kinds=("full", "full"), out_dtype="int32")
    assert np.array_equal(run(elementwise_source(spec), [xi, xi]), np.maximum(xi * xi, xi))
    with pytest.raises(ValueError, match="not supported on int32"):
        elementwise_source(ElementwiseSpec(expr=op("exp", inp(0)), in_dtypes=("int32",), kinds=("full",),
                                           out_dtype="int32"))


def test_schedules_change_time_not_results():
    x = as_dtype(RNG.standard_normal((64, 1000)).astype(np.float32), "float16")
    spec = ElementwiseSpec(expr=op("gelu", inp(0)), in_dtypes=("float16",), kinds=("full",), out_dtype="float16")
    ref = run(elementwise_source(spec), [x])
    times = set()
    for knobs in (Knobs(copy_mode="auto"), Knobs(tile_len=512, buffer_num=1), Knobs(block_dim=7),
                  Knobs(fp32_compute=False, tile_len=8192)):
        res = run_kernel_source(elementwise_source(spec, knobs), [x])
        assert res.error is None
        tol = 4e-3 if not knobs.fp32_compute else 0
        assert np.abs(res.outputs[0].astype(np.float32) - ref).max() <= tol * np.abs(ref).max()
        times.add(round(res.profile.time_us, 3))
    assert len(times) == 4
    # The tile is clamped to what fits in UB: a long chain of float32 temps cannot use 64 Ki elements.
    tile, align = elementwise_tiling(spec, Knobs(tile_len=65536))
    assert tile < 65536 and tile % align == 0


def test_chain_validation():
    with pytest.raises(ValueError, match="unknown elementwise op"):
        op("cosh", inp(0))
    with pytest.raises(ValueError, match="full-shape"):
        elementwise_source(ElementwiseSpec(expr=op("exp", inp(0)), in_dtypes=("float32",), kinds=("row",),
                                           out_dtype="float32"))


ROW_REF = {
    "sum": lambda x, w, b: x.sum(-1), "mean": lambda x, w, b: x.mean(-1), "max": lambda x, w, b: x.amax(-1),
    "min": lambda x, w, b: x.amin(-1), "softmax": lambda x, w, b: x.softmax(-1),
    "log_softmax": lambda x, w, b: x.log_softmax(-1),
    "layer_norm": lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b),
    "rms_norm": lambda x, w, b: F.rms_norm(x, (x.shape[-1],), w, eps=1e-5),
}


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(7, 301), (2, 9000)])   # rows that fit a tile, rows streamed in chunks
def test_row_kernels_match_torch(dtype, shape):
    C = shape[-1]
    x = as_dtype(RNG.standard_normal(shape).astype(np.float32), dtype)
    w = as_dtype(RNG.standard_normal(C).astype(np.float32), dtype)
    b = as_dtype(RNG.standard_normal(C).astype(np.float32), dtype)
    for name, fn in ROW_REF.items():
        affine = name in ("layer_norm", "rms_norm")
        args = [x] + ([w, b] if name == "layer_norm" else [w] if name == "rms_norm" else [])
        got = run(row_source(RowSpec(op=name, dtype=dtype, affine=affine)), args)
        ref = fn(torch_of(x), torch_of(w), torch_of(b)).numpy()
        assert got.shape == ref.shape
        assert rel_err(got, ref) < 2 * TOL[dtype], name


def test_layer_norm_without_affine():
    x = RNG.standard_normal((9, 130)).astype(np.float32)
    got = run(row_source(RowSpec(op="layer_norm", dtype="float32")), [x])
    assert rel_err(got, F.layer_norm(torch_of(x), (130,)).numpy()) < 1e-5


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_matmul_matches_torch(dtype):
    for (B, M, K, N) in ((1, 37, 301, 45), (3, 64, 100, 70)):
        shape_a, shape_b = ((B, M, K), (B, K, N)) if B > 1 else ((M, K), (K, N))
        a = as_dtype(RNG.standard_normal(shape_a).astype(np.float32), dtype)
        b = as_dtype(RNG.standard_normal(shape_b).astype(np.float32), dtype)
        got = run(matmul_source(MatmulSpec(dtype=dtype, batched=B > 1)), [a, b])
        ref = (torch_of(a) @ torch_of(b)).numpy()
        assert rel_err(got, ref) < {"float32": 1e-5, "float16": 1e-3, "bfloat16": 8e-3}[dtype]


def test_matmul_small_tiles_cover_the_edges():
    a = RNG.standard_normal((100, 80)).astype(np.float32).astype(np.float16)
    b = RNG.standard_normal((80, 90)).astype(np.float32).astype(np.float16)
    knobs = CubeKnobs(base_m=32, base_n=48, base_k=16, l1_k=32, buffer_num=1)
    got = run(matmul_source(MatmulSpec(dtype="float16"), knobs), [a, b])
    assert rel_err(got, (torch_of(a) @ torch_of(b)).numpy()) < 1e-3


def test_comparisons_select_and_grouped_broadcast():
    a = RNG.standard_normal((6, 40, 77)).astype(np.float32)
    b = RNG.standard_normal((6, 1, 77)).astype(np.float32)
    # where(a > b, a, 0.5) with b one row per group of 40 rows, and the bool mask itself
    spec = ElementwiseSpec(expr=op("where", op("gt", inp(0), inp(1)), inp(0), const(0.5)),
                           in_dtypes=("float32", "float32"), kinds=("full", "grp"), out_dtype="float32",
                           group_axes=(1, 1))
    assert np.array_equal(run(elementwise_source(spec), [a, b]), np.where(a > b, a, 0.5))
    mask = ElementwiseSpec(expr=op("ne", inp(0), 0.25), in_dtypes=("float32",), kinds=("full",), out_dtype="bool")
    x = np.round(RNG.standard_normal((33, 65)) * 2) / 4
    got = run_kernel_source(elementwise_source(mask), [x.astype(np.float32)])
    assert got.error is None and np.array_equal(got.outputs[0], x != 0.25)


def test_fold_reduce_keeps_results_and_cuts_time():
    x = RNG.standard_normal((16, 3000)).astype(np.float32)
    spec = RowSpec(op="softmax", dtype="float32")
    plain = run_kernel_source(row_source(spec), [x])
    folded = run_kernel_source(row_source(spec, Knobs(fold_reduce=True)), [x])
    assert plain.error is None and folded.error is None
    assert np.allclose(folded.outputs[0], plain.outputs[0], rtol=1e-5, atol=1e-7)
    assert folded.profile.time_us < plain.profile.time_us
