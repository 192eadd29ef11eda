"""Schedules of data movement: transposes in near-square tiles, and independent copies
(the pieces of a cat) in one launch. Values are checked on small inputs in the sandbox."""

from __future__ import annotations

import numpy as np

from sage.kernels.library.tile_parts import square_side

F32 = np.float32


def test_square_side_prefers_sqrt_and_keeps_the_last_chunk_pitch():
    # 4096 elements: sqrt is 64, and 2048 columns split into 32 chunks of 64 exactly
    assert square_side(4096, 8, 2048) == 64
    # 2117 columns of bfloat16 (16-element alignment): 64 leaves 5 (pitch 16, not 64);
    # 112 leaves 2117 - 18 * 112 = 101, which rounds up to 112: the nearest fit to 64
    assert square_side(4096, 16, 2117) == 112
    # 37 columns: only 8 leaves a last chunk (5) that rounds up to the chunk's own pitch
    assert square_side(4096, 8, 37) == 8


def test_a_transpose_with_partial_tiles_both_ways(compile_graph):
    # the output is 203 x 37: 37 columns in chunks of 8 (the last holds 5), 203 rows
    compiled, run = compile_graph("x", "x.t().contiguous()", "torch.randn(37, 203)")
    x = np.arange(37 * 203, dtype=F32).reshape(37, 203)
    (out,) = run(x)
    np.testing.assert_array_equal(out, x.T)
    assert "NC_v0g0 = 8\n" in compiled.source


def test_a_large_transpose_moves_square_tiles(compile_graph):
    # 512 x 256 float32 transposed: 64 x 64 tiles, so each tile's input copy is 64 bursts
    # of 256 B (a 16 x 256 tile would move 256 bursts of 64 B)
    compiled, run = compile_graph("x", "x.t().contiguous()", "torch.randn(512, 256)")
    assert "NC_v0g0 = 64\n" in compiled.source and "NR_v0g0 = 64\n" in compiled.source
    x = np.random.default_rng(0).standard_normal((512, 256)).astype(F32)
    (out,) = run(x)
    np.testing.assert_array_equal(out, x.T)
