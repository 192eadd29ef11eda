"""The compiler on cumsum, cumprod, sort, argsort and topk: small graphs whose results are
worked out by hand (ties included), each kernel run in the sandbox."""

from __future__ import annotations

import numpy as np
import pytest

from sage.agent.compiler.build import Unsupported

F32 = np.float32


def test_cumsum_along_the_last_axis_carries_across_chunks(compile_graph):
    # 600 columns: more than one [8 rows, 512 columns] tile, so the carry between chunks is used
    compiled, run = compile_graph("x", "torch.cumsum(x, -1)", "torch.randn(3, 600)")
    assert [g.kind for _, g in compiled.groups] == ["scan"]
    x = np.repeat(np.arange(1, 4, dtype=F32)[:, None], 600, axis=1)      # row r holds r + 1
    (out,) = run(x)
    # the running sum of a constant c is c (j + 1)
    np.testing.assert_array_equal(out, np.arange(1, 4, dtype=F32)[:, None] * np.arange(1, 601, dtype=F32))


def test_half_cumsum_accumulates_in_float32(compile_graph):
    _, run = compile_graph("x", "torch.cumsum(x, 0)", "torch.randn(3000, 5).half()")
    (out,) = run(np.ones((3000, 5), np.float16))
    # fp16 holds every integer up to 2048 and then only even ones: a sum kept in fp16 stops at
    # 2048 (2048 + 1 rounds back to 2048); a float32 sum reaches 3000 and rounds once, to 3000.
    assert out.dtype == np.float16 and out[-1].tolist() == [3000] * 5
    assert out[2048].tolist() == [2048] * 5            # 2049 rounds to even: 2048
    assert out[2049].tolist() == [2050] * 5


def test_int32_cumsum_is_int64_and_cumprod_runs_along_a_middle_axis(compile_graph):
    _, run = compile_graph("x", "torch.cumsum(x, 2), torch.cumprod(x, 1)",
                           "torch.randint(-3, 3, (2, 3, 4), dtype=torch.int32)")
    x = np.array([[[1, 2, 3, 4], [2, 2, 2, 2], [-1, 0, 1, 3]]] * 2, np.int32)
    csum, cprod = run(x)
    assert csum.dtype == np.int64 and csum[0].tolist() == [[1, 3, 6, 10], [2, 4, 6, 8], [-1, -1, 0, 3]]
    assert cprod.dtype == np.int64 and cprod[1].tolist() == [[1, 2, 3, 4], [2, 4, 6, 8], [-2, 0, 6, 24]]


def test_bfloat16_cumsum_of_ones_is_exact_below_256(compile_graph):
    import ml_dtypes

    _, run = compile_graph("x", "x.cumsum(dim=-1)", "torch.randn(20, 100).bfloat16()")
    (out,) = run(np.ones((20, 100), ml_dtypes.bfloat16))
    assert out.astype(F32)[7].tolist() == list(range(1, 101))


def test_stable_descending_sort_keeps_ties_in_index_order(compile_graph):
    compiled, run = compile_graph("x", "torch.sort(x, dim=-1, descending=True, stable=True)", "torch.randn(2, 5)")
    assert [g.kind for _, g in compiled.groups] == ["sort"]
    x = np.array([[2, 1, 2, 0, 1], [0, 0, 0, 0, -1]], F32)
    values, indices = run(x)
    assert values.tolist() == [[2, 2, 1, 1, 0], [0, 0, 0, 0, -1]]
    assert indices.dtype == np.int64 and indices.tolist() == [[0, 2, 1, 4, 3], [0, 1, 2, 3, 4]]


def test_int32_argsort_of_one_row_is_stable(compile_graph):
    _, run = compile_graph("x", "torch.argsort(x, stable=True), torch.sort(x, stable=True).values",
                           "torch.randint(0, 4, (300,), dtype=torch.int32)")
    x = (np.arange(300) * 7 % 4).astype(np.int32)          # 0 3 2 1 0 3 2 1 ...
    order, values = run(x)
    # the 75 zeros at 0, 4, 8 ... first, then the ones at 3, 7, ..., the twos at 2, 6, ..., the threes at 1, 5, ...
    expect = [i for v in (0, 1, 2, 3) for i in range(300) if i * 7 % 4 == v]
    assert order.tolist() == expect and values.tolist() == sorted(x.tolist())


def test_topk_smallest_in_half(compile_graph):
    _, run = compile_graph("x", "torch.topk(x, 3, dim=-1, largest=False)", "torch.randn(2, 6).half()")
    x = np.array([[5, -1, 4, -3, 0, 2], [1, 2, 3, 4, 5, 6]], np.float16)
    values, indices = run(x)
    assert values.tolist() == [[-3, -1, 0], [1, 2, 3]] and indices.tolist() == [[3, 1, 4], [0, 1, 2]]


def test_topk_of_a_row_longer_than_ub_merges_chunk_candidates(compile_graph):
    # 20000 floats per row: chunks of 8192, each gives its top 3; ties across chunks go to the
    # lower index, as in one stable pass
    _, run = compile_graph("x", "torch.topk(x, 3)", "torch.randn(2, 20000)")
    x = np.zeros((2, 20000), F32)
    x[0, [100, 9000, 17000, 19999]] = [5, 5, 5, 4]
    x[1, 12345] = 7
    values, indices = run(x)
    assert indices.tolist() == [[100, 9000, 17000], [12345, 0, 1]]
    assert values.tolist() == [[5, 5, 5], [7, 0, 0]]


def test_a_sort_that_cannot_lower_names_the_op_and_the_reason(compile_graph):
    # a row of 40000 int32 needs more UB than a one-pass Sort has, and the merge sort of long
    # rows (MrgSort) takes float keys (float32 rows that long merge: test_sort_merge.py)
    with pytest.raises(Unsupported, match=r"aten\.sort.*rows of 40000 int32 do not fit in UB.*float keys"):
        compile_graph("x", "torch.sort(x)", "torch.randint(0, 9, (2, 40000), dtype=torch.int32)")


def test_a_tiny_sort_costs_what_the_cost_table_says(compile_graph):
    """One [1, 64] float32 row: V runs Sort and the int32 -> int64 index Cast only.
    Sort: 1 repeat (64 x 4 B = 256 B) x (1 + ceil(log2(64 / 32))) = 2 passes -> 8 + 7 x 2 = 22
    cycles (32-bit head 8). Cast: 64 int64 = 2 repeats of the wider type, issued while Sort
    runs, so its head is hidden: 2 x 2 = 4. V busy: 26 cycles."""
    from sage.npu.sandbox import run_sandboxed

    compiled, _ = compile_graph("x", "torch.sort(x)", "torch.randn(1, 64)")
    result = run_sandboxed(compiled.source, [np.arange(64, dtype=F32)[::-1].copy()[None, :]])
    assert result.error is None and result.profile is not None
    assert result.outputs[1].tolist() == [list(range(63, -1, -1))]
    assert result.profile.pipes["V"].busy_cycles == 26


def test_a_sort_along_the_first_axis_goes_through_transposed_copies(compile_graph):
    _, run = compile_graph("x", "torch.sort(x, dim=0, descending=True, stable=True)", "torch.randn(4, 3)")
    x = np.array([[1, 5, 0], [3, 5, 2], [2, 6, 1], [3, 4, 0]], F32)
    values, indices = run(x)
    assert values.T.tolist() == [[3, 3, 2, 1], [6, 5, 5, 4], [2, 1, 0, 0]]
    assert indices.T.tolist() == [[1, 3, 2, 0], [2, 0, 1, 3], [1, 2, 0, 3]]
