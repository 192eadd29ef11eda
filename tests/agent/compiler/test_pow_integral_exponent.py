"""x ** n for an integral n has a real value for a negative base (std ** -3 in a norm's
backward): the kernel must not compute it as exp(n * ln x), which is NaN there."""

from __future__ import annotations

import numpy as np
import pytest

F32 = np.float32
X = np.array([-2, -0.5, 0.5, 2, -1.5, 3, -1, 1.25], F32)


@pytest.mark.parametrize("n, expected", [
    (-3, [-0.125, -8, 8, 0.125, -0.296296, 1 / 27, -1, 0.512]),
    (5, [-32, -0.03125, 0.03125, 32, -7.59375, 243, -1, 3.0517578]),
    (-2, [0.25, 4, 4, 0.25, 0.444444, 1 / 9, 1, 0.64]),
    (7, [-128, -0.0078125, 0.0078125, 128, -17.0859375, 2187, -1, 4.7683716]),
])
def test_integral_powers_of_negative_bases(compile_graph, n, expected):
    _, run = compile_graph("x", f"torch.pow(x, {n})", "torch.randn(8)")
    (out,) = run(X)
    np.testing.assert_allclose(out, np.array(expected, F32), rtol=1e-5)


def test_a_large_odd_power_keeps_the_sign_and_a_fractional_one_is_nan_below_zero(compile_graph):
    _, run = compile_graph("x", "(torch.pow(x, 71), torch.pow(x, 2.5))", "torch.randn(8)")
    x = np.array([-1.01, 1.01, -0.99, 0.99, -1, 1, 1.2, -1.2], F32)
    odd, frac = run(x)
    expected = np.power(x.astype(np.float64), 71)
    np.testing.assert_allclose(odd, expected.astype(F32), rtol=1e-4)
    assert np.isnan(frac[[0, 2, 4, 7]]).all()
    np.testing.assert_allclose(frac[[1, 3, 5, 6]], np.power(x[[1, 3, 5, 6]].astype(np.float64), 2.5), rtol=1e-5)
