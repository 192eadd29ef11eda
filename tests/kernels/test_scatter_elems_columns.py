"""The element scatter's "columns" mode (a scatter along a non-last axis): blocks own column
stripes, so repeated indices fold in k order with no two blocks touching one element. Run on
six blocks (two o of three stripes: 7, 7 and 6 columns wide), the indices read in chunks of two
rows, the 4-row stripe moved in pieces of 3 and 1 rows; checked against torch's CPU loop."""

from __future__ import annotations

import numpy as np
import pytest


def _expected(x, idx, src, reduce):
    out = x.copy()
    for o in range(x.shape[0]):
        for k in range(idx.shape[1]):
            for i in range(x.shape[2]):
                r = idx[o, k, i] % x.shape[1]
                out[o, r, i] = {None: src[o, k, i], "add": out[o, r, i] + src[o, k, i],
                                "multiply": out[o, r, i] * src[o, k, i]}[reduce]
    return out


@pytest.mark.parametrize("reduce", [None, "add", "multiply"])
def test_column_stripes_fold_repeated_indices_in_k_order(monkeypatch, reduce):
    from sage.kernels import target_for
    from sage.kernels.library import scatter_elems
    from sage.kernels.library.scatter_elems import ScatterElemsSpec, column_plan, scatter_elems_source
    from sage.npu.sandbox import run_sandboxed

    spec = ScatterElemsSpec(name="s", outer=2, rows=4, inner=20, count=5, dtype="float32", index_dtype="int64",
                            reduce=reduce)
    # room for the x stripe and two index/src rows: k comes in chunks of 2, 2 and 1
    monkeypatch.setattr(scatter_elems, "UB_BUDGET", 4 * 32 + 2 * (64 + 32))
    monkeypatch.setattr(scatter_elems, "MAX_BURSTS", 3)      # DataCopyPad's 4095-row limit, scaled down
    assert column_plan(spec, 6) == (7, 4)
    src = scatter_elems_source(spec, target_for("ascend910b2"), 6)
    src += "\ndef forward(x, idx, src):\n    out = empty((2, 4, 20), float32)\n    s_launch(x, idx, src, out)\n" \
           "    return out\n"
    rng = np.random.default_rng(0)
    x = rng.integers(1, 4, (2, 4, 20)).astype(np.float32)
    idx = rng.integers(-4, 4, (2, 5, 20))                    # five draws from four rows: repeats everywhere
    vals = rng.integers(1, 4, (2, 5, 20)).astype(np.float32)
    run = run_sandboxed(src, [x, idx, vals])
    assert run.error is None, run.error
    assert run.outputs[0].tolist() == _expected(x, idx, vals, reduce).tolist()


@pytest.mark.parametrize("reduce", [None, "add", "multiply"])
def test_an_axis_too_long_for_a_stripe_comes_in_bands_each_walking_every_index(monkeypatch, reduce):
    # D = 10 rows do not fit UB with the index/src rows: 32 B stripes of 8 columns in bands of
    # 3 rows (4 bands, the last of one row), each band walking all K = 6 index rows in k order
    from sage.kernels import target_for
    from sage.kernels.library import scatter_elems
    from sage.kernels.library.scatter_elems import ScatterElemsSpec, column_plan, scatter_elems_source
    from sage.npu.sandbox import run_sandboxed

    spec = ScatterElemsSpec(name="s", outer=2, rows=10, inner=16, count=6, dtype="float32", index_dtype="int64",
                            reduce=reduce)
    monkeypatch.setattr(scatter_elems, "MIN_K_ROWS", 1)     # index/src rows then come one at a time
    monkeypatch.setattr(scatter_elems, "UB_BUDGET", 3 * 32 + (64 + 32))
    assert column_plan(spec, 4) == (8, 3)
    src = scatter_elems_source(spec, target_for("ascend910b2"), 4)
    src += "\ndef forward(x, idx, src):\n    out = empty((2, 10, 16), float32)\n    s_launch(x, idx, src, out)\n" \
           "    return out\n"
    rng = np.random.default_rng(1)
    x = rng.integers(1, 4, (2, 10, 16)).astype(np.float32)
    idx = rng.integers(-10, 10, (2, 6, 16))
    idx[:, :3, :] = 9                                         # the last band's row, three times per column
    vals = rng.integers(1, 4, (2, 6, 16)).astype(np.float32)
    run = run_sandboxed(src, [x, idx, vals])
    assert run.error is None, run.error
    assert run.outputs[0].tolist() == _expected(x, idx, vals, reduce).tolist()
