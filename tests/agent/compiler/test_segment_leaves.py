"""Group norm's per-channel weight and bias, read inside the per-group reduction's row of
channels x positions, are per-segment values of that row: the normalisation and the affine
are one launch, the weight applied one segment (one channel's positions) at a time."""

from __future__ import annotations

import numpy as np

from tests.agent.compiler.kernel_text import launches




def test_group_norm_with_affine_is_one_launch(compile_graph):
    compiled, run = compile_graph("x, w, b", "torch.nn.functional.group_norm(x, 2, w, b, 1e-5)",
                                  "torch.randn(3, 4, 2, 8), torch.randn(4), torch.randn(4)")
    assert launches(compiled) == 1
    # every (n, group) row holds channels 2g, 2g+1 of 16 positions: values 0..31 of that row
    x = np.arange(3 * 4 * 16, dtype=np.float32).reshape(3, 4, 2, 8) % 32
    w = np.array([1.0, 2.0, -1.0, 0.5], dtype=np.float32)
    b = np.array([0.0, 10.0, 1.0, -2.0], dtype=np.float32)
    (out,) = run(x, w, b)
    # a row of 0..31: mean 15.5, variance (32^2 - 1) / 12
    rstd = 1.0 / np.sqrt((32 * 32 - 1) / 12 + 1e-5)
    want_first = (0.0 - 15.5) * rstd * w[0] + b[0]
    want_ch1 = (16.0 - 15.5) * rstd * w[1] + b[1]
    np.testing.assert_allclose(out[0, 0, 0, 0], want_first, rtol=1e-5)
    np.testing.assert_allclose(out[0, 1, 0, 0], want_ch1, rtol=1e-5)
    norm = (x.reshape(3, 2, 32) - 15.5) * rstd
    want = norm.reshape(3, 4, 2, 8) * w[None, :, None, None] + b[None, :, None, None]
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_segments_not_on_32_byte_blocks_keep_the_affine_apart(compile_graph):
    # 3 x 3 positions per channel: 36 bytes a segment, not a whole block; two launches, as before
    compiled, run = compile_graph("x, w, b", "torch.nn.functional.group_norm(x, 2, w, b, 1e-5)",
                                  "torch.randn(2, 4, 3, 3), torch.randn(4), torch.randn(4)")
    assert launches(compiled) == 2
    x = np.arange(2 * 4 * 9, dtype=np.float32).reshape(2, 4, 3, 3) % 18
    w = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
    b = np.zeros(4, dtype=np.float32)
    (out,) = run(x, w, b)
    rstd = 1.0 / np.sqrt((18 * 18 - 1) / 12 + 1e-5)
    want = ((x.reshape(2, 2, 18) - 8.5) * rstd).reshape(2, 4, 3, 3) * w[None, :, None, None]
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
