"""Bicubic upsampling decomposed into two separable passes of gathers and multiply-adds
(sage/kernels/decompose_interp.py) gives what torch's F.interpolate(mode="bicubic") gives:
up and down, with and without align_corners, from sizes and from scale factors (public
level1/28_interpolate failed with "aten.upsample_bicubic2d: no lowering"). The compiled
kernel is checked against torch in tests/agent/compiler/test_bicubic_kernel.py."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from sage.kernels.decompose_interp import adaptive_avg_pool, upsample_bicubic2d


@settings(max_examples=60, deadline=None)
@given(h=st.integers(1, 12), w=st.integers(1, 12), oh=st.integers(1, 20), ow=st.integers(1, 20),
       align=st.booleans(), seed=st.integers(0, 2**16))
def test_sizes_match_torch(h, w, oh, ow, align, seed) -> None:
    x = torch.randn(2, 3, h, w, generator=torch.Generator().manual_seed(seed))
    want = F.interpolate(x, size=(oh, ow), mode="bicubic", align_corners=align)
    got = upsample_bicubic2d(x, [oh, ow], align)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@settings(max_examples=30, deadline=None)
@given(h=st.integers(2, 9), w=st.integers(2, 9), sf=st.sampled_from([0.5, 1.5, 2.0, 3.0, 4.0]),
       align=st.booleans())
def test_scale_factors_match_torch(h, w, sf, align) -> None:
    x = torch.randn(1, 2, h, w, generator=torch.Generator().manual_seed(h * 31 + w))
    want = F.interpolate(x, scale_factor=sf, mode="bicubic", align_corners=align)
    oh, ow = want.shape[-2:]
    # F.interpolate hands the scale on as 1/scale_factor's source (scales_h = scales_w = sf)
    got = upsample_bicubic2d(x, [oh, ow], align, sf, sf)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_half_inputs_are_computed_in_float32() -> None:
    x = torch.randn(1, 1, 5, 7, generator=torch.Generator().manual_seed(3)).to(torch.bfloat16)
    got = upsample_bicubic2d(x, [9, 4], False)
    assert got.dtype == torch.bfloat16
    want = F.interpolate(x.float(), size=(9, 4), mode="bicubic", align_corners=False).to(torch.bfloat16)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


@settings(max_examples=60, deadline=None)
@given(h=st.integers(1, 12), w=st.integers(1, 12), oh=st.integers(1, 20), ow=st.integers(1, 20),
       seed=st.integers(0, 2**16))
def test_area_matches_adaptive_avg_pool(h, w, oh, ow, seed) -> None:
    # F.interpolate(mode="area") is adaptive_avg_pool2d: windows of uneven length, up and down
    x = torch.randn(2, 3, h, w, generator=torch.Generator().manual_seed(seed))
    want = F.interpolate(x, size=(oh, ow), mode="area")
    torch.testing.assert_close(adaptive_avg_pool(x, [oh, ow]), want, rtol=1e-5, atol=1e-6)


def test_area_3d_and_half() -> None:
    x = torch.randn(1, 2, 5, 6, 7, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(adaptive_avg_pool(x, [3, 6, 2]), F.adaptive_avg_pool3d(x, (3, 6, 2)), rtol=1e-5, atol=1e-6)
    h = x[0].to(torch.float16)
    want = F.adaptive_avg_pool2d(h.float(), (4, 3)).to(torch.float16)
    torch.testing.assert_close(adaptive_avg_pool(h, [4, 3]), want, rtol=1e-3, atol=1e-3)
