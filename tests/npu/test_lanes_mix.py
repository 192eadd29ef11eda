"""MIX launches in lane groups (sage/npu/sim/streams.py, core.py): a block's AIC and its two
AIVs are lane i of three groups with the same blocks, and what a cross-core flag within a
block tells is relative (lane i learns of lane i), so a flag orders a block's own cores and
no other block's. Every kernel runs both ways and must give the same outputs and records,
or the same error; the partition is observed too, so a silent loss of lanes fails."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sage.npu.execute import run_functional
from sage.npu.hardware import load_preset
from tests.npu.conftest import line_of

SPEC = load_preset("ascend910b2")
EXAMPLE = (Path(__file__).resolve().parents[2] / "examples" / "kernels" / "matmul_bias_gelu_mix.py").read_text()


def inputs(m: int = 256, k: int = 128, n: int = 128) -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    return [(rng.standard_normal((m, k)) * 0.5).astype(np.float16), (rng.standard_normal((k, n)) * 0.5).astype(np.float16),
            rng.standard_normal(n).astype(np.float16)]


def both(source: str):
    alone = run_functional(source, inputs(), spec=SPEC, filename="mix.py", lockstep=False)
    lanes = run_functional(source, inputs(), spec=SPEC, filename="mix.py")
    assert (alone.error is None) == (lanes.error is None), (alone.error, lanes.error)
    if alone.error is not None:
        # (a race is reported at whichever of its two accesses comes second, which the blocks'
        # random order decides, block by block too: the tests name both lines)
        assert alone.error.type == lanes.error.type
        return lanes
    for x, y in zip(alone.outputs, lanes.outputs, strict=True):
        assert np.array_equal(x, y, equal_nan=True)
    for p, q in zip(alone.trace.launches, lanes.trace.launches, strict=True):
        assert [(t.block, t.core_type, t.sub, t.records) for t in p.blocks] == \
               [(t.block, t.core_type, t.sub, t.records) for t in q.blocks]
    return lanes


def test_a_mix_launch_runs_as_three_lane_groups(partitions):
    run = both(EXAMPLE)
    assert run.error is None
    assert partitions[-1] == [4]        # 4 blocks, one try: the AIC, AIV 0 and AIV 1 groups of all four


def test_without_the_flag_the_vector_cores_race_the_cube_in_both_modes(partitions):
    racy = EXAMPLE.replace("            CrossCoreWaitFlag(0)\n", "            pass\n")
    run = both(racy)
    assert run.error is not None and run.error.type == "RaceError"
    assert run.error.line in (line_of(racy, "self.mm.IterateAll(self.work_gm)"),
                              line_of(racy, "DataCopy(x, self.work_gm[r * n], n)"))


def test_a_flag_orders_only_its_own_blocks_cores(partitions):
    # each AIV waits for its own AIC's flag, then reads the tiles of the next block's AIC: a race
    # block by block, and in lanes too (lane i knows lane i of the AIC group, not lane i + 1)
    racy = EXAMPLE.replace("        for t in range(group, self.tiles, groups):",
                           "        for t in range((group + 1) % groups, self.tiles, groups):")
    assert racy != EXAMPLE
    run = both(racy)
    assert run.error is not None and run.error.type == "RaceError"
    assert run.error.line in (line_of(racy, "self.mm.IterateAll(self.work_gm)"),
                              line_of(racy, "DataCopy(x, self.work_gm[r * n], n)"))
    assert partitions[-2] == [4]          # the lanes saw it (then block by block, as every error)


def test_sync_all_tells_every_core_of_every_block(partitions):
    # after SyncAll every AIV may read any block's tiles: ordered in both modes
    synced = EXAMPLE.replace("        for t in range(group, self.tiles, groups):",
                             "        SyncAll(False)\n        for t in range((group + 1) % groups, self.tiles, groups):")
    synced = synced.replace("            CrossCoreSetFlag(2, PIPE_FIX, 0)        # once the Fixpipe writes are done",
                            "            CrossCoreSetFlag(2, PIPE_FIX, 0)\n        SyncAll(False)")
    run = both(synced)
    assert run.error is None
    assert partitions[-1] == [4]
