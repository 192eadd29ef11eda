"""An operand that stays the same from one tile to the next (rotary's cos/sin broadcast over
batch and heads, a bias row) is copied in once per change of its base, into its own buffer,
instead of once per tile; the loop order puts the index it does not depend on innermost."""

from __future__ import annotations

import numpy as np

from tests.agent.compiler.kernel_text import constants


def test_a_table_broadcast_over_batch_and_heads_is_copied_per_change(compile_graph):
    # x [B, S, N, D] times c [1, S, 1, D]: c moves only with S
    compiled, run = compile_graph("x, c", "x * c + 1.0", "torch.randn(2, 96, 40, 32), torch.randn(1, 96, 1, 32)")
    src = compiled.source
    assert "self.last" in src and "SetFlag(HardEvent.MTE2_V" in src
    assert constants(compiled)["T"] > 48           # blocks run several tiles: the copy is skipped between them
    x = np.full((2, 96, 40, 32), 2.0, dtype=np.float32)
    x[1] = 3.0
    c = np.arange(96 * 32, dtype=np.float32).reshape(1, 96, 1, 32)
    (out,) = run(x, c)
    np.testing.assert_array_equal(out[0, 5, 3], 2.0 * c[0, 5, 0] + 1.0)
    np.testing.assert_array_equal(out[1, 95, 39], 3.0 * c[0, 95, 0] + 1.0)
    np.testing.assert_array_equal(out, x * c + 1.0)


def test_a_bias_row_over_many_row_tiles(compile_graph):
    compiled, run = compile_graph("x, b", "(x.float() + b).half()", "torch.randn(4096, 64).half(), torch.randn(64)")
    assert "self.last" in compiled.source
    x = (np.arange(4096 * 64) % 7).astype(np.float16).reshape(4096, 64)
    b = np.linspace(-1.0, 1.0, 64).astype(np.float32)
    (out,) = run(x, b)
    np.testing.assert_allclose(out.astype(np.float32), (x.astype(np.float32) + b).astype(np.float16).astype(np.float32))
