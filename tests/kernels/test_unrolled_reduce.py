"""A reduction over one short axis that is not innermost is traced as elementwise ops over
its slices (sage/kernels/unrolled_reduce.py), with torch's numerics."""

import pytest
import torch

from sage.kernels import trace_graph
from sage.kernels.unrolled_reduce import SMALL_AXIS, unrolled


class _MiddleSum(torch.nn.Module):
    def forward(self, x):
        return x.sum(dim=1)


@pytest.mark.parametrize("fn", [torch.sum, torch.amax, torch.amin])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("keepdim", [False, True])
def test_the_slices_give_what_torch_gives(fn, dtype, keepdim):
    x = torch.randn(4096, 3, 8, generator=torch.Generator().manual_seed(0)).to(dtype)
    got = unrolled(fn, x, [1], keepdim)
    want = fn(x, [1], keepdim=keepdim)
    assert got.dtype == want.dtype and got.shape == want.shape
    # torch adds the slices in order into a float32 accumulator: the same adds, bit for bit
    assert torch.equal(got, want)


def test_a_size_one_axis_beside_it_is_kept_in_the_shape():
    x = torch.randn(4096, 1, 4, 2)
    assert unrolled(torch.sum, x, [1, 2], True).shape == (4096, 1, 1, 2)
    torch.testing.assert_close(unrolled(torch.sum, x, [1, 2], False), x.sum(dim=(1, 2)))


@pytest.mark.parametrize("shape, dims", [((4096, 40), [1]),              # the innermost axis
                                         ((4096, SMALL_AXIS + 1, 7), [1]),  # too long to be tiny tiles
                                         ((4, 2, 2048), [1]),            # rows of 2 x 2048: 16 KB, not tiny
                                         ((100, 2, 8), [1]),             # 100 tiny tiles: few enough
                                         ((4096, 3, 7), [0, 1])])        # two axes
def test_other_reductions_are_left_alone(shape, dims):
    assert unrolled(torch.sum, torch.randn(*shape), dims, False) is NotImplemented
    assert unrolled(torch.sum, torch.ones(*shape, dtype=torch.int32), [1], False) is NotImplemented


def test_the_trace_records_adds_not_a_sum():
    graph = trace_graph(_MiddleSum(), [torch.randn(4096, 2, 8)], decompose=True)
    ops = [n.call.name for n in graph.nodes]
    assert "sum" not in ops and ops.count("add") == 1
