"""Forwards whose arguments are all Python scalars (level2/22_hybrid_attention_mask_preparation
builds its masks from sizes alone), and masked_fill of a bool tensor with a Python bool."""

from __future__ import annotations

import numpy as np
import torch

BODY = ("torch.ones((n, n + 2), dtype=torch.bool).masked_fill("
        "torch.arange(n)[:, None] >= torch.arange(n + 2)[None, :] - 2, False)")


def test_a_mask_made_from_sizes_alone_with_a_bool_fill(compile_graph):
    # no tensor argument: the class guard has no shapes to pin (it once wrote `(,) in ((),)`,
    # a syntax error); the fill False is the number 0 in the select, not a flag
    compiled, run = compile_graph("n", BODY, "5")
    (out,) = run(5)
    n = 5
    expect = torch.ones((n, n + 2), dtype=torch.bool).masked_fill(
        torch.arange(n)[:, None] >= torch.arange(n + 2)[None, :] - 2, False)
    assert out.dtype == np.bool_ and out.tolist() == expect.tolist()


def test_masked_fill_of_a_bool_tensor_with_true(compile_graph):
    compiled, run = compile_graph("x, m", "x.masked_fill(m, True)",
                                  "torch.rand(4, 9) > 0.5, torch.rand(4, 9) > 0.5")
    g = torch.Generator().manual_seed(1)
    x, m = torch.rand(4, 9, generator=g) > 0.5, torch.rand(4, 9, generator=g) > 0.5
    (out,) = run(x.numpy(), m.numpy())
    assert out.tolist() == (x | m).tolist()
