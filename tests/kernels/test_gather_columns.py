"""The element gather's column-stripe mode (a gather along an axis other than the last): one
vector Gather per chunk of index rows, and, when the indexed axis does not fit UB, the rows in
bands whose Gathers keep the picks of indices outside the band. Checked against torch.gather."""

from __future__ import annotations

import numpy as np
import pytest
import torch


def _run(spec, block_dim, x, idx):
    from sage.kernels import target_for
    from sage.kernels.library.gather_elems import gather_elems_source
    from sage.npu.sandbox import run_sandboxed

    src = gather_elems_source(spec, target_for("ascend910b2"), block_dim)
    shape = (spec.outer, spec.count, spec.inner)
    src += f"\ndef forward(x, idx):\n    out = empty({shape}, {spec.dtype})\n    {spec.name}_launch(x, idx, out)\n" \
           "    return out\n"
    run = run_sandboxed(src, [x, idx])
    assert run.error is None, run.error
    assert "g_x.GetValue" not in src                       # no scalar GM reads
    return run.outputs[0]


@pytest.mark.parametrize("dtype, index_dtype, banded", [("float32", "int64", False), ("float16", "int32", False),
                                                        ("float32", "int64", True), ("float16", "int64", True)])
def test_column_stripes_gather_like_torch(monkeypatch, dtype, index_dtype, banded):
    from sage.kernels.library import gather_columns, gather_elems
    from sage.kernels.library.gather_columns import column_plan
    from sage.kernels.library.gather_elems import GatherElemsSpec

    o, d, k, i = 2, 11, 7, 21                              # 21 columns: stripes with a narrow last one
    spec = GatherElemsSpec(name="g", outer=o, rows=d, inner=i, count=k, dtype=dtype, index_dtype=index_dtype)
    if banded:                                             # 11 rows in bands of 4, 4 and 3; one index row a chunk
        monkeypatch.setattr(gather_columns, "MIN_K_ROWS", 3)
        monkeypatch.setattr(gather_elems, "UB_BUDGET", 300)  # UB scaled down: 11 rows of 32 B do not fit
        assert column_plan(spec, 4)[2:] == (4, 1)
    else:
        assert column_plan(spec, 4)[2] == d
    g = torch.Generator().manual_seed(3)
    x = torch.randn(o, d, i, generator=g).to(getattr(torch, dtype))
    idx = torch.randint(-d, d, (o, k, i), generator=g).to(getattr(torch, index_dtype))
    out = _run(spec, 4, x.numpy(), idx.numpy())
    expect = torch.gather(x, 1, (idx.long() % d))
    assert out.tolist() == expect.numpy().tolist()


def test_rows_whose_indices_do_not_fit_stream_them_in_chunks(monkeypatch):
    # torch.gather along the last axis of rows too long for UB with all their indices
    # (level1/20 case 21: 11008 elements, 5504 indices a row): the row in UB, each row's own
    # indices 64 at a time (UB scaled down), one Gather per chunk
    from sage.kernels.library import gather_elems
    from sage.kernels.library.gather_chunks import index_chunk
    from sage.kernels.library.gather_elems import GatherElemsSpec, row_tile

    spec = GatherElemsSpec(name="g", outer=3, rows=50, inner=1, count=300, dtype="float32", index_dtype="int64")
    monkeypatch.setattr(gather_elems, "UB_BUDGET", 4000)
    assert row_tile(spec) == 0 and index_chunk(spec) == 64
    g = torch.Generator().manual_seed(4)
    x = torch.randn(3, 50, 1, generator=g)
    idx = torch.randint(-50, 50, (3, 300, 1), generator=g)
    out = _run(spec, 4, x.numpy(), idx.numpy())
    assert out.tolist() == torch.gather(x, 1, idx % 50).numpy().tolist()
