"""A constant pad of the last axis with short borders is one program: each output row is
x's row copied in with DataCopyPad's own left/right padding of the value, instead of a fill
launch and a copy launch over it."""

from __future__ import annotations

import numpy as np

from tests.agent.compiler.kernel_text import launches
import pytest




@pytest.mark.parametrize("pad, value, dtype", [((1, 2), 0.0, "torch.float32"), ((3, 5), -1.5, "torch.float16")])
def test_a_short_pad_of_the_last_axis_is_one_launch(compile_graph, pad, value, dtype):
    compiled, run = compile_graph("x", f"torch.nn.functional.pad(x, {pad}, value={value})",
                                  f"torch.randn(3, 7, 40).to({dtype})")
    assert launches(compiled) == 1 and "DataCopyPadExtParams(True" in compiled.source
    np_dtype = np.float32 if "32" in dtype else np.float16
    x = (np.arange(3 * 7 * 40) % 11).astype(np_dtype).reshape(3, 7, 40)
    (out,) = run(x)
    lo, hi = pad
    assert out.shape == (3, 7, 40 + lo + hi)
    np.testing.assert_array_equal(out[..., :lo], value)
    np.testing.assert_array_equal(out[..., lo + 40:], value)
    np.testing.assert_array_equal(out[..., lo:lo + 40], x)


def test_borders_wider_than_a_block_keep_fill_and_copy(compile_graph):
    # 6 + 6 float32 columns are 48 B a row: more than DataCopyPad pads
    compiled, run = compile_graph("x", "torch.nn.functional.pad(x, (6, 6), value=2.0)", "torch.randn(4, 16)")
    assert "DataCopyPadExtParams(True" not in compiled.source
    x = np.ones((4, 16), dtype=np.float32)
    (out,) = run(x)
    np.testing.assert_array_equal(out[:, :6], 2.0)
    np.testing.assert_array_equal(out[:, 6:22], 1.0)
