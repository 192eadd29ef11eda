"""Average and max pooling, in one pass or one axis at a time (sage/kernels/decompose_pool.py), give what
torch's pooling gives, over kernel sizes, strides, padding, ceil_mode, count_include_pad and
divisor_override (level1/26_avg_pool3d and 27_max_pool3d use all of them; ceil_mode and
count_include_pad=False had no lowering before)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sage.kernels.compact import compact_programs
from sage.kernels.decompose_pool import avg_pool, max_pool_with_indices

axis = st.tuples(st.integers(1, 9), st.integers(1, 4), st.integers(1, 3))    # size, kernel, stride


@settings(max_examples=120, deadline=None)
@given(axes=st.lists(axis, min_size=1, max_size=3), pad=st.integers(0, 2), ceil=st.booleans(),
       include=st.booleans(), override=st.sampled_from([None, 5]), seed=st.integers(0, 2**16),
       compact=st.booleans())
def test_avg_pool_matches_torch(axes, pad, ceil, include, override, seed, compact) -> None:
    # compact: windows over ONE_PASS_TAPS axis by axis; else one pass where the form allows
    sizes, kernel, stride = (list(v) for v in zip(*axes))
    assume(all(pad <= k // 2 for k in kernel) and all(s >= k for s, k in zip(sizes, kernel)))
    x = torch.randn(2, 3, *sizes, generator=torch.Generator().manual_seed(seed))
    fn = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[len(axes)]
    kwargs = {} if len(axes) == 1 else {"divisor_override": override}
    want = fn(x, kernel, stride, pad, ceil, include, **kwargs)
    with compact_programs(compact):
        got = avg_pool(x, kernel, stride, pad, ceil, include, override if len(axes) > 1 else None)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


@settings(max_examples=80, deadline=None)
@given(axes=st.lists(axis, min_size=2, max_size=3), pad=st.integers(0, 2), ceil=st.booleans(),
       dil=st.integers(1, 2), seed=st.integers(0, 2**16), compact=st.booleans())
def test_max_pool_matches_torch(axes, pad, ceil, dil, seed, compact) -> None:
    sizes, kernel, stride = (list(v) for v in zip(*axes))
    assume(all(pad <= k // 2 for k in kernel) and all(s >= dil * (k - 1) + 1 for s, k in zip(sizes, kernel)))
    x = torch.randn(1, 2, *sizes, generator=torch.Generator().manual_seed(seed))
    fn = F.max_pool2d if len(axes) == 2 else F.max_pool3d
    want = fn(x, kernel, stride, pad, dil, ceil)
    with compact_programs(compact):
        got, _ = max_pool_with_indices(x, kernel, stride, pad, dil, ceil)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_half_input_sums_in_float32() -> None:
    x = (torch.rand(1, 1, 4, 6, 6, generator=torch.Generator().manual_seed(0)) * 100).to(torch.float16)
    want = F.avg_pool3d(x.float(), [3, 3, 3], 1, 1).to(torch.float16)
    torch.testing.assert_close(avg_pool(x, [3, 3, 3], 1, 1), want, rtol=1e-3, atol=1e-3)
