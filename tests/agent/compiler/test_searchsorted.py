"""searchsorted and bucketize as a broadcast compare summed over the sorted axis
(sage/kernels/decompose_index.py): the torch_npu stand-ins of grouped quantisation and MoE
routing call searchsorted (level2/10_swiglu_quant, level2/4_moe_compute_expert_tokens).
Checked against torch on values that hit entries exactly, fall between and outside them."""

from __future__ import annotations

import numpy as np
import pytest
import torch


@pytest.mark.parametrize("body", ["torch.searchsorted(s, v)", "torch.searchsorted(s, v, right=True)",
                                  "torch.searchsorted(s, v, side='right', out_int32=True)",
                                  "torch.bucketize(v, s)", "torch.bucketize(v, s, right=True)"])
def test_searchsorted_and_bucketize_match_torch_on_ties_and_outside_values(compile_graph, body):
    compiled, run = compile_graph("s, v", body, "torch.tensor([2, 3, 3, 7, 9]), torch.randint(0, 12, (6, 40))")
    s = torch.tensor([2, 3, 3, 7, 9])                          # a repeated entry: left and right differ there
    v = torch.arange(-1, 11).repeat(20).reshape(6, 40)         # every value below, on, between and above
    (out,) = run(s.numpy(), v.numpy())
    expect = eval(body, {"torch": torch, "s": s, "v": v})
    assert out.dtype == expect.numpy().dtype and np.array_equal(out, expect.numpy())


def test_searchsorted_of_floats_along_batched_rows(compile_graph):
    compiled, run = compile_graph("s, v", "torch.searchsorted(s, v)", "torch.randn(3, 16), torch.randn(3, 100)")
    g = torch.Generator().manual_seed(7)
    s = torch.sort(torch.randn(3, 16, generator=g), dim=-1)[0]
    v = torch.cat([s[:, ::3], torch.randn(3, 94, generator=g)], dim=1)     # some values equal entries
    (out,) = run(s.numpy(), v.numpy())
    assert np.array_equal(out, torch.searchsorted(s, v).numpy())
