"""The element-gather kernel on a tiny case: its result and its vector-pipe time, derived by
hand from the cost table in docs/dsl.md."""

from __future__ import annotations

import numpy as np


def test_last_axis_gather_vector_cycles_match_the_cost_table():
    from sage.kernels import target_for
    from sage.kernels.library.gather_elems import GatherElemsSpec, gather_elems_source
    from sage.npu.sandbox import run_sandboxed

    spec = GatherElemsSpec(name="g", outer=2, rows=8, inner=1, count=64, dtype="float32", index_dtype="int32")
    src = gather_elems_source(spec, target_for("ascend910b2"), 1)
    src += "\ndef forward(x, idx):\n    out = empty((128,), float32)\n    g_launch(x, idx, out)\n    return out\n"
    x = np.arange(16, dtype=np.float32)                       # row r holds 8 r .. 8 r + 7
    idx = np.concatenate([np.arange(64) % 8, 7 - np.arange(64) % 8]).astype(np.int32)
    run = run_sandboxed(src, [x, idx])
    assert run.error is None and run.profile is not None
    out = run.outputs[0]
    assert out[:8].tolist() == list(range(8)) and out[64:72].tolist() == [15 - k for k in range(8)]
    # Offsets over 2 index rows of 256 B = 512 B = 2 repeats of 32-bit lanes; only the first
    # instruction pays its head (the V pipe is busy when the rest arrive, 2 scalar cycles apart):
    # Adds 6 + 1*2, Mins 1*2, Maxs 1*2, Muls 1*2, Muls 1*2, Add 2.07*2; then one Gather per row
    # of 64 floats = 1 repeat, 8 cycles each.
    expected = (6 + 2) + 2 + 2 + 2 + 2 + 2.07 * 2 + 8 * 2
    assert abs(run.profile.pipes["V"].busy_cycles - expected) < 1
