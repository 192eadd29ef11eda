"""A reduction over rows with few columns and many rows splits the rows across blocks: each
block folds its part into an accumulator row, writes it to a GM workspace, and after SyncAll
one block per column chunk adds the partial rows and finishes (tile_split.py)."""

from __future__ import annotations

import numpy as np
import pytest

from sage.kernels.library.tile_split import row_parts
from tests.agent.compiler.kernel_text import constants


@pytest.mark.parametrize("units, rows, cores", [(1, 512, 48), (8, 517, 48), (3, 1000, 48), (2, 40, 48)])
def test_parts_cover_the_rows_with_no_empty_part(units, rows, cores):
    parts = row_parts(units, rows, cores)
    per = -(-rows // parts)
    assert 2 <= parts and units * parts <= cores
    assert (parts - 1) * per < rows <= parts * per        # the last part starts inside the rows
    assert per >= 8                                       # a part is worth its workspace row


def test_few_units_or_rows_do_not_split():
    assert row_parts(48, 4096, 48) == 1                   # every core already has a column chunk
    assert row_parts(1, 15, 48) == 1                      # 15 rows: no two parts of 8


def test_a_weight_gradient_over_many_rows_splits_and_matches(compile_graph):
    # sum over rows of g * x, times w: a norm's weight-gradient shape (517 rows: uneven parts)
    compiled, run = compile_graph("g, x, w", "(g * x).sum(dim=0) * w",
                                  "torch.randn(517, 1024), torch.randn(517, 1024), torch.randn(1024)")
    src = compiled.source
    assert "SyncAll()" in src and "KERNEL_TYPE_MIX_AIV_1_0" in src
    parts, units = constants(compiled)["P"], constants(compiled)["U"]
    assert parts > 1 and units * parts <= 48
    rng = np.random.default_rng(0)
    g, x = rng.standard_normal((2, 517, 1024)).astype(np.float32)
    w = rng.standard_normal(1024).astype(np.float32)
    (out,) = run(g, x, w)
    want = (g.astype(np.float64) * x).sum(axis=0) * w
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-3)


def test_a_max_over_rows_splits_and_every_part_counts(compile_graph):
    # the largest value of each column sits in a different part of the rows
    compiled, run = compile_graph("x", "x.amax(dim=0)", "torch.randn(640, 512)")
    assert "SyncAll()" in compiled.source
    x = np.zeros((640, 512), dtype=np.float32)
    x[np.arange(512) % 640, np.arange(512)] = 1.0 + np.arange(512)
    (out,) = run(x)
    np.testing.assert_array_equal(out, 1.0 + np.arange(512, dtype=np.float32))


def test_without_the_knob_the_columns_narrow_instead(compile_graph):
    from sage.kernels import Knobs, tile_geometry
    from sage.kernels.library.tile_spec import Access, TileOutput, TileSpec
    from sage.kernels.chain import Inp, Reduce
    from sage.kernels.target import target_for

    spec = TileSpec(name="g", dims=(1024, 1024), row=0, compute="float32", reduce_rows=True,
                    leaves=(Access(arg="x", dtype="float32", numel=1 << 20, strides=(1024, 1)),),
                    outputs=(TileOutput(expr=Reduce("sum", Inp(0)), access=Access(arg="y", dtype="float32",
                                                                                   numel=1024, strides=(0, 1))),))
    target = target_for("ascend910b2")
    split = tile_geometry(spec, Knobs(), target=target)
    narrow = tile_geometry(spec, Knobs(row_split=False), target=target)
    assert split.row_parts > 1 and split.nc * 4 >= 512
    assert narrow.row_parts == 1 and narrow.nc * 4 < 512 and narrow.tiles == -(-1024 // narrow.nc)


def test_a_long_column_sum_is_compensated(compile_graph):
    # 16,384 rows: every part adds tens of tile sums into a growing accumulator row, and
    # where each add rounds the same way plain float32 accumulation drifts by ulps; the
    # Kahan compensation row keeps it within a few (public level2/19 failed on this drift)
    rows, cols = 16384, 128
    compiled, run = compile_graph("x", "x.sum(dim=0)", f"torch.rand({rows}, {cols})")
    src = compiled.source
    assert "self.cmpb0" in src and "SyncAll()" in src
    parts = constants(compiled)["P"]
    # each column one value a little over 1: every add of a tile sum rounds the same way
    v = (1 + np.arange(cols) * np.float32(2 ** -17) + np.float32(2 ** -21)).astype(np.float32)
    x = np.tile(v, (rows, 1))
    (out,) = run(x)
    truth = x.astype(np.float64).sum(axis=0)
    ulps = np.abs(out.astype(np.float64) - truth) / np.spacing(truth.astype(np.float32)).astype(np.float64)
    # the same parts and 8-row tiles added one after another without compensation
    per, plain = -(-rows // parts), np.zeros(cols, np.float32)
    for p0 in range(0, rows, per):
        acc = np.zeros(cols, np.float32)
        for r in range(p0, min(rows, p0 + per), 8):
            acc = acc + x[r:min(r + 8, p0 + per)].sum(axis=0, dtype=np.float32)
        plain = plain + acc
    plain_ulps = np.abs(plain.astype(np.float64) - truth) / np.spacing(truth.astype(np.float32)).astype(np.float64)
    assert plain_ulps.max() >= 8                    # the drift the compensation removes is real
    assert ulps.max() <= 2, ulps.max()
