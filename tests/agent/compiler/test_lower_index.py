"""gather, scatter, index_copy, index_add, bincount and histc lowered on small graphs; every
kernel runs in the sandbox, its result checked against values worked out by hand."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import torch
import pytest

F32 = np.float32


def test_gather_along_the_last_axis_with_a_negative_index(compile_graph):
    compiled, run = compile_graph("x, i", "torch.gather(x, 1, i)",
                                  "torch.randn(3, 5), torch.randint(0, 5, (3, 2))")
    assert [g.kind for _, g in compiled.groups] == ["gather"]
    assert "Gather(" in compiled.source            # the vector Gather instruction, not scalar reads
    x = np.arange(15, dtype=F32).reshape(3, 5)     # x[r, c] = 5 r + c
    i = np.array([[4, 0], [-1, 2], [1, 1]], np.int64)
    (out,) = run(x, i)
    # -1 wraps to 4 as in Python: row 1 picks 5 + 4 and 5 + 2
    assert out.tolist() == [[4, 0], [9, 7], [11, 11]]


def test_gather_of_int64_and_along_the_first_axis(compile_graph):
    _, run = compile_graph("x, i, y, j", "(torch.gather(x, 1, i), torch.gather(y, 0, j))",
                           "torch.randint(0, 9, (2, 4)), torch.randint(0, 4, (2, 1)), "
                           "torch.randn(4, 3), torch.randint(0, 4, (2, 3))")
    x = np.array([[10, 11, 12, 2**40], [20, 21, 22, 23]], np.int64)
    i = np.array([[3], [1]], np.int64)
    y = np.arange(12, dtype=F32).reshape(4, 3)     # y[r, c] = 3 r + c
    j = np.array([[3, 0, 1], [2, 2, 0]], np.int64)
    a, b = run(x, i, y, j)
    assert a.dtype == np.int64 and a.ravel().tolist() == [2**40, 21]
    assert b.tolist() == [[9, 1, 5], [6, 7, 2]]


def test_index_add_accumulates_duplicate_indices(compile_graph):
    compiled, run = compile_graph("x, i, s", "x.index_add(0, i, s)",
                                  "torch.randn(4, 3), torch.tensor([0, 2, 2, 0, 2]), torch.randn(5, 3)")
    assert "SetAtomicAdd" in compiled.source
    x = np.ones((4, 3), F32)
    s = np.array([[1, 2, 3]] * 5, F32) * np.array([[1], [10], [100], [1000], [10000]], F32)
    i = np.array([0, 2, 2, 0, 2], np.int64)
    (out,) = run(x, i, s)
    # row 0: 1 + (1 + 1000) * [1, 2, 3]; row 2: 1 + (10 + 100 + 10000) * [1, 2, 3]; rows 1, 3 stay 1
    assert out.tolist() == [[1002, 2003, 3004], [1, 1, 1], [10111, 20221, 30331], [1, 1, 1]]


def test_index_add_of_int32_and_index_copy_of_int64(compile_graph):
    _, run = compile_graph("x, i, s, y, t", "(x.index_add(0, i, s), y.index_copy(1, i[1:], t))",
                           "torch.zeros(3, 2, dtype=torch.int32), torch.tensor([1, 1, 0]), "
                           "torch.ones(3, 2, dtype=torch.int32), torch.zeros(2, 3, dtype=torch.int64), "
                           "torch.ones(2, 2, dtype=torch.int64)")
    x = np.zeros((3, 2), np.int32)
    i = np.array([1, 1, -3], np.int64)
    s = np.array([[1, 2], [30, 40], [500, 600]], np.int32)
    y = np.full((2, 3), 7, np.int64)
    t = np.array([[2**33, 5], [6, -1]], np.int64)
    added, copied = run(x, i, s, y, t)
    # -3 wraps to 0; index 1 twice: 1 + 30, 2 + 40
    assert added.tolist() == [[500, 600], [31, 42], [0, 0]]
    # index_copy along dim 1 with i[1:] = [1, -3 -> 0]: column 1 <- t[:, 0], column 0 <- t[:, 1]
    assert copied.dtype == np.int64 and copied.tolist() == [[5, 2**33, 7], [-1, 6, 7]]


def test_index_put_of_a_scalar_fills_the_rows(compile_graph):
    _, run = compile_graph("x, i", "x.index_put((i,), torch.tensor(-2.0))", "torch.randn(4, 3), torch.tensor([3, 1])")
    x = np.arange(12, dtype=F32).reshape(4, 3)
    (out,) = run(x, np.array([3, 1], np.int64))
    assert out.tolist() == [[0, 1, 2], [-2, -2, -2], [6, 7, 8], [-2, -2, -2]]


def test_scatter_along_either_axis(compile_graph):
    _, run = compile_graph("x, i, s, j, t", "(torch.scatter(x, 1, i, s), torch.scatter(x, 0, j, t))",
                           "torch.randn(2, 4), torch.tensor([[3, 0], [1, 2]]), torch.randn(2, 2), "
                           "torch.tensor([[1, 0, 1, 0]]), torch.randn(1, 4)")
    x = np.zeros((2, 4), F32)
    last, first = run(x, np.array([[3, 0], [1, -1]], np.int64), np.array([[1, 2], [3, 4]], F32),
                      np.array([[1, 0, 1, 0]], np.int64), np.array([[5, 6, 7, 8]], F32))
    assert last.tolist() == [[2, 0, 0, 1], [0, 3, 0, 4]]
    assert first.tolist() == [[0, 6, 0, 8], [5, 0, 7, 0]]


def test_scatter_of_one_value_along_either_axis_and_into_a_bool_mask(compile_graph):
    compiled, run = compile_graph(
        "x, i, j, m", "(x.scatter(1, i, -2.5), x.scatter(0, j, 7.0), "
                      "torch.zeros(3, 5, dtype=torch.bool).scatter(1, m, True))",
        "torch.randn(2, 4), torch.tensor([[3, 0], [1, 2]]), torch.tensor([[1, 0, 1, 0]]), "
        "torch.tensor([[0, 4], [2, 2], [1, 3]])")
    assert "g_s" not in compiled.source          # the value is a literal: no source tensor is read
    x = np.arange(8, dtype=F32).reshape(2, 4)
    last, first, mask = run(x, np.array([[3, 0], [1, -1]], np.int64), np.array([[1, 0, 1, 0]], np.int64),
                            np.array([[0, 4], [2, 2], [1, 3]], np.int64))
    assert last.tolist() == [[-2.5, 1, 2, -2.5], [4, -2.5, 6, -2.5]]
    assert first.tolist() == [[0, 7, 2, 7], [7, 5, 7, 7]]
    assert mask.dtype == np.bool_ and mask.tolist() == [[True, False, False, False, True],
                                                        [False, False, True, False, False],
                                                        [False, True, False, True, False]]

def test_bincount_and_histc(compile_graph):
    compiled, run = compile_graph("v, x", "(torch.bincount(v, minlength=5), torch.histc(x, 4, -1.0, 1.0))",
                                  "torch.randint(0, 5, (9,)), torch.randn(10)")
    v = np.array([0, 4, 4, 1, 4, 0, 2, 2, 4], np.int64)
    x = np.array([-1.0, -0.9, -0.5, 0.0, 0.2, 0.49, 1.0, 1.5, -1.1, 0.7], F32)
    counts, hist = run(v, x)
    assert counts.dtype == np.int64 and counts.tolist() == [2, 1, 2, 0, 4]
    # bins [-1, -0.5) [-0.5, 0) [0, 0.5) [0.5, 1]; 1.5 and -1.1 fall outside; 1.0 joins the last bin
    assert hist.dtype == np.float32 and hist.tolist() == [2, 1, 3, 2]


def test_an_index_put_of_a_ramp_inverts_a_permutation(compile_graph):
    # moe_init_routing's expanded_row_idx: the ramp's variable in the tile program once
    # shared its name with a scalar temporary of the same program, which overwrote it.
    _, run = compile_graph("p", "torch.zeros(8, dtype=torch.int32).index_put((p.long(),), "
                                "torch.arange(8, dtype=torch.int32))",
                           "torch.randperm(8).to(torch.int32)")
    p = np.array([3, 0, 7, 1, 6, 2, 5, 4], np.int32)
    (out,) = run(p)
    assert out.tolist() == np.argsort(p).tolist()          # out[p[j]] = j


def test_advanced_indexing_is_one_row_gather_that_wraps_negative_rows_itself(compile_graph):
    # x[i] decomposes to index_select(x, 0, where(i < 0, i + 6, i)); the row gather wraps a
    # negative index as that where does, so no separate launch computes the wrapped copy
    compiled, run = compile_graph("x, i", "x[i]", "torch.randn(6, 4), torch.randint(0, 6, (5,))")
    assert [g.kind for _, g in compiled.groups] == ["index_select"]
    x = np.arange(24, dtype=F32).reshape(6, 4)     # x[r, c] = 4 r + c
    i = np.array([-1, 0, 5, -6, 2], np.int64)
    (out,) = run(x, i)
    np.testing.assert_array_equal(out, x[[5, 0, 5, 0, 2]])


def test_a_wrap_over_another_length_is_kept(compile_graph):
    # the where adds 4, not the gathered axis's 6: the kernel's own wrap would differ, so the
    # where stays a launch of its own and the index it writes is what the gather reads
    compiled, run = compile_graph("x, i", "torch.index_select(x, 0, torch.where(i < 0, i + 4, i))",
                                  "torch.randn(6, 4), torch.randint(0, 4, (3,))")
    assert [g.kind for _, g in compiled.groups] == ["tile", "index_select"]
    x = np.arange(24, dtype=F32).reshape(6, 4)
    i = np.array([-1, 0, -4], np.int64)
    (out,) = run(x, i)
    np.testing.assert_array_equal(out, x[[3, 0, 0]])


def test_picking_many_entries_of_a_short_table_streams_it_into_ub_once(compile_graph):
    # weight[i] for 300 indices into a 40-entry table: one Gather over the table in UB, not one
    # GM copy per index (each would pay a copy's fixed cost for 4 bytes)
    compiled, run = compile_graph("w, i", "torch.index_select(w, 0, i)", "torch.randn(40), torch.randint(0, 40, (300,))")
    assert "Gather(" in compiled.source
    w = np.arange(40, dtype=F32) * 0.5
    i = (np.arange(300, dtype=np.int64) * 7) % 40
    i[::5] -= 40                                    # negative indices wrap as in Python
    (out,) = run(w, i)
    np.testing.assert_array_equal(out, w[i % 40])


@pytest.mark.parametrize("vector_filter", [True, False])
def test_index_put_with_repeated_indices_is_race_free_and_the_last_write_wins(compile_graph, monkeypatch,
                                                                               vector_filter):
    # The public NPUKernelBench index_put draws indices with repeats (accumulate=False): two blocks
    # storing one row was a GM race (RaceError). Rows are split by destination, indices read in order,
    # picked out by the vector filter or (too many indices for it) by the scalar scan.
    if not vector_filter:
        monkeypatch.setattr("sage.kernels.library.scatter_owner.FILTER_INDICES", 0)
    compiled, run = compile_graph(
        "x, i, v, y, j, w, z, k, u", "(x.index_put((i,), v), y.index_put((j,), w), z.index_copy(1, k, u))",
        "torch.randn(64), torch.randint(0, 64, (40,)), torch.randn(40), torch.randn(16, 4), "
        "torch.randint(0, 16, (6,)), torch.randn(6, 4), torch.randn(3, 5), torch.tensor([1, 4, 1, 0]), "
        "torch.randn(3, 4)")
    assert ("words.GetValue" in compiled.source) == vector_filter     # the mask read 32 bits at a time
    x = np.arange(64, dtype=F32)
    i = np.array([5, 3, 5, -59, 63, 0, 63, 5] * 5, np.int64)      # -59 wraps to 5: every index repeats
    v = np.arange(100, 140, dtype=F32)
    y = np.arange(64, dtype=F32).reshape(16, 4)
    j = np.array([2, 9, -14, 15, 9, 2], np.int64)                  # -14 wraps to 2
    w = np.arange(24, dtype=F32).reshape(6, 4) + 1000
    z = np.zeros((3, 5), F32)
    k = np.array([1, 4, -4, 0], np.int64)                          # -4 wraps to 1
    u = np.arange(12, dtype=F32).reshape(3, 4) + 1
    flat, rows, columns = run(x, i, v, y, j, w, z, k, u)
    # in index order the last write wins: 5 <- v[39], 3 <- v[33], 63 <- v[38], 0 <- v[37]
    expect = x.copy()
    expect[[5, 3, 63, 0]] = v[[39, 33, 38, 37]]
    assert flat.tolist() == expect.tolist()
    expect_rows = y.copy()
    expect_rows[[2, 9, 15]] = w[[5, 4, 3]]
    assert rows.tolist() == expect_rows.tolist()
    # columns 1 <- u[:, 2], 4 <- u[:, 1], 0 <- u[:, 3]; column 2 and 3 stay zero
    assert columns.tolist() == [[4, 3, 0, 0, 2], [8, 7, 0, 0, 6], [12, 11, 0, 0, 10]]

def test_scatter_reduce_add_and_multiply_fold_repeated_indices_in_order(compile_graph):
    # The public NPUKernelBench scatter uses scatter_(dim, index, src, reduce='add'); repeated
    # indices must all be folded in, each line of the indexed axis by one block (no lost updates).
    compiled, run = compile_graph(
        "x, i, s, y, j, t, m, u",
        "(x.clone().scatter_(0, i, s, reduce='add'), y.scatter(0, j, t, reduce='multiply'), "
        "torch.scatter_add(y, 1, m, u), y.scatter_reduce(0, j, t, 'prod'))",
        "torch.randn(8), torch.randint(0, 8, (6,)), torch.randn(6), torch.randn(3, 20), "
        "torch.randint(0, 3, (4, 20)), torch.randn(4, 20), torch.randint(0, 20, (3, 5)), torch.randn(3, 5)")
    assert "SetValue(GM)" not in compiled.source and "g_o.SetValue" not in compiled.source   # tiled modes only
    x = np.arange(8, dtype=F32)
    i = np.array([2, 7, 2, -6, 0, 7], np.int64)                   # -6 wraps to 2
    s = np.array([10, 20, 30, 40, 50, 60], F32)
    y = np.full((3, 20), 2, F32)
    j = np.tile(np.array([[0], [2], [0], [-3]], np.int64), (1, 20))    # along dim 0: row 0 three times
    j[:, 5] = [1, 1, 1, 2]
    t = np.tile(np.array([[3], [5], [7], [11]], F32), (1, 20))
    m = np.array([[19, 0, -1, 19, 4], [1, 1, 1, 1, 1], [0, 2, 4, 6, 8]], np.int64)    # -1 wraps to 19
    u = np.arange(15, dtype=F32).reshape(3, 5) + 1
    added, multiplied, added_rows, prod = run(x, i, s, y, j, t, m, u)
    assert added.tolist() == [50, 1, 2 + 10 + 30 + 40, 3, 4, 5, 6, 7 + 20 + 60]
    expect = np.full((3, 20), 2, F32)
    expect[0], expect[2] = 2 * 3 * 7 * 11, 2 * 5
    expect[:, 5] = [2, 2 * 3 * 5 * 7, 2 * 11]
    assert multiplied.tolist() == expect.tolist() and prod.tolist() == expect.tolist()
    # scatter_add along dim 1: row 0 gets 1 + 3 + 4 at 19 and 2 at 0; row 1 all of 6..10 at 1
    expect = np.full((3, 20), 2, F32)
    expect[0, [19, 0, 4]] += [1 + 3 + 4, 2, 5]
    expect[1, 1] += 6 + 7 + 8 + 9 + 10
    expect[2, [0, 2, 4, 6, 8]] += [11, 12, 13, 14, 15]
    assert added_rows.tolist() == expect.tolist()


def test_embedding_dense_backward_sums_rows_skips_padding_and_scales_by_frequency(compile_graph):
    # The public NPUKernelBench embedding_dense_backward calls the aten op itself ("no lowering").
    _, run = compile_graph(
        "g, i", "(torch.ops.aten.embedding_dense_backward(g, i, 6, 2, False), "
                "torch.ops.aten.embedding_dense_backward(g, i, 6, -1, True))",
        "torch.randn(2, 3, 4), torch.randint(0, 6, (2, 3))")
    g = (np.arange(1, 7, dtype=F32)[:, None] * np.array([1, 10, 100, 1000], F32)).reshape(2, 3, 4)
    i = np.array([[4, 2, 4], [0, 4, 2]], np.int64)        # row 4 three times, padding row 2 twice
    padded, scaled = run(g, i)
    base = np.array([1, 10, 100, 1000], F32)
    expect = np.zeros((6, 4), F32)
    expect[4], expect[0] = (1 + 3 + 5) * base, 4 * base  # rows 1 and 5 named by no index; row 2 is padding
    assert padded.tolist() == expect.tolist()
    expect[4], expect[2] = (1 + 3 + 5) / 3 * base, (2 + 6) / 2 * base
    np.testing.assert_allclose(scaled, expect, rtol=1e-6)


def test_index_put_by_one_row_index_is_one_launch_and_accumulates(compile_graph):
    # index_put by a single int64 row index reaches the row-scatter kernel undecomposed: no
    # launch of its own wrapping negative indices (the kernel wraps them), accumulate -> atomic adds.
    compiled, run = compile_graph("x, i, v", "(x.index_put((i,), v, accumulate=True), x.index_put((i,), v))",
                                  "torch.randn(5, 2), torch.tensor([1, -1, 1, 4]), torch.randn(4, 2)")
    # each out-of-place put: the pointwise copy of x, then the scatter into it; no index arithmetic
    assert [g.kind for _, g in compiled.groups] == ["tile", "index_copy", "tile", "index_copy"]
    x = np.ones((5, 2), F32)
    i = np.array([1, -1, 1, 4], np.int64)                          # -1 wraps to 4
    v = np.array([[1, 2], [10, 20], [100, 200], [1000, 2000]], F32)
    added, put = run(x, i, v)
    assert added.tolist() == [[1, 1], [102, 203], [1, 1], [1, 1], [1011, 2021]]
    assert put.tolist() == [[1, 1], [100, 200], [1, 1], [1, 1], [1000, 2000]]


def test_index_add_of_more_indices_than_ub_holds_loads_each_blocks_own_slice():
    # 20,000 indices, over the 16,384 one UB load holds: index_add of one outer slice loads
    # only the block's own [t0, t1) (the small index_add tests run this path end to end);
    # index_copy's owner walk reads every index in every block, so there it is still refused
    from sage.kernels.library.scatter_rows import ScatterRowsSpec, scatter_rows_source
    from sage.kernels.target import target_for
    spec = ScatterRowsSpec("k", 1, 64, 8, 20000, "float32", "int64", accumulate=True)
    source = scatter_rows_source(spec, target_for())
    assert "self.g_i[0 + self.t0]" in source and "(self.t1 - self.t0) * 8" in source
    with pytest.raises(ValueError, match="20000 indices do not fit in UB"):
        scatter_rows_source(ScatterRowsSpec("k", 1, 64, 8, 20000, "float32", "int64", accumulate=False),
                            target_for())


def test_embedding_backward_scaled_by_frequency_over_a_large_table(compile_graph):
    # scale_grad_by_freq counted with bincount, whose bins live in UB (8192 at most): level1's
    # 64001-row tables were unsupported; the counts are now an index_add of ones
    _, run = compile_graph("g, i", "torch.ops.aten.embedding_dense_backward(g, i, 20000, 3, True)",
                           "torch.randn(5, 4), torch.randint(0, 20000, (5,))")
    g = np.random.default_rng(1).standard_normal((5, 4)).astype(F32)
    i = np.array([19999, 7, 3, 19999, 12345], np.int64)            # 19999 twice, padding row 3
    (out,) = run(g, i)
    want = torch.ops.aten.embedding_dense_backward(torch.from_numpy(g), torch.from_numpy(i), 20000, 3, True)
    np.testing.assert_allclose(out, want.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dim, reduce", [(0, None), (1, "add"), (2, "multiply"), (-1, "add")])
def test_scatter_of_an_index_smaller_than_self_on_every_axis(compile_graph, dim, reduce):
    # torch reads only index's extent: index may be smaller than self off `dim` and than src
    # everywhere. The elements of self outside the index's box keep their values (a copy of x
    # first), repeated indices fold in k order; checked against torch on the same inputs.
    how = f", reduce='{reduce}'" if reduce else ""
    compiled, run = compile_graph("x, i, s", f"x.clone().scatter_({dim}, i, s{how})",
                                  "torch.randn(4, 5, 6, 7), torch.randint(0, 4, (3, 2, 4, 5)), torch.randn(3, 3, 5, 6)")
    g = torch.Generator().manual_seed(dim + 7)
    x = torch.randn(4, 5, 6, 7, generator=g)
    i = torch.randint(0, (4, 5, 6, 7)[dim], (3, 2, 4, 5), generator=g)
    i.view(-1)[:40] = 1                                      # plenty of repeats along every line
    s = torch.randn(3, 3, 5, 6, generator=g)
    (out,) = run(x.numpy(), i.numpy(), s.numpy())
    expect = x.clone().scatter_(dim, i, s, **({"reduce": reduce} if reduce else {}))
    assert np.allclose(out, expect.numpy(), rtol=1e-6, atol=1e-6)
    assert "g_o.SetValue" not in compiled.source               # owner blocks in UB, no racing GM stores


def test_scatter_add_of_a_leading_half_index_keeps_the_other_half(compile_graph):
    # NPUKernelBench 21_scatter case 14's shape pattern: index (2, 4, 3) into self (4, 4, 3) along dim 1
    _, run = compile_graph("x, i, s", "x.scatter_(1, i, s, reduce='add')",
                           "torch.randn(4, 4, 3), torch.randint(0, 4, (2, 4, 3)), torch.randn(2, 4, 3)")
    x = np.zeros((4, 4, 3), F32)
    i = np.zeros((2, 4, 3), np.int64)                        # every k onto row 0
    s = np.ones((2, 4, 3), F32)
    (out,) = run(x, i, s)
    assert out[:2, 0].tolist() == [[4, 4, 4]] * 2 and not out[:2, 1:].any() and not out[2:].any()


@pytest.mark.parametrize("dtype, mode", [("bfloat16", "whole"), ("float16", "whole"), ("bfloat16", "chunked"),
                                         ("float16", "banded")])
def test_half_index_put_accumulate_sums_repeats_in_float32_in_one_owner(compile_graph, monkeypatch, dtype, mode):
    # Repeated indices in bf16/fp16 round differently in every order: atomic adds from many
    # blocks land in any order (level1/19 case 12 failed two ulp off eager), and torch's CPU
    # kernel, rounding after every add, drifts past the rule's 8-ulp cap where many repeat
    # (case 14). One owner per element sums in float32 in index order and rounds once.
    # chunked: UB scaled down so the 64-element row stays whole and the 300 indices come 128
    # at a time; banded: a 256-element row in two bands of 128, each walking every index.
    from sage.kernels.library import scatter_elems

    size, lo, hi = (256, 120, 136) if mode == "banded" else (64, 0, 8)
    budget = {"whole": scatter_elems.UB_BUDGET, "chunked": 2000, "banded": 1600}[mode]
    monkeypatch.setattr(scatter_elems, "UB_BUDGET", budget)
    compiled, run = compile_graph("x, i, v", "x.index_put_((i,), v, accumulate=True)",
                                  f"torch.randn({size}, dtype=torch.{dtype}), torch.randint(0, {size}, (300,)), "
                                  f"torch.randn(300, dtype=torch.{dtype})")
    assert "SetAtomicAdd" not in compiled.source and "Cast(xf, xt" in compiled.source
    assert ("k0 in range(" in compiled.source) == (mode != "whole")
    assert ("v < b0 + bn" in compiled.source) == (mode == "banded")
    g = torch.Generator().manual_seed(5)
    t = getattr(torch, dtype)
    x = (torch.randn(size, generator=g) * 8).to(t)
    i = torch.randint(lo, hi, (300,), generator=g)           # ~19-37 adds per written element
    v = torch.randn(300, generator=g).to(t)
    sums = x.float().numpy().copy()
    for k, j in enumerate(i.tolist()):                       # float32, in index order
        sums[j] = np.float32(sums[j] + np.float32(v[k].float()))
    view = (lambda a: a.float().numpy().astype(ml_dtypes.bfloat16)) if dtype == "bfloat16" else (lambda a: a.numpy())
    (out,) = run(view(x), i.numpy(), view(v))
    expect = sums.astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16)
    assert out.view(np.int16).tolist() == expect.view(np.int16).tolist()
    eager = view(x.clone().index_put_((i,), v, accumulate=True))
    assert out.view(np.int16).tolist() != eager.view(np.int16).tolist()   # eager rounds after every add


def test_index_select_of_more_indices_than_ub_holds_streams_them_in_chunks(compile_graph, monkeypatch):
    # nll_loss's weight[target] over a million targets (level1/25 case 20): a 21-entry table row
    # and the indices in chunks (UB scaled down here: 3000 indices in 16 chunks of 192).
    from sage.kernels.library import gather_elems

    monkeypatch.setattr(gather_elems, "UB_BUDGET", 8192)
    compiled, run = compile_graph("w, t", "torch.index_select(w, 0, t)", "torch.randn(21), torch.randint(0, 21, (3000,))")
    assert "Gather(" in compiled.source and "kn = min(" in compiled.source      # the chunked mode
    g = torch.Generator().manual_seed(2)
    w = torch.randn(21, generator=g)
    t = torch.randint(-21, 21, (3000,), generator=g)
    (out,) = run(w.numpy(), t.numpy())
    assert out.tolist() == w[t].tolist()


@pytest.mark.parametrize("dtype, dim", [("float16", 1), ("bfloat16", 2), ("float16", 0)])
def test_half_scatter_reduce_sums_repeats_in_float_and_rounds_once_as_torch(compile_graph, dtype, dim):
    # torch's CPU scatter_(reduce='add') of fp16/bf16 folds repeats in float and rounds once;
    # rounding after every add (the tile in its own dtype) is an ulp off where many repeat
    t = getattr(torch, dtype)
    compiled, run = compile_graph("x, i, s", f"x.clone().scatter_({dim}, i, s, reduce='add')",
                                  f"torch.randn(6, 8, 10, dtype=torch.{dtype}), torch.randint(0, 3, (5, 7, 9)), "
                                  f"torch.randn(5, 7, 9, dtype=torch.{dtype})")
    assert "Cast(xf, xt" in compiled.source
    g = torch.Generator().manual_seed(11)
    x = (torch.randn(6, 8, 10, generator=g) * 4).to(t)
    i = torch.randint(0, 3, (5, 7, 9), generator=g)          # few targets: many repeats per line
    s = torch.randn(5, 7, 9, generator=g).to(t)
    view = (lambda a: a.float().numpy().astype(ml_dtypes.bfloat16)) if dtype == "bfloat16" else (lambda a: a.numpy())
    (out,) = run(view(x), i.numpy(), view(s))
    expect = view(x.clone().scatter_(dim, i, s, reduce="add"))
    assert out.view(np.int16).tolist() == expect.view(np.int16).tolist()
