"""A tile of few long rows can run its broadcasts and row reductions one instruction per row
(repeating over the row's 256 B chunks), not one per chunk (sage/kernels/repeat_rows.py):
level1/10_layer_norm's fp16 [16, 1024, 4096] case, one row of 4096 per tile, made 2.5 M
instruction records in one launch, over the simulator's cap. Each site takes the form its
cost picks (repeat_cost.py; unit tests in tests/kernels/test_repeat_cost.py); here both
forms, forced, are checked against torch on shapes with and without a partial last chunk,
and a program over the record budget is bounded in instructions per row."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from sage.kernels import repeat_cost
from sage.kernels.library import tile
from sage.npu.execute import run_kernel_source

LAYER_NORM = "torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b)"
# a reduction's column form (the kernel file suffixes its constants per kernel: LANES_k0)
COLUMN_FOLD = re.compile(r"for k in range\(LANES\w*, nc, LANES\w*\):")


@pytest.fixture(params=["rows", "cols"])
def form(request, monkeypatch) -> str:
    """Every site in this form where it has it, whatever it costs."""
    want = request.param

    def take(self, forms):
        return want if want in forms else "cols"

    monkeypatch.setattr(repeat_cost.FormChoice, "_take", take)
    return want


@pytest.mark.parametrize("rows, cols", [(2, 1000), (3, 4096), (1, 130), (96, 70)])
def test_layer_norm_matches_torch(compile_graph, form: str, rows: int, cols: int) -> None:
    gen = torch.Generator().manual_seed(rows * cols)
    x = torch.randn(rows, cols, generator=gen) * 3 + 1
    w, b = torch.randn(cols, generator=gen), torch.randn(cols, generator=gen)
    compiled, run = compile_graph("x, w, b", LAYER_NORM,
                                  f"torch.randn({rows}, {cols}), torch.randn({cols}), torch.randn({cols})")
    # every shape here has more than one chunk a row: the column form folds them in a loop
    assert (COLUMN_FOLD.search(compiled.source) is not None) == (form == "cols")
    (out,) = run(x.numpy(), w.numpy(), b.numpy())
    want = torch.nn.functional.layer_norm(x.double(), (cols,), w.double(), b.double()).numpy()
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("rows, cols", [(2, 3000), (1, 200)])
def test_softmax_max_and_sum_match_torch(compile_graph, form: str, rows: int, cols: int) -> None:
    x = torch.randn(rows, cols, generator=torch.Generator().manual_seed(cols)) * 4
    x[:, -1] = 30.0                      # the row maximum sits in the partial last chunk
    _, run = compile_graph("x", "torch.softmax(x, dim=-1), x.amax(dim=-1)", f"torch.randn({rows}, {cols})")
    soft, top = run(x.numpy())
    np.testing.assert_allclose(soft, torch.softmax(x.double(), -1).numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(top, x.amax(-1).numpy())


def test_over_the_record_budget_a_long_row_costs_a_few_instructions_per_op(compile_graph, monkeypatch) -> None:
    # 4 rows of 4096 float32: the column form writes 64 instructions per broadcast and 63 per
    # reduction fold for each row; the row form 1 per broadcast and 2 per reduction. With a
    # budget of 0 records every site takes the form of fewer instructions.
    monkeypatch.setattr(tile, "RECORD_BUDGET", 0)
    rows, cols = 4, 4096
    compiled, _ = compile_graph("x, w, b", LAYER_NORM, f"torch.randn({rows}, {cols}), torch.randn({cols}), torch.randn({cols})")
    args = [np.random.default_rng(0).standard_normal(s).astype(np.float32) for s in ((rows, cols), (cols,), (cols,))]
    run = run_kernel_source(compiled.source, args)
    assert run.error is None, run.error
    assert run.profile.instructions < 60 * rows, run.profile.instructions


def test_under_the_record_budget_the_cheaper_column_folds_stay(compile_graph) -> None:
    # the same 4 x 4096 layer norm: its tile of 4 rows reduces by column folds (63 adds of 4
    # repeats, 63 x 8.28 cycles, against 4 WholeReduceSums of 64 repeats, 4 x 448), so it
    # makes more instructions than the row form's bound above
    rows, cols = 4, 4096
    compiled, _ = compile_graph("x, w, b", LAYER_NORM, f"torch.randn({rows}, {cols}), torch.randn({cols}), torch.randn({cols})")
    assert COLUMN_FOLD.search(compiled.source)
