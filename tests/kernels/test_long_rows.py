"""Reductions over rows longer than UB holds, recorded as chunks and a reduction of them."""

import torch

from sage.kernels import long_rows, trace_graph
from sage.kernels.long_rows import chunk_of


class _RowSum(torch.nn.Module):
    def forward(self, x):
        return x.sum(dim=-1), x.amax(dim=(1, 2), keepdim=True)


def test_the_chunk_is_the_largest_divisor_within_the_limit():
    assert chunk_of(16384, 4096) == 4096
    assert chunk_of(18088, 4096) == 2584          # 18088 = 2^3 * 7 * 17 * 19; 2584 = 2^3 * 17 * 19
    assert chunk_of(4099, 1024) is None            # a prime: no chunk at all


def test_inside_long_rows_a_long_reduction_is_two_and_outside_one():
    x = torch.randn(2, 3, 4096)
    ops = [n.call.name for n in trace_graph(_RowSum(), [x], decompose=True).nodes]
    assert ops.count("sum") == 1 and ops.count("amax") == 1
    with long_rows(1024):
        graph = trace_graph(_RowSum(), [x], decompose=True)
    sums = [n for n in graph.nodes if n.call.name == "sum"]
    maxes = [n for n in graph.nodes if n.call.name == "amax"]
    # 4096 -> 4 chunks of 1024 -> one value per row; the max runs over 3 * 4096 = 12288 -> 12 x 1024
    assert [list(n.call.outputs[0].shape) for n in sums] == [[2, 3, 4], [2, 3]]
    assert [list(n.call.outputs[0].shape) for n in maxes] == [[2, 12], [2]]


def test_the_split_reduction_computes_what_torch_does():
    from sage.kernels.long_rows import split_long_row

    x = torch.randn(2, 3, 4096, dtype=torch.float16)
    assert split_long_row(torch.sum, x, [2], False) is NotImplemented       # no limit set
    with long_rows(512):
        total = split_long_row(torch.sum, x, [2], False)
        top = split_long_row(torch.amax, x, [1, 2], True)
        assert split_long_row(torch.sum, x, [1], False) is NotImplemented   # not a trailing run
    assert total.dtype == torch.float16 and top.shape == (2, 1, 1)
    torch.testing.assert_close(total.float(), x.float().sum(-1), rtol=2e-3, atol=2e-2)
    assert torch.equal(top, x.amax(dim=(1, 2), keepdim=True))


def test_a_reduced_axis_of_size_one_does_not_stop_the_split():
    # a norm backward's sum(dim=(0, 2, 3)) with a batch of one: the reduced run is (2, 3)
    # (public level2/14's [1, 3, 224, 224] case: one 50176-long row per channel, over UB)
    from sage.kernels.long_rows import split_long_row

    x = torch.randn(1, 3, 64, 64)
    with long_rows(1024):
        flat = split_long_row(torch.sum, x, [0, 2, 3], False)
        kept = split_long_row(torch.amax, x, [0, 2, 3], True)
        graph = trace_graph(_BatchSum(), [x], decompose=True)
    assert flat.shape == (3,) and kept.shape == (1, 3, 1, 1)
    torch.testing.assert_close(flat, x.sum(dim=(0, 2, 3)), rtol=1e-5, atol=1e-4)
    assert torch.equal(kept, x.amax(dim=(0, 2, 3), keepdim=True))
    sums = [list(n.call.outputs[0].shape) for n in graph.nodes if n.call.name == "sum"]
    assert sums == [[3, 4], [3]]                   # 4096 per channel -> 4 chunks of 1024


class _BatchSum(torch.nn.Module):
    def forward(self, x):
        return x.sum(dim=(0, 2, 3))
