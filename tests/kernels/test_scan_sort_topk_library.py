"""The scan and sort/topk kernel generators on their own: their plans, and a generated
kernel run in the sandbox on inputs worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from sage.kernels import target_for
from sage.kernels.library.scan import ScanSpec, scan_layout, scan_source
from sage.kernels.library.sort_rows import SortSpec, sort_plan, sort_source

TARGET = target_for("ascend910b2")


def _run(source: str, launch: str, out: str, *arrays: np.ndarray) -> list[np.ndarray]:
    from sage.npu.sandbox import run_sandboxed

    source += f"\n\ndef forward(x):\n{out}\n    {launch}\n    return tuple(o for o in outs)\n"
    result = run_sandboxed(source, list(arrays))
    assert result.error is None, f"{result.error.type}: {result.error.message}"
    return result.outputs


def test_cumprod_of_int32_along_the_outer_axis_widens_to_int64():
    spec = ScanSpec(name="s", outer=2, length=4, inner=3, dtype="int32", out_dtype="int64", op="prod")
    x = np.array([[[1, 2, -1], [2, 2, 3], [3, 2, 0], [4, 2, 5]]] * 2, np.int32)
    (out,) = _run(scan_source(spec, TARGET), "s_launch(x, y)",
                  "    y = empty((2, 4, 3), int64)\n    outs = [y]", x)
    assert out.dtype == np.int64 and out[1].tolist() == [[1, 2, -1], [2, 4, -3], [6, 8, 0], [24, 16, 0]]


def test_a_last_axis_scan_of_many_rows_runs_128_of_them_side_by_side():
    # level1/5_cumsum case 37 (8192 x 16384, last axis): one Add per column per unit of rows,
    # 8192 * 16384 / 64 = 2.1 M at 64 lanes, over the 2.5 M records a launch may make with its
    # transposes; at 128 lanes, 1.05 M, the chunk still 32 columns (64 B fp16 bursts)
    spec = ScanSpec(name="s", outer=8192, length=16384, inner=1, dtype="float16", out_dtype="float16")
    assert scan_layout(spec, 48) == (128, 32)
    # 6144 rows on 48 cores: units of 128 rows, 40 columns in chunks of 32 and 8 (the carry)
    small = ScanSpec(name="s", outer=6144, length=40, inner=1, dtype="float32", out_dtype="float32")
    assert scan_layout(small, 48) == (128, 32)
    x = np.repeat((np.arange(6144) % 7 + 1).astype(np.float32)[:, None], 40, axis=1)   # row r holds r % 7 + 1
    (out,) = _run(scan_source(small, TARGET, 48), "s_launch(x, y)",
                  "    y = empty((6144, 40), float32)\n    outs = [y]", x)
    np.testing.assert_array_equal(out, x * np.arange(1, 41, dtype=np.float32))


def test_a_scan_of_an_unsupported_dtype_says_so():
    with pytest.raises(ValueError, match="int8 scan"):
        scan_source(ScanSpec(name="s", outer=1, length=4, inner=1, dtype="int8", out_dtype="int64"), TARGET)


def test_sort_plans():
    # int32 rows of 4096 fit only single-buffered (32 B a row element)
    assert sort_plan(SortSpec(name="s", rows=64, length=4096, k=4096, dtype="int32", descending=True))[::3] == \
        ("rows", 1)
    # a float32 top-50 of 32000 goes by chunks of 8192; a sort of it is merged through GM
    assert sort_plan(SortSpec(name="s", rows=16, length=32000, k=50, dtype="float32", descending=True,
                              topk=True))[0] == "chunked"
    assert sort_plan(SortSpec(name="s", rows=16, length=32000, k=32000, dtype="float32", descending=False))[0] == \
        "merge"
    # int32 keys do not merge (MrgSort takes float keys): too long for one pass, refused
    with pytest.raises(ValueError, match="merge sort takes float keys"):
        sort_plan(SortSpec(name="s", rows=16, length=32000, k=32000, dtype="int32", descending=False))


def test_int32_sort_values_are_gathered_back_exactly():
    # 2^24 + 1 is not a float32: its key rounds to 2^24, yet the value comes back whole
    spec = SortSpec(name="s", rows=1, length=3, k=3, dtype="int32", descending=False)
    x = np.array([[2**24 + 1, -5, 7]], np.int32)
    values, indices = _run(sort_source(spec, TARGET), "s_launch(x, v, i)",
                           "    v = empty((1, 3), int32)\n    i = empty((1, 3), int64)\n    outs = [v, i]", x)
    assert values.tolist() == [[-5, 7, 2**24 + 1]] and indices.tolist() == [[1, 2, 0]]


def test_a_top_k_unit_holds_as_many_rows_as_its_k_wide_outputs_allow():
    # TopK writes k values and indices: out rows of k (to 16), not of the row's pitch. fp32
    # rows of 1024, top-8, double-buffered: 1024 x 2 x 4 B in, 16 x (2 x (4 + 8) + 4) B out
    # (values, int64 indices, int32 indices) = 8,640 B a row; 160 KB hold 18 rows (3 before)
    spec = SortSpec(name="s", rows=131072, length=1024, k=8, dtype="float32", descending=True, topk=True)
    assert sort_plan(spec) == ("rows", 163840 // 8640, 1024, 2)
    # a sort keeps pitch-wide outputs: 1024 x (2 x 4 + 2 x (4 + 8) + 4) = 36 KB a row, 4 rows
    full = SortSpec(name="s", rows=64, length=1024, k=1024, dtype="float32", descending=True)
    assert sort_plan(full) == ("rows", 163840 // 36864, 1024, 2)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int32"])
def test_top_k_rows_come_out_k_wide_in_every_value_path(dtype):
    # float32 sorts as is, bfloat16 on widened keys, int32 gathers its values back by index
    import ml_dtypes
    import torch

    rows, n, k = 21, 100, 3
    g = torch.Generator().manual_seed(7)
    # distinct values a bfloat16 holds exactly (torch.topk's order among ties is its own)
    x = torch.stack([torch.randperm(n, generator=g) for _ in range(rows)]).to(getattr(torch, dtype))
    spec = SortSpec(name="s", rows=rows, length=n, k=k, dtype=dtype, descending=True, topk=True)
    assert sort_plan(spec)[0] == "rows"
    out_dtype = {"float32": "float32", "bfloat16": "bfloat16", "int32": "int32"}[dtype]
    raw = x.float().numpy().astype(ml_dtypes.bfloat16) if dtype == "bfloat16" else x.numpy()
    values, indices = _run(sort_source(spec, TARGET), "s_launch(x, v, i)",
                           f"    v = empty(({rows}, {k}), {out_dtype})\n    i = empty(({rows}, {k}), int64)\n"
                           "    outs = [v, i]", raw)
    want = torch.topk(x, k, dim=1)
    got = torch.from_numpy(values.astype(np.float32)).to(torch.bfloat16) if dtype == "bfloat16" else \
        torch.from_numpy(values)
    assert torch.equal(got, want.values) and indices.tolist() == want.indices.tolist()
