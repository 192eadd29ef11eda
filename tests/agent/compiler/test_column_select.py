"""A cat along the last axis of slices of a tensor the reader also reads whole (rotate-half,
as rotary embeddings use it) is one program over whole rows: the rotated halves are copied
in UB out of the tile of x (`colsel`), not loaded again in half rows by one program per half."""

from __future__ import annotations

import numpy as np

from tests.agent.compiler.kernel_text import launches




def test_rotate_half_is_one_program_reading_x_once(compile_graph):
    body = "(x * c + torch.cat((-x[..., 16:], x[..., :16]), dim=-1) * s)"
    compiled, run = compile_graph("x, c, s", body, "torch.randn(3, 5, 32), torch.randn(5, 32), torch.randn(5, 32)")
    assert "colsel" in compiled.source and launches(compiled) == 1
    x = np.arange(3 * 5 * 32, dtype=np.float32).reshape(3, 5, 32)
    c = np.full((5, 32), 2.0, dtype=np.float32)
    s = np.full((5, 32), 10.0, dtype=np.float32)
    (out,) = run(x, c, s)
    # row 0 is 0..31: column 0 is 2 * 0 + 10 * -16, column 16 is 2 * 16 + 10 * 0
    assert out[0, 0, 0] == -160 and out[0, 0, 16] == 32 and out[0, 0, 31] == 2 * 31 + 10 * 15
    rot = np.concatenate((-x[..., 16:], x[..., :16]), axis=-1)
    np.testing.assert_allclose(out, x * 2 + rot * 10)


def test_rotate_half_of_float16_computed_in_float32(compile_graph):
    # in level2/01_rotary_mul's order: x.float(), its rotated halves, then x * c + rotated * s
    body = ("(lambda xf: (lambda r: (xf * c + r * s).to(torch.float16))"
            "(torch.cat((-xf[..., 16:], xf[..., :16]), dim=-1)))(x.float())")
    compiled, run = compile_graph("x, c, s", body,
                                  "torch.randn(2, 4, 32).half(), torch.randn(4, 32), torch.randn(4, 32)")
    assert "colsel" in compiled.source
    x = (np.arange(2 * 4 * 32) % 17).astype(np.float16).reshape(2, 4, 32)
    c = np.ones((4, 32), dtype=np.float32)
    s = np.full((4, 32), 0.5, dtype=np.float32)
    (out,) = run(x, c, s)
    xf = x.astype(np.float32)
    rot = np.concatenate((-xf[..., 16:], xf[..., :16]), axis=-1)
    assert out.dtype == np.float16
    np.testing.assert_allclose(out.astype(np.float32), xf + 0.5 * rot)


def test_cat_of_two_tensors_has_no_host_and_stays_in_pieces(compile_graph):
    # y's slice has no tile of y held whole to be copied from: one program per piece, as before
    compiled, run = compile_graph("x, y", "torch.cat((x, y * 2), dim=-1) + 1",
                                  "torch.randn(4, 16), torch.randn(4, 16)")
    assert "colsel" not in compiled.source
    x = np.ones((4, 16), dtype=np.float32)
    y = np.full((4, 16), 3.0, dtype=np.float32)
    (out,) = run(x, y)
    np.testing.assert_allclose(out[:, :16], 2.0)
    np.testing.assert_allclose(out[:, 16:], 7.0)


def test_rotate_half_of_a_deinterleaved_tensor_is_one_launch(compile_graph):
    # q = cat(x[0::2], x[1::2]); y = q * c + cat(-q[16:], q[:16]) * s: the inner cat's pieces
    # are the outer cat's writers, split in turn (as level2/13_interleave_rope)
    body = ("(lambda q: (lambda r: q * c + r * s)(torch.cat((-q[..., 16:], q[..., :16]), dim=-1)))"
            "(torch.cat((x[..., 0::2], x[..., 1::2]), dim=-1))")
    compiled, run = compile_graph("x, c, s", body, "torch.randn(4, 32), torch.randn(4, 32), torch.randn(4, 32)")
    assert launches(compiled) == 1
    x = np.arange(4 * 32, dtype=np.float32).reshape(4, 32)
    c = np.full((4, 32), 2.0, dtype=np.float32)
    s = np.full((4, 32), 10.0, dtype=np.float32)
    (out,) = run(x, c, s)
    # row 0: q = [0, 2, .., 30, 1, 3, .., 31]; rotated = [-1, -3, .., -31, 0, 2, .., 30]
    assert out[0, 0] == 2 * 0 + 10 * -1 and out[0, 16] == 2 * 1 + 10 * 0 and out[0, 31] == 2 * 31 + 10 * 30
    q = np.concatenate((x[:, 0::2], x[:, 1::2]), axis=1)
    np.testing.assert_allclose(out, q * 2 + np.concatenate((-q[:, 16:], q[:, :16]), axis=1) * 10)
