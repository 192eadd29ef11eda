"""Sorting rows longer than one UB pass: sorted runs and MrgSort passes through GM
(sage/kernels/library/sort_merge.py), checked against torch.sort(stable=True) on rows full
of ties and NaN, so that both values and indices must come out in torch's order."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch


def _ties(rows: int, n: int, seed: int) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    x = torch.from_numpy(rng.integers(-40, 40, (rows, n)).astype(np.float32))   # each value ~n/80 times
    x[0, 3] = x[1, n - 2] = float("nan")
    x[1, 5] = float("inf")
    return x


@pytest.mark.parametrize("dtype,n,descending", [
    ("float32", 10000, True),        # 3 runs: one merge pass of three queues
    ("bfloat16", 20000, False),      # 5 runs: two passes (four queues, then two), keys widened to float32
])
def test_a_stable_sort_of_rows_longer_than_ub_matches_torch(compile_graph, dtype, n, descending):
    compiled, run = compile_graph("x", f"torch.sort(x, dim=-1, descending={descending}, stable=True)",
                                  f"torch.randn(2, {n}).to(torch.{dtype})")
    assert "MrgSort(" in compiled.source
    x = _ties(2, n, seed=n).to(getattr(torch, dtype))
    arg = x.float().numpy().astype(ml_dtypes.bfloat16) if dtype == "bfloat16" else x.numpy()
    values, indices = run(arg)
    want_v, want_i = torch.sort(x, dim=-1, descending=descending, stable=True)
    got_v = np.asarray(values, np.float32).reshape(2, n)
    np.testing.assert_array_equal(got_v, want_v.float().numpy())      # NaN where torch has NaN
    assert indices.dtype == np.int64
    np.testing.assert_array_equal(indices.reshape(2, n), want_i.numpy())


def test_values_of_a_long_half_row_sort_match_torch(compile_graph):
    # level1/8_sort's long case in small: float16 rows of 16384 (four runs), values only
    _, run = compile_graph("x", "torch.sort(x, dim=-1)[0]", "torch.randn(3, 16384).half()")
    x = torch.randn(3, 16384, generator=torch.Generator().manual_seed(8)).half()
    (values,) = run(x.numpy())
    np.testing.assert_array_equal(values.reshape(3, 16384), torch.sort(x, dim=-1)[0].numpy())


def test_nan_leads_a_descending_one_pass_sort_as_in_torch(compile_graph):
    _, run = compile_graph("x", "torch.sort(x, dim=-1, descending=True, stable=True)", "torch.randn(2, 7)")
    x = torch.tensor([[1.0, float("nan"), 3.0, float("inf"), 3.0, float("nan"), -1.0],
                      [0.0, 2.0, float("-inf"), 2.0, float("nan"), 5.0, 0.0]])
    values, indices = run(x.numpy())
    want_v, want_i = torch.sort(x, dim=-1, descending=True, stable=True)
    np.testing.assert_array_equal(values.reshape(2, 7), want_v.numpy())
    np.testing.assert_array_equal(indices.reshape(2, 7), want_i.numpy())
