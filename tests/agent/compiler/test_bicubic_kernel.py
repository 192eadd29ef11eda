"""level1/28_interpolate's bicubic and area cases compile (upsample_bicubic2d and _adaptive_avg_pool2d had no lowering):
the kernel file's outputs against torch's F.interpolate on small inputs, up and down, with
and without align_corners."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F


@pytest.mark.parametrize("size, align", [((9, 13), False), ((4, 3), True), ((16, 20), True)])
def test_bicubic_kernel_matches_torch(compile_graph, size, align) -> None:
    x = torch.randn(1, 2, 7, 8, generator=torch.Generator().manual_seed(sum(size)))
    _, run = compile_graph("x", f"torch.nn.functional.interpolate(x, size={size}, mode='bicubic', align_corners={align})",
                           "torch.randn(1, 2, 7, 8)")
    (out,) = run(x.numpy())
    want = F.interpolate(x.double(), size=size, mode="bicubic", align_corners=align).numpy()
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("size", [(5, 3), (14, 16)])
def test_area_kernel_matches_torch(compile_graph, size) -> None:
    # mode "area" is aten._adaptive_avg_pool2d (no lowering before): uneven windows down, repeats up
    x = torch.randn(1, 2, 7, 8, generator=torch.Generator().manual_seed(sum(size)))
    _, run = compile_graph("x", f"torch.nn.functional.interpolate(x, size={size}, mode='area')", "torch.randn(1, 2, 7, 8)")
    (out,) = run(x.numpy())
    want = F.interpolate(x.double(), size=size, mode="area").numpy()
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
