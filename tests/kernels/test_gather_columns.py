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
