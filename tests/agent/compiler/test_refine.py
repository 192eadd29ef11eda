"""A pointwise node over another grouping of a reducing group's index space (the per-channel
affine on [N, C, H, W] after a normalisation over [N, G, C/G * H * W]) joins the group: the
group is re-expressed over the common refinement of the two shapes."""

from __future__ import annotations

import numpy as np

from sage.agent.compiler.refine import groups, refinement, split
from tests.agent.compiler.kernel_text import launches


def test_common_refinement_of_two_groupings():
    assert refinement((8, 32, 10240), (8, 320, 32, 32)) == (8, 32, 10, 32, 32)
    assert refinement((6, 4), (4, 6)) is None          # 4 does not divide 6
    assert refinement((2, 3), (3, 2, 1)) is None
    assert groups((8, 320, 32, 32), (8, 32, 10, 32, 32)) == [[0], [1, 2], [3], [4]]
    assert groups((8, 1, 32), (8, 32)) == [[0], [], [1]]
    # a channel axis of 320 at stride 1 over (32 groups, 10 channels): 10 and 1
    assert split((0, 1, 0, 0), (8, 320, 32, 32), (8, 32, 10, 32, 32), [[0], [1, 2], [3], [4]]) == (0, 10, 1, 0, 0)


def test_affine_after_a_reshape_back_joins_the_normalisation(compile_graph):
    body = ("(lambda xf: (((xf - xf.mean(-1, keepdim=True)) / (xf.var(-1, unbiased=False, keepdim=True) + 1e-5).sqrt())"
            ".reshape(2, 4, 16) * w.reshape(1, 4, 1) + 1.0))(x.reshape(2, 2, 32))")
    compiled, run = compile_graph("x, w", body, "torch.randn(2, 4, 16), torch.randn(4)")
    assert launches(compiled) == 1
    x = (np.arange(2 * 4 * 16, dtype=np.float32) % 32).reshape(2, 4, 16)
    w = np.array([1.0, -2.0, 0.5, 3.0], dtype=np.float32)
    (out,) = run(x, w)
    # each (n, group) row is 0..31: mean 15.5, variance (32^2 - 1) / 12
    norm = (x.reshape(2, 2, 32) - 15.5) / np.sqrt((32 * 32 - 1) / 12 + 1e-5)
    np.testing.assert_allclose(out, norm.reshape(2, 4, 16) * w[None, :, None] + 1.0, rtol=1e-5, atol=1e-5)



# sqrt(|x| * 2 + 1): more work than a reader recomputes (fusion.INLINE_OPS), so it is a node
# of its own and its values go to the reduction in UB only when the two share a launch
HEAVY = "(x.abs() * 2.0 + 1.0).sqrt()"


def test_reduction_over_a_finer_view_joins_the_pointwise_group(compile_graph):
    # a long row reduced in chunks (long_rows.py): the pointwise result over [4, 256], its
    # max over each 64-element chunk ([4, 4, 64])
    compiled, run = compile_graph("x", f"{HEAVY}.reshape(4, 4, 64).amax(-1)", "torch.randn(4, 256)")
    assert launches(compiled) == 1
    x = ((np.arange(4 * 256) * 37) % 101 - 50).astype(np.float32).reshape(4, 256)
    (out,) = run(x)
    chunk_max = np.abs(x).reshape(4, 4, 64).max(-1)        # the function grows with |x|
    np.testing.assert_allclose(out, np.sqrt(chunk_max * 2 + 1), rtol=1e-6)


def test_reduction_over_a_view_that_mixes_the_axes_stays_apart(compile_graph):
    # the sum over the transposed [4, 8] view of an [8, 4] result is no finer view of its
    # space: two launches, the values through GM
    compiled, run = compile_graph("x", f"{HEAVY}.t().sum(-1)", "torch.randn(8, 4)")
    assert launches(compiled) == 2
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    (out,) = run(x)
    np.testing.assert_allclose(out, np.sqrt(x * 2 + 1).sum(0), rtol=1e-5)
