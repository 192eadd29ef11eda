"""A tile group whose accesses merge into one run in memory has one row per tile (no row axis):
its values along the columns are the whole tile, computed and stored with one instruction per
operation, never copied into a tile 256 B at a time (what made a 256M-element cast of
level2/17_embedding_with_initial_layernorm_backward run past the simulator's wall-clock limit)."""

from __future__ import annotations

import numpy as np


def _compute_lines(source: str) -> list[str]:
    return [ln for ln in source.splitlines() if "LANES" in ln and ln.strip().startswith("for k in range(0, nc")]


def test_a_contiguous_chain_is_computed_whole_tile_per_instruction(compile_graph):
    # 4 x 3000 merges into one axis of 12000: tiles of the knob's length and a partial last one
    compiled, run = compile_graph("x, y", "(torch.relu(x) * y - 1.0).to(torch.float16)",
                                  "torch.randn(4, 3000), torch.randn(4, 3000)")
    assert not _compute_lines(compiled.source)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3000)).astype(np.float32)
    y = rng.standard_normal((4, 3000)).astype(np.float32)
    (out,) = run(x, y)
    assert out.dtype == np.float16
    np.testing.assert_allclose(out, (np.maximum(x, 0) * y - 1).astype(np.float16), rtol=1e-3, atol=1e-3)


def test_a_whole_tensor_sum_of_a_product_in_one_row_tiles(compile_graph):
    compiled, run = compile_graph("x, y", "(x * y).sum()", "torch.randn(1000), torch.randn(1000)")
    x = np.arange(1000, dtype=np.float32) / 100
    y = np.where(np.arange(1000) % 2 == 0, 1.0, -1.0).astype(np.float32)
    (out,) = run(x, y)
    # pairs (2k, 2k+1) give (2k - (2k+1)) / 100 = -0.01 each, 500 pairs
    np.testing.assert_allclose(out, np.float32(-5.0), rtol=1e-5)
