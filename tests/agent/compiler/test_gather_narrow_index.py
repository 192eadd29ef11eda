"""torch.gather with an index smaller than the source off the gathered axis (level1/20_gather:
"index shape (16, 32, 32) differs from the source (32, 32, 32) off the gathered axis") is
the gather of the source narrowed to the index's extent there (decompose_index.gather):
the compiled kernel against torch.gather."""

from __future__ import annotations

import numpy as np
import pytest
import torch


@pytest.mark.parametrize("dim, src, idx", [(0, (6, 5, 4), (3, 2, 4)), (1, (4, 7), (2, 9)), (-1, (3, 4, 8), (3, 2, 5))])
def test_gather_with_a_smaller_index_matches_torch(compile_graph, dim, src, idx) -> None:
    gen = torch.Generator().manual_seed(len(src))
    x = torch.randn(*src, generator=gen)
    index = torch.randint(0, src[dim], idx, generator=gen)
    _, run = compile_graph("x, i", f"torch.gather(x, {dim}, i)",
                           f"torch.randn{src}, torch.randint(0, {src[dim]}, {idx})")
    (out,) = run(x.numpy(), index.numpy())
    np.testing.assert_array_equal(out, torch.gather(x, dim, index).numpy())
