"""`x.max(dim)[0]` whose indices nobody reads compiles as amax (rewrite.values_only_extrema):
the values against torch, NaN included; indices that are read still need the argreduce
lowering, and the compiler says so."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sage.agent.compiler.build import Unsupported


@pytest.mark.parametrize("body, x", [
    ("x.max(-1)[0]", torch.randn(16, 33)),
    ("x.min(1, keepdim=True)[0] * 2", torch.randn(4, 40, 3)),
    ("x.max(0).values", torch.randn(7, 5).half()),
])
def test_the_values_of_a_dim_extremum_match_torch(compile_graph, body, x):
    x[0, 0] = float("nan")                        # both spellings propagate NaN
    compiled, run = compile_graph("x", body, f"torch.zeros({list(x.shape)}, dtype=torch.{str(x.dtype)[6:]})")
    (got,) = run(x.numpy())
    want = eval(body, {"x": x, "torch": torch}).numpy()
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert "argreduce" not in compiled.source


def test_indices_that_are_read_still_need_the_argreduce_lowering(compile_graph):
    with pytest.raises(Unsupported, match="argreduce lowering is not written"):
        compile_graph("x", "x.max(-1)[1]", "torch.randn(16, 33)")
