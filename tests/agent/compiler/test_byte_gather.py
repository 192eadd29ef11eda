"""A bool mask read column-strided (the moe_finalize_routing stand-in's `(pos >= 0)` over a
transposed index, level2/6): A2's Gather has no 8-bit form, so each byte is loaded alone in
its 32 B block with a zero byte after it and gathered as an int16. The store side likewise:
a bool written one element per 32 B block (a column of a mask, the top_k_top_p stand-in's
`top_p_mask[:, -1] = False`, level2/9) is converted to int16 and gathered in the 16-bit form."""

from __future__ import annotations

import numpy as np
import torch


def test_a_column_strided_bool_mask_is_gathered_as_int16(compile_graph):
    # summed over K, the tile's rows are K: the mask's column of a row is 100 bytes apart
    # (K = 16: a K of 8 or fewer is summed slice by slice, sage/kernels/unrolled_reduce.py)
    body = "(x * m.t().unsqueeze(-1)).sum(1)"
    compiled, run = compile_graph("x, m", body, "torch.randn(100, 16, 256), torch.rand(16, 100) > 0.5")
    assert "ReinterpretCast(int16)" in compiled.source and "DataCopyPadExtParams(True, 0, 1, 0)" in compiled.source
    g = torch.Generator().manual_seed(3)
    x, m = torch.randn(100, 16, 256, generator=g), torch.rand(16, 100, generator=g) > 0.5
    (out,) = run(x.numpy(), m.numpy())
    np.testing.assert_allclose(out, (x * m.t().unsqueeze(-1)).sum(1).numpy(), rtol=1e-6, atol=1e-6)


SET_LAST_COLUMN = "(lambda m: (m.__setitem__((slice(None), -1), False), m)[1])(x > 0)"


def test_a_bool_column_written_strided_is_gathered_as_int16(compile_graph):
    compiled, run = compile_graph("x", SET_LAST_COLUMN, "torch.randn(16, 2048)")
    assert "Gather(y0.ReinterpretCast(int16)" in compiled.source
    x = torch.randn(16, 2048, generator=torch.Generator().manual_seed(5))
    x[:, -1] = 1.0                          # the column written is True before the store
    (out,) = run(x.numpy())
    want = x > 0
    want[:, -1] = False
    np.testing.assert_array_equal(out, want.numpy())
