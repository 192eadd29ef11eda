"""nll_loss over short class rows picks each row's target by comparing the class index with
it over the row (one streaming program with the weights), not by a gather and an
index_select of one element a row; ignored targets weigh zero either way."""

from __future__ import annotations

import numpy as np

from tests.agent.compiler.kernel_text import launches




def test_weighted_sum_over_short_rows_has_no_gather(compile_graph):
    body = "torch.nn.functional.nll_loss(x, t, weight=w, ignore_index=-100, reduction='sum')"
    compiled, run = compile_graph("x, t, w", body,
                                  "torch.randn(6, 10), torch.tensor([0, 3, -100, 9, 3, 1]), torch.rand(10)")
    assert "gather" not in compiled.source.lower() and launches(compiled) == 2
    x = -np.arange(60, dtype=np.float32).reshape(6, 10)        # x[i, c] = -(10 i + c)
    t = np.array([0, 3, -100, 9, 3, 1], dtype=np.int64)
    w = np.arange(1, 11, dtype=np.float32)                      # w[c] = c + 1
    (out,) = run(x, t, w)
    # rows 0, 1, 3, 4, 5 pick 0, 13, 39, 43, 51 with weights 1, 4, 10, 4, 2; row 2 is ignored
    assert out == 0 * 1 + 13 * 4 + 39 * 10 + 43 * 4 + 51 * 2


def test_none_reduction_with_an_ignored_class_inside_the_row(compile_graph):
    body = "torch.nn.functional.nll_loss(x, t, ignore_index=2, reduction='none')"
    compiled, run = compile_graph("x, t", body, "torch.randn(4, 5).half(), torch.tensor([2, 4, 0, 2])")
    x = (-np.arange(20, dtype=np.float32).reshape(4, 5)).astype(np.float16)
    t = np.array([2, 4, 0, 2], dtype=np.int64)
    (out,) = run(x, t)
    np.testing.assert_array_equal(out.astype(np.float32), [0.0, 9.0, 10.0, 0.0])


def test_a_long_class_row_fits_ub_with_its_index_ramps(compile_graph):
    # level1/25 case 33 (bf16[64, 6144], sum): the row stays whole in UB for the compare, and
    # the class-index ramps (four 6208-element fp32 buffers) must be counted when the tile is
    # sized, or InitBuffer overflows UB
    import ml_dtypes

    body = "torch.nn.functional.nll_loss(x, t, ignore_index=-100, reduction='sum')"
    compiled, run = compile_graph("x, t", body, "torch.randn(64, 6144).bfloat16(), torch.randint(0, 6144, (64,))")
    cols = np.arange(6144)
    x = np.tile(-(cols % 8), (64, 1)).astype(ml_dtypes.bfloat16)   # x[i, c] = -(c mod 8)
    t = (np.arange(64) * 95 + 1).astype(np.int64)
    (out,) = run(x, t)
    assert float(out) == float(sum(int(v) % 8 for v in t))
