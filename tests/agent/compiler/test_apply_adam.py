"""torch_npu.npu_apply_adam (its sage stand-in writes out=(var, m, v) in place) compiles to
the pointwise update it is, checked against TensorFlow's ApplyAdam formula, which CANN's
ApplyAdam implements, computed here in float64 from the inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

STANDIN = "__import__('sage.bench.torch_npu_standin', fromlist=['npu'])"
B1P, B2P, LR, B1, B2, EPS = 0.9, 0.999, 1e-3, 0.9, 0.999, 1e-8


def _expected(var, m, v, g, nesterov: bool):
    """https://www.tensorflow.org/api_docs/python/tf/raw_ops/ApplyAdam"""
    var, m, v, g = (torch.from_numpy(np.asarray(a, np.float64)) for a in (var, m, v, g))
    lr_t = LR * (1 - B2P) ** 0.5 / (1 - B1P)
    m = B1 * m + (1 - B1) * g
    v = B2 * v + (1 - B2) * g * g
    step = m * B1 + g * (1 - B1) if nesterov else m
    return var - lr_t * step / (v.sqrt() + EPS), m, v


@pytest.mark.parametrize("nesterov,dtype", [(False, "float32"), (True, "float32"), (True, "float16")])
def test_apply_adam_updates_var_m_v_as_the_formula(compile_graph, nesterov, dtype):
    body = (f"{STANDIN}.npu_apply_adam({B1P}, {B2P}, {LR}, {B1}, {B2}, {EPS}, g, False, {nesterov}, "
            "out=(var, m, v))")
    make = f"torch.randn(37, 50).to(torch.{dtype})"
    compiled, run = compile_graph("var, m, v, g", body, f"{make}, torch.randn(37, 50), torch.randn(37, 50), {make}")
    assert compiled.source.count("@kernel") >= 1
    rng = np.random.default_rng(1)
    var, g = (rng.standard_normal((37, 50)).astype(dtype) for _ in range(2))
    m = rng.standard_normal((37, 50)).astype(np.float32)
    v = rng.standard_normal((37, 50)).astype(np.float32)     # negative v: sqrt gives NaN, as on the chip
    got = run(var.copy(), m.copy(), v.copy(), g.copy())
    want = _expected(var, m, v, g, nesterov)
    assert [o.dtype for o in got] == [np.dtype(dtype), np.float32, np.float32]
    tol = 1e-5 if dtype == "float32" else 2e-3
    for out, ref in zip(got, want):
        ref = ref.numpy()
        assert (np.isnan(out.reshape(ref.shape)) == np.isnan(ref)).all()
        np.testing.assert_allclose(out.reshape(ref.shape).astype(np.float64), ref, rtol=tol, atol=tol, equal_nan=True)
    # the update moved var where the step is finite (the op is not dropped as dead)
    assert np.abs(got[0].reshape(37, 50).astype(np.float64) - var)[~np.isnan(want[0].numpy())].max() > 1e-4
