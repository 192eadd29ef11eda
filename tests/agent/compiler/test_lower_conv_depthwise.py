"""Depthwise 2-D convolutions kept whole: one vector-core launch (library/conv_depthwise.py),
checked against torch.nn.functional.conv2d and against a hand-summed output position."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F


def _conv(x, w, b, s, p):
    return F.conv2d(torch.from_numpy(x).float(), torch.from_numpy(w).float(),
                    None if b is None else torch.from_numpy(b).float(), stride=s, padding=p, groups=x.shape[1]).numpy()


@pytest.mark.parametrize("shape, k, s, p, dtype", [
    ((1, 3, 7, 9), 3, 1, 1, "float32"),     # stride 1: per-column shifted copies, rows zero-padded
    ((2, 2, 9, 8), 3, 2, 1, "float16"),     # stride 2: taps picked by Gather, half in, float accumulate
    ((1, 2, 8, 11), 5, 1, 2, "float32"),    # padding 2 on both sides of a 5 x 5 filter
])
def test_depthwise_conv_is_one_launch_and_matches_torch(compile_graph, shape, k, s, p, dtype):
    b, c, h, w = shape
    compiled, run = compile_graph(
        "x, w, b", f"torch.nn.functional.conv2d(x, w, b, stride={s}, padding={p}, groups={c})",
        f"torch.randn{shape}.to(torch.{dtype}), torch.randn({c}, 1, {k}, {k}).to(torch.{dtype}), "
        f"torch.randn({c}).to(torch.{dtype})")
    assert [g.kind for _, g in compiled.groups] == ["conv"]       # no pad fill, no pad copy, no per-tap launch
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    wt = rng.standard_normal((c, 1, k, k)).astype(dtype)
    bias = rng.standard_normal(c).astype(dtype)
    (out,) = run(x, wt, bias)
    want = _conv(x, wt, bias, s, p)
    tol = 1e-5 if dtype == "float32" else 2e-3
    np.testing.assert_allclose(np.asarray(out, np.float32).reshape(want.shape), want, rtol=tol, atol=tol)


def test_a_corner_output_sums_only_the_taps_inside_the_image(compile_graph):
    # x = 1 everywhere, w[c, i, j] = 3 i + j, bias 0.5: output (0, 0) with padding 1 sees taps
    # i, j in {1, 2} only: (4 + 5 + 7 + 8) + 0.5 = 24.5; an inner output sees all nine: 36.5.
    _, run = compile_graph("x, w, b", "torch.nn.functional.conv2d(x, w, b, padding=1, groups=2)",
                           "torch.randn(1, 2, 5, 6), torch.randn(2, 1, 3, 3), torch.randn(2)")
    x = np.ones((1, 2, 5, 6), np.float32)
    wt = np.tile(np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3), (2, 1, 1, 1))
    (out,) = run(x, wt, np.full(2, 0.5, np.float32))
    out = np.asarray(out).reshape(1, 2, 5, 6)
    assert out[0, 1, 0, 0] == 24.5 and out[0, 0, 2, 3] == 36.5
    # the bottom-right corner keeps taps i, j in {0, 1}: 0 + 1 + 3 + 4 + 0.5
    assert out[0, 0, 4, 5] == 8.5
