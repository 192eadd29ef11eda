"""Row gathers of short segments store a batch of rows in one strided copy when their copies
would pass the budget of distinct records (gather_rows.py); long ones, and few rows, still go
one by one. Run in the sandbox against numpy's take, with negative indices, several outer
slices and a last batch that is partial."""

from __future__ import annotations

import numpy as np
import pytest

from sage.kernels import target_for
from sage.kernels.library.gather_rows import CHUNK_BYTES, GatherRowsSpec, gather_rows_source
from sage.kernels.repeat_cost import DISTINCT_BUDGET
from sage.npu.sandbox import run_sandboxed

TARGET = target_for("ascend910b2")


MANY = DISTINCT_BUDGET // 4 + 1      # indices per outer slice: 2 slices' copies pass the budget


@pytest.mark.parametrize(("inner", "dtype", "count", "batch"), [
    (256, "float32", MANY, CHUNK_BYTES // 1024),   # 1 KB segments: 16 a store
    (3, "float16", MANY, 64),                      # 6 B segments at a 32 B pitch: MAX_BATCH
    (256, "float32", 37, None),                    # few rows: one by one
    (5000, "float32", 37, None),                   # 20 KB: chunks of 16 KB, one store each
])
def test_gathered_rows_match_take(inner: int, dtype: str, count: int, batch: int | None):
    outer, rows = 2, 40
    rng = np.random.default_rng(3)
    x = rng.standard_normal((outer, rows, inner)).astype(dtype)
    idx = rng.integers(-rows, rows, count).astype(np.int64)
    spec = GatherRowsSpec(name="g", outer=outer, rows=rows, inner=inner, count=count, dtype=dtype,
                          index_dtype="int64")
    source = gather_rows_source(spec, TARGET)
    assert (f"range(self.t0, self.t1, {batch})" in source) == (batch is not None)
    dt = {"float32": "float32", "float16": "float16"}[dtype]
    source += f"\n\ndef forward(x, i):\n    y = empty(({outer}, {count}, {inner}), {dt})\n    g_launch(x, i, y)\n" \
              "    return y\n"
    run = run_sandboxed(source, [x, idx])
    assert run.error is None, run.error
    np.testing.assert_array_equal(run.outputs[0], np.take(x, idx, axis=1))


def test_long_segments_go_by_chunks_however_many():
    spec = GatherRowsSpec(name="g", outer=2, rows=40, inner=5000, count=MANY, dtype="float32", index_dtype="int64")
    source = gather_rows_source(spec, TARGET)
    assert "range(self.t0, self.t1)" in source and f"range(0, 5000, {CHUNK_BYTES // 4})" in source
