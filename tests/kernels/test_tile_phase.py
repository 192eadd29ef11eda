"""A tile program whose last column tile is narrower (C % NC) deals each block whole rows of
column tiles once a block spans PHASE_ROWS of them (tile.py): every block then meets the
narrow tile at the same step, and the simulator runs the launch as lane groups. Dealt in
runs that start mid-row, `nc` differs between blocks at a different step each time, and the
launch ran block by block (public level1/29's 5120 x 27648 quantise: 37 s against 8 s)."""

from __future__ import annotations

import numpy as np

from sage.kernels import Knobs
from sage.kernels.chain import Inp, Op
from sage.kernels.library import tile
from sage.kernels.library.tile import tile_source
from sage.kernels.library.tile_spec import Access, TileOutput, TileSpec
from sage.kernels.target import target_for
from sage.npu.execute import run_functional
from sage.npu.hardware import load_preset

TARGET = target_for("ascend910b2")
R, C = 1000, 428     # 64-column tiles: N_CT = 7, the last 44 wide; T = 7000 tiles, 146 a block unaligned


def _source() -> str:
    spec = TileSpec(name="c", dims=(R, C), row=None, compute="float32",
                    leaves=(Access(arg="x", dtype="float32", numel=R * C, strides=(C, 1)),),
                    outputs=(TileOutput(expr=Op("neg", (Inp(0),)),
                                        access=Access(arg="y", dtype="float32", numel=R * C, strides=(C, 1))),))
    kernel = tile_source(spec, Knobs(tile_len=64), target=TARGET)
    return ("from sage.npu.ascendc import *\nimport math\n" + kernel +
            f"\ndef forward(x):\n    y = empty(({R}, {C}), float32)\n    c_launch(x, y)\n    return y\n")


def _run():
    x = np.random.default_rng(0).standard_normal((R, C)).astype(np.float32)
    run = run_functional(_source(), [x], spec=load_preset("ascend910b2"))
    assert run.error is None, run.error
    np.testing.assert_array_equal(run.outputs[0], -x)
    return {b.block for b in run.trace.launches[0].blocks}


def test_blocks_that_start_on_a_tile_row_run_as_lane_groups(partitions):
    blocks = _run()
    assert len(blocks) == -(-7 * R // 147)         # 147 tiles a block (146 rounded up to whole rows)
    assert partitions[-1] == [1, 47]               # one group, and the short last block


def test_blocks_that_start_mid_row_run_block_by_block(partitions, monkeypatch):
    monkeypatch.setattr(tile, "PHASE_ROWS", 10 ** 9)      # never aligned: the launch as it was
    blocks = _run()
    assert len(blocks) == -(-7 * R // 146)
    assert partitions[-1] is None                  # seven phases: the splits ran out
