"""A tile of few long rows runs its broadcasts and row reductions one instruction per row
(repeating over the row's 256 B chunks), not one per chunk (sage/kernels/repeat_rows.py):
level1/10_layer_norm's fp16 [16, 1024, 4096] case, one row of 4096 per tile, made 2.5 M
instruction records in one launch, over the simulator's cap. Checked against torch on
shapes that take the row form (fewer rows per tile than half its chunks, with and without a
partial last chunk) and the column form, and the instruction count per row is bounded."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sage.npu.execute import run_kernel_source

LAYER_NORM = "torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b)"


@pytest.mark.parametrize("rows, cols", [(2, 1000), (3, 4096), (1, 130), (96, 70)])
def test_layer_norm_matches_torch(compile_graph, rows: int, cols: int) -> None:
    gen = torch.Generator().manual_seed(rows * cols)
    x = torch.randn(rows, cols, generator=gen) * 3 + 1
    w, b = torch.randn(cols, generator=gen), torch.randn(cols, generator=gen)
    _, run = compile_graph("x, w, b", LAYER_NORM,
                           f"torch.randn({rows}, {cols}), torch.randn({cols}), torch.randn({cols})")
    (out,) = run(x.numpy(), w.numpy(), b.numpy())
    want = torch.nn.functional.layer_norm(x.double(), (cols,), w.double(), b.double()).numpy()
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("rows, cols", [(2, 3000), (1, 200)])
def test_softmax_max_and_sum_match_torch(compile_graph, rows: int, cols: int) -> None:
    x = torch.randn(rows, cols, generator=torch.Generator().manual_seed(cols)) * 4
    x[:, -1] = 30.0                      # the row maximum sits in the partial last chunk
    _, run = compile_graph("x", "torch.softmax(x, dim=-1), x.amax(dim=-1)", f"torch.randn({rows}, {cols})")
    soft, top = run(x.numpy())
    np.testing.assert_allclose(soft, torch.softmax(x.double(), -1).numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(top, x.amax(-1).numpy())


def test_a_long_row_costs_a_few_instructions_per_op(compile_graph) -> None:
    # 4 rows of 4096 float32: the column form wrote 64 instructions per broadcast and 63 per
    # reduction fold for each row; the row form writes 1 per broadcast and 2 per reduction
    rows, cols = 4, 4096
    compiled, _ = compile_graph("x, w, b", LAYER_NORM, f"torch.randn({rows}, {cols}), torch.randn({cols}), torch.randn({cols})")
    args = [np.random.default_rng(0).standard_normal(s).astype(np.float32) for s in ((rows, cols), (cols,), (cols,))]
    run = run_kernel_source(compiled.source, args)
    assert run.error is None, run.error
    assert run.profile.instructions < 60 * rows, run.profile.instructions
