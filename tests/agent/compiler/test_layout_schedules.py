"""Schedules of data movement: transposes in near-square tiles, and independent copies
(the pieces of a cat) in one launch. Values are checked on small inputs in the sandbox."""

from __future__ import annotations

import numpy as np

from sage.kernels.library.tile_layout import square_side
from tests.agent.compiler.kernel_text import constants, labels, launches

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
    assert constants(compiled)["NC"] == 8


def test_a_large_transpose_moves_square_tiles(compile_graph):
    # 512 x 256 float32 transposed: 64 x 64 tiles, so each tile's input copy is 64 bursts
    # of 256 B (a 16 x 256 tile would move 256 bursts of 64 B)
    compiled, run = compile_graph("x", "x.t().contiguous()", "torch.randn(512, 256)")
    assert constants(compiled)["NC"] == 64 and constants(compiled)["NR"] == 64
    x = np.random.default_rng(0).standard_normal((512, 256)).astype(F32)
    (out,) = run(x)
    np.testing.assert_array_equal(out, x.T)


def test_split_blocks_by_weight():
    from sage.agent.compiler.merge import split_blocks

    # 48 cores over weights 512 : 301 : 211 (the pieces of a cat): 24.0, 14.1, 9.9 -> 24, 14, 10
    assert split_blocks([512, 301, 211], [1000, 1000, 1000], 48) == [24, 14, 10]
    # a program with 2 tiles takes 2 blocks; the rest go to the other
    assert split_blocks([1, 1], [2, 100], 48) == [2, 46]
    # at least one block each, even for a tiny weight
    assert split_blocks([1000, 1], [100, 100], 4) == [3, 1]


def test_the_pieces_of_a_cat_are_one_launch(compile_graph):
    compiled, run = compile_graph("a, b, c", "torch.cat([a, b, c], dim=1)",
                                  "torch.randn(4, 8), torch.randn(4, 3), torch.randn(4, 5)")
    assert len(compiled.cases[0].plan.groups) == 3
    assert launches(compiled) == 1
    a = np.arange(32, dtype=F32).reshape(4, 8)
    b = -np.arange(12, dtype=F32).reshape(4, 3)
    c = 100 + np.arange(20, dtype=F32).reshape(4, 5)
    (out,) = run(a, b, c)
    np.testing.assert_array_equal(out, np.concatenate([a, b, c], axis=1))


def test_a_program_reading_what_another_writes_is_not_merged(compile_graph):
    # y = x.t() + 1 is written, then read transposed back: the second group reads the first's output
    compiled, run = compile_graph("x", "(x.t().contiguous() + 1).t().contiguous() * 2", "torch.randn(4, 8)")
    groups = len(compiled.cases[0].plan.groups)
    assert groups >= 2 and "one launch of" not in compiled.source
    x = np.arange(32, dtype=F32).reshape(4, 8)
    (out,) = run(x)
    np.testing.assert_array_equal(out, (x + 1) * 2)


def test_a_per_channel_weight_is_a_scalar_per_tile_not_a_strided_column(compile_graph):
    # x[:, :, :, 1:7] * w[:, 1] over dims [2, 16, 6, 6]: with the channels as the tile's rows the
    # weight (stride 3 along them) is one 4-byte burst per row; with the height as the rows it
    # is one value per tile. The height (6) is chosen over the channels (16).
    compiled, run = compile_graph("x, w", "x[:, :, :, 1:7] * w[:, 1].view(1, 16, 1, 1)",
                                  "torch.randn(2, 16, 6, 8), torch.randn(16, 3)")
    # the tile program runs over dims [2, 16, 6, 6] with the height as its rows
    assert "(row axis 2)" in compiled.source and constants(compiled)["DR"] == 6
    x = np.arange(2 * 16 * 6 * 8, dtype=F32).reshape(2, 16, 6, 8)
    w = np.arange(48, dtype=F32).reshape(16, 3)
    (out,) = run(x, w)
    np.testing.assert_array_equal(out, x[:, :, :, 1:7] * w[:, 1].reshape(1, 16, 1, 1))


def test_a_reader_of_a_cat_computes_its_pieces_in_one_launch(compile_graph):
    # rotate-half: r = cat(-x[:, 4:], x[:, :4]) is written by two copies and read once; the
    # reader is cut into the two column halves, each reading x directly, and both halves run
    # as one launch (nothing stores r)
    compiled, run = compile_graph("x, c, s", "x * c + torch.cat((-x[:, 4:], x[:, :4]), dim=-1) * s",
                                  "torch.randn(16, 8), torch.randn(16, 8), torch.randn(16, 8)")
    assert launches(compiled) == 1 and labels(compiled)[0].startswith("one launch of")
    x = np.arange(128, dtype=F32).reshape(16, 8)
    c = np.full((16, 8), 2, F32)
    s = np.full((16, 8), 3, F32)
    (out,) = run(x, c, s)
    rot = np.concatenate([-x[:, 4:], x[:, :4]], axis=1)
    np.testing.assert_array_equal(out, x * 2 + rot * 3)


