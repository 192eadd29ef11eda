"""Pooling compiled one axis at a time (sage/kernels/decompose_pool.py): the kernel file's
outputs against torch on small 3-D pools, with ceil_mode and count_include_pad=False (no
lowering before) and per-axis divisors; and an area resize whose windows are made from
traced ops, not captured constants (level1/28_interpolate's 2048x1024 -> 1024x512 case was
refused: "lift_fresh wraps a tensor constant captured by the model")."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

AVG = [("[3, 3, 3], 2, 1, True, False", (1, 2, 5, 7, 6)), ("[2, 3, 3], [2, 1, 2], [0, 1, 1]", (1, 2, 4, 6, 7)),
       ("2, 2, 0, False, True, 3", (1, 1, 4, 4, 5))]


@pytest.mark.parametrize("args, shape", AVG)
def test_avg_pool3d_kernel_matches_torch(compile_graph, args, shape) -> None:
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(len(args)))
    _, run = compile_graph("x", f"torch.nn.functional.avg_pool3d(x, {args})", f"torch.randn{shape}")
    (out,) = run(x.numpy())
    want = eval(f"F.avg_pool3d(x.double(), {args})").numpy()  # noqa: S307 - the test's own text
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


def test_max_pool3d_kernel_matches_torch(compile_graph) -> None:
    x = torch.randn(1, 2, 5, 6, 7, generator=torch.Generator().manual_seed(5))
    _, run = compile_graph("x", "torch.nn.functional.max_pool3d(x, 3, 2, 1, ceil_mode=True)", "torch.randn(1, 2, 5, 6, 7)")
    (out,) = run(x.numpy())
    np.testing.assert_array_equal(out, F.max_pool3d(x, 3, 2, 1, ceil_mode=True).numpy())


def test_area_resize_of_a_long_axis(compile_graph) -> None:
    x = torch.randn(1, 1, 3, 2048, generator=torch.Generator().manual_seed(2))
    _, run = compile_graph("x", "torch.nn.functional.interpolate(x, size=(2, 1000), mode='area')", "torch.randn(1, 1, 3, 2048)")
    (out,) = run(x.numpy())
    want = F.interpolate(x.double(), size=(2, 1000), mode="area").numpy()
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
