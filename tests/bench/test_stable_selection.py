"""The reference's topk and sort break ties toward the lower index, inside torch_npu stand-ins
too (sage/bench/stable_selection.py): public level2/7's kernel selected the same
probabilities as torch but not torch's arbitrary pick among equal ones."""

from __future__ import annotations

import torch

from sage.bench.deterministic import deterministic


def test_topk_takes_the_lower_of_equal_keys_largest_or_smallest():
    x = torch.tensor([[1., 3., 3., 2., 3.], [5., 5., 1., 5., 0.], [2., 0., 0., 9., 0.]])
    with deterministic():
        top = torch.topk(x, 2)
        low = torch.topk(x, 2, largest=False)
        unsorted = torch.topk(x, 2, sorted=False)
    assert top.indices.tolist() == [[1, 2], [0, 1], [3, 0]]
    assert low.indices.tolist() == [[0, 3], [4, 2], [1, 2]]
    assert torch.equal(top.values, torch.topk(x, 2).values)           # the values are torch's
    assert unsorted.indices.tolist() == top.indices.tolist()


def test_sort_is_stable_and_nan_stays_the_largest():
    x = torch.tensor([2., float("nan"), 2., 1., 2.])
    with deterministic():
        down = torch.sort(x, descending=True)
        up = x.sort()
        first = torch.topk(x, 2)
    assert down.indices.tolist() == [1, 0, 2, 4, 3]
    assert up.indices.tolist() == [3, 0, 2, 4, 1]
    assert first.indices.tolist() == [1, 0]


def test_a_zero_dim_tensor_and_the_mode_outside_the_block():
    with deterministic():
        assert torch.topk(torch.tensor(4.0), 1).indices.item() == 0
    x = torch.zeros(64)
    # outside the block torch's own kernels run again (ties are theirs to break)
    assert torch.equal(torch.topk(x, 3).values, torch.zeros(3))


def test_a_standin_runs_its_body_with_stable_selections():
    from sage.bench.torch_npu_standin import moe  # noqa: F401 - registers the stand-ins

    logits = torch.tensor([[0.] + [2.] * 6 + [-1.]], dtype=torch.bfloat16)     # six equal experts
    with deterministic():
        _, idx, _ = torch.ops.npu_standin.npu_moe_gating_top_k_softmax(logits, None, 2)
    assert idx.tolist() == [[1, 2]]                  # torch's own kernel picks [5, 4] here


def test_only_the_rows_with_equal_keys_change_and_every_row_is_the_stable_sorts():
    from sage.bench.stable_selection import _topk

    g = torch.Generator().manual_seed(4)
    x = torch.randn(64, 50, generator=g)
    x[5, 7] = x[5, 9] = x[5].max() + 1                 # a tie among the top keys of row 5
    x[9, :3] = float("nan")                            # NaN is the largest key, tied with NaN
    for dim, k, largest in [(-1, 4, True), (-1, 3, False), (0, 6, True)]:
        values, indices = _topk(x, k, dim, largest)
        want_v, want_i = torch.sort(x, dim=dim, descending=largest, stable=True)
        assert torch.equal(indices, want_i.narrow(dim, 0, k))
        assert torch.equal(values.nan_to_num(9.0), want_v.narrow(dim, 0, k).nan_to_num(9.0))