def test_a_padding_read_through_thin_border_boxes_stays_in_gm(compile_graph):
    # pad by one on each side of the last axis, then a 3-tap sum over 32 columns: the border
    # boxes would be one column each (1/32 of the reader's space, under 1/16), so the padded
    # temporary is kept and the result is the same
    compiled, run = compile_graph(
        "x", "(lambda p: p[:, :-2] + p[:, 1:-1] + p[:, 2:])(torch.nn.functional.pad(x, (1, 1)))",
        "torch.randn(4, 32)")
    assert "one launch of" not in compiled.source
    x = np.arange(128, dtype=F32).reshape(4, 32)
    p = np.pad(x, ((0, 0), (1, 1)))
    (out,) = run(x)
    np.testing.assert_array_equal(out, p[:, :-2] + p[:, 1:-1] + p[:, 2:])


def test_a_padding_read_through_wide_enough_boxes_reads_the_fill_and_the_input(compile_graph):
    # 14 output columns: the border boxes are one column each (1/14 of the space): cut into
    # three boxes; a tap in the border reads the fill (0.0), the rest read x where the copy
    # over the fill put it (the latest writer wins)
    compiled, run = compile_graph(
        "x", "(lambda p: p[:, :-2] + p[:, 1:-1] + p[:, 2:])(torch.nn.functional.pad(x, (1, 1)))",
        "torch.randn(4, 14)")
    assert launches(compiled) == 1 and labels(compiled)[0].startswith("one launch of")
    x = np.arange(56, dtype=F32).reshape(4, 14)
    p = np.pad(x, ((0, 0), (1, 1)))
    (out,) = run(x)
    np.testing.assert_array_equal(out, p[:, :-2] + p[:, 1:-1] + p[:, 2:])


def test_strided_window_taps_share_one_span_copy(compile_graph):
    # a 2 x 2 max pool with stride 2 over [2, 3, 8, 12]: x[.., 2i, 2j] and x[.., 2i, 2j + 1] sit in
    # the same span of each input row, and x[.., 2i + 1, 2j] 12 elements further, inside the row
    # stride of 24: one span of 24 elements (both input rows, 23 + 1 of the four taps' own 4 x 11)
    # brings every tap in, so one copy per tile, not 4; the other taps gather from it shifted by
    # 1, 12 and 13 elements
    compiled, run = compile_graph("x", "torch.nn.functional.max_pool2d(x, 2, 2)", "torch.randn(2, 3, 8, 12)")
    assert compiled.source.count("DataCopyPad(x, self.g_") == 1
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 12)).astype(F32)
    (out,) = run(x)
    np.testing.assert_array_equal(out, x.reshape(2, 3, 4, 2, 6, 2).max(axis=(3, 5)))


def test_a_far_tap_starts_its_own_span_copy(compile_graph):
    # a 2 x 2 x 2 pool over [1, 4, 8, 16]: the taps of the next depth plane sit 128 elements on,
    # more than the four taps' own spans would read (4 x 15), so they copy their own span
    compiled, run = compile_graph("x", "torch.nn.functional.avg_pool3d(x, 2, 2)", "torch.randn(1, 4, 8, 16)")
    assert compiled.source.count("DataCopyPad(x, self.g_") == 2
    x = np.random.default_rng(2).standard_normal((1, 4, 8, 16)).astype(F32)
    (out,) = run(x)
    np.testing.assert_allclose(out, x.reshape(1, 2, 2, 4, 2, 8, 2).mean(axis=(2, 4, 6)), rtol=1e-6, atol=1e-6)


def test_a_shared_span_with_padding_taps(compile_graph):
    # kernel 3, stride 2, padding 1 (avg, padding counted): taps at column offsets -1, 0, +1 of 2j;
    # the three share spans where they can and the result matches the window sums
    compiled, run = compile_graph("x", "torch.nn.functional.avg_pool2d(x, 3, 2, 1)", "torch.randn(1, 2, 9, 13)")
    x = np.random.default_rng(1).standard_normal((1, 2, 9, 13)).astype(F32)
    (out,) = run(x)
    p = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.zeros((1, 2, 5, 7), F32)
    for di in range(3):
        for dj in range(3):
            want += p[:, :, di:di + 9:2, dj:dj + 13:2]
    np.testing.assert_allclose(out, want / 9, rtol=1e-5, atol=1e-6)
