"""Division by a scalar divides (sage/kernels/vector_ops.py, "div"): x / v and v / x are
correctly rounded, bit for bit torch's, where x * (1 / v) is an ulp off for most v. Public
level1/29 (npu_dynamic_quant) needs it: its scale is rowmax / 127, and round(y / scale) to
int8 flips where the scale does (1 to 5,153 elements per case differed with the reciprocal)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

X = np.arange(1, 2001, dtype=np.float32).reshape(40, 50) * np.float32(0.37)


def test_the_values_tell_division_from_the_reciprocal():
    # the test below can fail: on these values the reciprocal's product differs from division
    assert (X / np.float32(127) != X * (np.float32(1) / np.float32(127))).sum() > 50
    assert (np.float32(3) / X != np.float32(3) * (np.float32(1) / X)).sum() > 300


@pytest.mark.parametrize("body,expected", [
    ("x / 127.0", lambda x: x / 127.0),
    ("3.0 / x", lambda x: 3.0 / x),
    ("x / x.abs().amax(-1, keepdim=True).div(127.0)", lambda x: x / x.abs().amax(-1, keepdim=True).div(127.0)),
])
def test_division_by_a_scalar_is_torchs_bit_for_bit(compile_graph, body, expected):
    compiled, run = compile_graph("x", body, "torch.randn(40, 50)")
    (out,) = run(X)
    np.testing.assert_array_equal(out, expected(torch.from_numpy(X)).numpy())


def test_a_quantised_row_rounds_as_torch(compile_graph):
    """bf16 values (few mantissa bits: y / scale lands on a half) where the reciprocal's
    scale rounds one element the other way (seed 1, found by search)."""
    body = "torch.round(x / (x.abs().amax(-1, keepdim=True) / 127.0)).clamp(-128, 127).to(torch.int8)"
    compiled, run = compile_graph("x", body, "torch.randn(40, 50)")
    t = torch.randn(40, 50, generator=torch.Generator().manual_seed(1)).bfloat16().float()
    x = t.numpy()
    amax = np.abs(x).max(-1, keepdims=True)
    assert (np.rint(x / (amax * (np.float32(1) / np.float32(127)))) != np.rint(x / (amax / np.float32(127)))).any()
    (out,) = run(x)
    np.testing.assert_array_equal(out, torch.round(t / (t.abs().amax(-1, keepdim=True) / 127.0)).clamp(-128, 127)
                                  .to(torch.int8).numpy())
