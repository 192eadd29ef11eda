"""int64 through Gather, which A2 has only in 16- and 32-bit forms: a leaf read by a gather
plan is gathered as the low int32 word of each element, and an output written transposed or
one element per block is gathered as int32 into its element positions and widened there by
one int32 -> int64 Cast (moe_finalize_routing's stand-in, public level2/6 case 8, failed on
the int64 offset table's misaligned rows)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

FINALIZE = ("__import__('sage.bench.torch_npu_standin.moe', fromlist=['m']).npu_moe_finalize_routing("
            "x, s1, s2, b, sc, i, e, 0)")
FINALIZE_INPUTS = ("torch.randn(200, 256), torch.randn(100, 256), torch.randn(100, 256), torch.randn(8, 256), "
                   "torch.randn(100, 2), torch.randperm(200, dtype=torch.int32), "
                   "torch.randint(0, 8, (100, 2), dtype=torch.int32)")


def test_an_int64_output_written_transposed_is_widened_after_its_gather(compile_graph):
    from sage.bench.torch_npu_standin.moe import npu_moe_finalize_routing

    compiled, run = compile_graph("x, s1, s2, b, sc, i, e", FINALIZE, FINALIZE_INPUTS)
    assert "Cast(y1, w1, RoundMode.CAST_NONE" in compiled.source
    torch.manual_seed(0)
    args = eval(FINALIZE_INPUTS)
    (out,) = run(*[a.numpy() for a in args])
    np.testing.assert_allclose(out, npu_moe_finalize_routing(*args, 0).numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("body, shape", [("i.long().t().contiguous()", (100, 2)),
                                         ("(i.t() + 1).long()", (37, 45)),
                                         ("(i + 1).long()[:, ::3]", (40, 45))])
def test_an_int64_leaf_is_gathered_as_its_low_word(compile_graph, body, shape):
    inputs = f"torch.randint(-100, 100, {shape}, dtype=torch.int32)"
    compiled, run = compile_graph("i", body, inputs)
    i = torch.randint(-100, 100, shape, dtype=torch.int32, generator=torch.Generator().manual_seed(1))
    (out,) = run(i.numpy())
    want = eval(body)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, want.numpy())
