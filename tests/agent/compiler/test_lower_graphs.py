"""The compiler on small graphs: how it groups the work into launches, and what the kernels
compute on inputs small enough to work out by hand. Every kernel runs in the sandbox."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.agent.compiler.kernel_text import launches as count_launches

F32 = np.float32


def test_a_pointwise_chain_is_one_launch(compile_graph):
    compiled, run = compile_graph("x, y", "torch.relu(x * 2.0 - y)", "torch.randn(3, 4), torch.randn(3, 4)")
    assert [g.kind for _, g in compiled.groups] == ["tile"]
    x = np.array([[1, -1, 0.5, 2]] * 3, F32)
    y = np.array([[1, 1, 2, 0]] * 3, F32)
    (out,) = run(x, y)
    # 2*1-1 = 1, -2-1 = -3 -> 0, 1-2 = -1 -> 0, 4-0 = 4
    np.testing.assert_array_equal(out, np.array([[1, 0, 0, 4]] * 3, F32))


def test_broadcast_over_rank_three(compile_graph):
    _, run = compile_graph("a, b", "a + b", "torch.randn(2, 1, 3), torch.randn(1, 4, 1)")
    a = np.array([[[0, 10, 20]], [[100, 110, 120]]], F32)
    b = np.array([[[1], [2], [3], [4]]], F32)
    (out,) = run(a, b)
    assert out.shape == (2, 4, 3)
    assert out[1, 2].tolist() == [103, 113, 123] and out[0, 3].tolist() == [4, 14, 24]


def test_sum_over_a_middle_axis_and_over_two_axes_with_keepdim(compile_graph):
    _, run = compile_graph("x", "x.sum(dim=1), x.sum(dim=(0, 2), keepdim=True)", "torch.randn(2, 3, 4)")
    x = np.arange(24, dtype=F32).reshape(2, 3, 4)
    mid, outer = run(x)
    # x[i, j, k] = 12 i + 4 j + k: over j, 3 (12 i + k) + 12
    assert mid.tolist() == [[12 + 3 * k for k in range(4)], [48 + 3 * k for k in range(4)]]
    # over i and k: sum of (12 i + 4 j + k) = 2 * (4 * 4 j + 6) + 4 * 12 = 32 j + 60
    assert outer.shape == (1, 3, 1) and outer.ravel().tolist() == [60, 92, 124]


def test_softmax_over_the_first_axis(compile_graph):
    _, run = compile_graph("x", "torch.softmax(x, dim=0)", "torch.randn(2, 3)")
    x = np.array([[0, 1, 2], [0, 0, 2 + np.log(3)]], F32)
    (out,) = run(x)
    # column 0: equal logits; column 1: e / (e + 1); column 2: 1 : 3
    np.testing.assert_allclose(out, [[0.5, np.e / (np.e + 1), 0.25], [0.5, 1 / (np.e + 1), 0.75]], rtol=1e-5)


def test_int_and_bool_pointwise(compile_graph):
    _, run = compile_graph("a, b", "(a * 3 - b, a > b)",
                           "torch.randint(-5, 5, (2, 8), dtype=torch.int32), torch.randint(-5, 5, (2, 8), dtype=torch.int32)")
    a = np.array([[1, -2, 3, 0, 7, -7, 2, 2]] * 2, np.int32)
    b = np.array([[1, 1, -3, 0, 0, 1, 5, 1]] * 2, np.int32)
    lin, gt = run(a, b)
    assert lin.dtype == np.int32 and lin[0].tolist() == [2, -7, 12, 0, 21, -22, 1, 5]
    assert gt.dtype == np.bool_ and gt[1].tolist() == [False, False, True, False, True, False, False, True]


def test_rank_zero_and_zero_size(compile_graph):
    _, run = compile_graph("x, e", "(x * 2.0 + 1.0, torch.relu(e))", "torch.tensor(1.5), torch.randn(0, 4)")
    scalar, empty = run(np.array(1.5, F32), np.zeros((0, 4), F32))
    assert scalar.shape == () and float(scalar) == 4.0
    assert empty.shape == (0, 4)


def test_matmul_with_bias_and_activation_is_one_mix_launch(compile_graph):
    compiled, run = compile_graph("a, b, c", "torch.relu(a @ b + c)",
                                  "torch.randn(16, 32), torch.randn(32, 16), torch.randn(16)")
    assert [g.kind for _, g in compiled.groups] == ["matmul"]
    assert "KERNEL_TYPE_MIX" in compiled.source or "MIX" in compiled.source
    a = np.zeros((16, 32), F32)
    a[:, 0] = 1.0                        # row i of a @ b is row 0 of b
    b = np.zeros((32, 16), F32)
    b[0] = np.arange(16) - 8.0
    c = np.full(16, 0.5, F32)
    (out,) = run(a, b, c)
    expected = np.maximum(np.arange(16) - 8.0 + 0.5, 0.0)
    np.testing.assert_allclose(out, np.tile(expected, (16, 1)), rtol=1e-6)


def test_an_op_without_a_lowering_is_named(compile_graph):
    from sage.agent.compiler.build import Unsupported

    with pytest.raises(Unsupported, match=r"aten\.grid_sampler_2d.*no lowering"):
        compile_graph("x, g", "torch.nn.functional.grid_sample(x, g, align_corners=False)",
                      "torch.randn(1, 2, 8, 8), torch.rand(1, 4, 4, 2) * 2 - 1")


def test_embedding_gathers_rows_by_index(compile_graph):
    compiled, run = compile_graph("w, i", "torch.nn.functional.embedding(i, w) * 2.0",
                                  "torch.randn(10, 40), torch.randint(0, 10, (3, 4))")
    assert [g.kind for _, g in compiled.groups] == ["index_select", "tile"]
    w = np.arange(400, dtype=F32).reshape(10, 40)
    i = np.array([[0, 9, 3, 3], [1, 2, 5, 7], [8, 8, 0, 4]], np.int64)
    (out,) = run(w, i)
    assert out.shape == (3, 4, 40)
    # row r of w is 40 r + k; doubled
    assert out[0, 1, :3].tolist() == [720, 722, 724] and out[2, 3, 39] == 2 * (160 + 39)



def test_a_group_recomputing_an_inlined_value_runs_after_its_operands_are_written(compile_graph):
    # w[1] * product2 is inlined into the second add; that add must not join the launch of
    # the first add, which runs before product2 exists (it once did and read an unwritten buffer)
    body = "torch.zeros(1, 2, 8, 8) + w[0] * torch.matmul(torch.relu(a), b) + w[1] * torch.matmul(torch.relu(a), c)"
    _, run = compile_graph("a, b, c, w", body, "torch.randn(1, 2, 8, 16), torch.randn(1, 2, 16, 8), "
                                               "torch.randn(1, 2, 16, 8), torch.randn(2)")
    a = np.broadcast_to(np.eye(8, 16, dtype=F32), (1, 2, 8, 16)).copy()   # a @ x is x's first 8 rows
    b = np.ones((1, 2, 16, 8), F32)
    c = np.full((1, 2, 16, 8), 2.0, F32)
    (out,) = run(a, b, c, np.array([3.0, 5.0], F32))
    np.testing.assert_array_equal(out, np.full((1, 2, 8, 8), 3.0 * 1 + 5.0 * 2, F32))


def test_a_reshape_that_cannot_be_a_view_copies_in_the_source_order(compile_graph):
    _, run = compile_graph("x", "x.transpose(1, 2).reshape(4, -1) * 2.0", "torch.randn(4, 6, 10)")
    x = np.arange(240, dtype=F32).reshape(4, 6, 10)
    (out,) = run(x)
    # row b of the result walks x[b] column by column: x[b, 0, 0], x[b, 1, 0], ... doubled
    assert out.shape == (4, 60)
    assert out[1, :3].tolist() == [2 * 60, 2 * 70, 2 * 80] and out[3, 59] == 2 * (180 + 59)


def test_a_choice_between_two_numbers_on_a_rank_zero_condition(compile_graph):
    _, run = compile_graph("x, s", "x * torch.where(s > 0, 3.0, -1.0)", "torch.randn(4, 8), torch.tensor(2.0)")
    x = np.arange(32, dtype=F32).reshape(4, 8)
    (pos,) = run(x, np.array(2.0, F32))
    (neg,) = run(x, np.array(-0.5, F32))
    np.testing.assert_array_equal(pos, 3 * x)
    np.testing.assert_array_equal(neg, -x)


def test_index_select_with_more_indices_than_one_window(compile_graph):
    from sage.kernels.library.gather_rows import WINDOW

    n = 2 * WINDOW + 808
    _, run = compile_graph("w, i", "torch.index_select(w, 0, i)", f"torch.randn(50, 8), torch.randint(0, 50, ({n},))")
    w = np.arange(400, dtype=F32).reshape(50, 8)
    i = (np.arange(n, dtype=np.int64) * 7) % 50
    (out,) = run(w, i)
    np.testing.assert_array_equal(out, w[i])


def test_a_reflection_pad_gathers_along_the_last_axis_with_one_index_row(compile_graph):
    compiled, run = compile_graph("x", "torch.nn.functional.pad(x, (3, 2), mode='reflect')", "torch.randn(600, 130)")
    assert "Gather(" in compiled.source            # not one DataCopy per element
    x = np.arange(600 * 130, dtype=F32).reshape(600, 130)
    (out,) = run(x)
    # reflect: columns 3, 2, 1 before column 0, columns 128, 127 after column 129
    cols = [3, 2, 1, *range(130), 128, 127]
    np.testing.assert_array_equal(out, x[:, cols])


def test_a_sum_over_the_outer_axis_finishes_many_tiles_per_block(compile_graph):
    # the finishing step once loaded the reduced input again and never freed it: the third
    # tile of a block found its queue full
    _, run = compile_graph("x", "x.sum(dim=0).to(torch.float16)", "torch.randn(3, 512, 512)")
    x = np.ones((3, 512, 512), F32)
    x[1] *= 2.0
    x[2, :, :7] = -4.0
    (out,) = run(x)
    expected = np.full((512, 512), 1.0 + 2.0 + 1.0, np.float16)
    expected[:, :7] = 1.0 + 2.0 - 4.0
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, expected)


# A recurrence whose step reads the previous state three times: as trees its expressions
# triple every step, so the fused group must stop growing and store the state instead.
RECURRENCE = ("__import__('functools').reduce(lambda m, t: torch.maximum(m - 0.5, x[t]) "
              "+ 0.1 * torch.exp(m - torch.maximum(m - 0.5, x[t])), range(1, {steps}), x[0])")


def test_a_recurrence_compiles_in_bounded_groups_and_matches_torch(compile_graph):
    import torch

    from sage.agent.compiler.tilegroup import MAX_TREE, tree_size

    compiled, run = compile_graph("x", RECURRENCE.format(steps=24), "torch.randn(24, 8)")
    tiles = [g for _, g in compiled.groups if g.tile is not None]
    assert len(tiles) > 1          # 3^23 tree nodes cannot be one group
    assert all(tree_size(e) <= MAX_TREE for g in tiles for e in g.tile.exprs.values())
    x = np.random.default_rng(0).standard_normal((24, 8)).astype(F32)
    (m,) = run(x)
    want = eval(RECURRENCE.format(steps=24), {"torch": torch, "x": torch.from_numpy(x)})
    np.testing.assert_allclose(m, want.numpy(), rtol=1e-5)


def test_a_kernel_file_the_sandbox_would_refuse_is_unsupported(compile_graph):
    from sage.agent.compiler.build import Unsupported

    with pytest.raises(Unsupported, match="exceeds? the sandbox.s 256 KB"):
        compile_graph("x", RECURRENCE.format(steps=2000), "torch.randn(2000, 8)")


def test_tree_size_counts_shared_nodes_at_every_use_and_stops_at_the_limit():
    from sage.agent.compiler.tilegroup import tree_size
    from sage.kernels import Inp, Op

    e = Inp(0)
    for _ in range(60):               # 2^61 - 1 nodes as a tree, 61 as a DAG
        e = Op("add", (e, e))
    assert tree_size(Op("add", (Inp(0), Inp(1)))) == 3
    assert tree_size(Op("exp", (Op("add", (Inp(0), Inp(0))),))) == 4
    assert 100 < tree_size(e, limit=100) <= 201


def test_a_read_that_splits_the_reduced_run_starts_a_new_group(compile_graph):
    # Group norm's shape: a mean over axes 2 and 3 (one run in memory), then a weight that
    # varies along axis 2 only. In the reduction's group the weight's reads would split the
    # run in two, which the tile kernel cannot reduce over; it goes to a second group.
    import torch

    compiled, run = compile_graph("x, w", "(x - x.mean(dim=(2, 3), keepdim=True)) * w",
                                  "torch.randn(2, 3, 4, 5), torch.randn(1, 3, 4, 1)")
    assert [g.kind for _, g in compiled.groups] == ["tile", "tile"]
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((2, 3, 4, 5)).astype(F32), rng.standard_normal((1, 3, 4, 1)).astype(F32)
    (out,) = run(x, w)
    want = (torch.from_numpy(x) - torch.from_numpy(x).mean(dim=(2, 3), keepdim=True)) * torch.from_numpy(w)
    np.testing.assert_allclose(out, want.numpy(), rtol=1e-5, atol=1e-6)


def test_int64_chains_cast_down_to_int32_are_computed_wrapping_in_int32(compile_graph):
    # The vector unit has no int64 arithmetic; the low 32 bits of sums and products depend
    # only on the low 32 bits of their operands, so the chain runs in int32 and wraps.
    # (c * 2).float() must see the int64 product: that chain is not narrowed (c has its own
    # shape so that the float chain is not fused with the integer one)
    compiled, run = compile_graph(
        "v, a, b, c", "(torch.bincount(v.long(), minlength=5).cumsum(0).to(torch.int32), "
                      "(a.long() * b.long() + 7).to(torch.int32), (c.long() * 2).float())",
        "torch.randint(0, 5, (9,), dtype=torch.int32), torch.randint(0, 9, (4,), dtype=torch.int32), "
        "torch.randint(0, 9, (4,), dtype=torch.int32), torch.randint(0, 9, (3,), dtype=torch.int32)")
    muls = [n for n in compiled.cases[0].built.program.nodes if n.op == "mul"]
    assert [n.outs[0].dtype for n in muls] == ["int32", "int64"]
    assert {n.op: n.outs[0].dtype for n in compiled.cases[0].built.program.nodes}["cumsum"] == "int32"
    v = np.array([0, 4, 4, 1, 4, 0, 2, 2, 4], np.int32)
    a = np.array([70000, -3, 65536, 5], np.int32)
    b = np.array([70000, 4, 65536, 6], np.int32)
    counts, products, doubled = run(v, a, b, np.array([70000, -3, 5], np.int32))
    assert counts.dtype == np.int32 and counts.tolist() == [2, 3, 5, 5, 9]
    # 70000^2 + 7 = 4,900,000,007 -> low 32 bits 605,032,711; 2^32 + 7 -> 7
    assert products.tolist() == [605032711, -5, 7, 37]
    assert doubled.tolist() == [140000.0, -6.0, 10.0]


def test_integer_arithmetic_is_not_computed_in_a_float_tile(compile_graph):
    # One tile program computes in one dtype; next to a float output that is float32, where
    # 70000 * 70000 is not exact. The integer product gets its own (int32) program.
    compiled, run = compile_graph("a, b", "(a * b + 1, a.float() * 0.5)",
                                  "torch.randint(0, 9, (4,), dtype=torch.int32), "
                                  "torch.randint(0, 9, (4,), dtype=torch.int32)")
    assert [g.kind for _, g in compiled.groups] == ["tile", "tile"]
    a = np.array([70000, -3, 46341, 5], np.int32)
    b = np.array([70001, 4, 46341, 6], np.int32)
    product, half = run(a, b)
    with np.errstate(over="ignore"):
        assert product.tolist() == (a * b + np.int32(1)).tolist()      # int32 wraps, as torch's does
    assert half.tolist() == [35000.0, -1.5, 23170.5, 2.5]


def test_rows_longer_than_ub_are_reduced_in_chunks(compile_graph):
    # 65,536 float32 columns (256 KB a row) cannot stay in UB between the mean and the
    # subtraction: the case is traced again with the mean over chunks, and its values
    # go through GM between the steps.
    import torch

    compiled, run = compile_graph("x", "(x - x.mean(dim=-1, keepdim=True)) * 2.0", "torch.randn(2, 65536)")
    assert len([g for _, g in compiled.groups if g.kind == "tile"]) >= 2
    x = np.random.default_rng(2).standard_normal((2, 65536)).astype(F32) + 3.0
    (out,) = run(x)
    want = (torch.from_numpy(x) - torch.from_numpy(x).mean(dim=-1, keepdim=True)) * 2.0
    np.testing.assert_allclose(out, want.numpy(), rtol=1e-4, atol=1e-4)


def test_activations_of_a_rank_zero_tensor_run_on_the_scalar_unit(compile_graph):
    # The public NPUKernelBench files start with rank-0 cases; mish, hardsigmoid, hardswish
    # and softplus had no scalar form and failed to compile.
    import torch
    import torch.nn.functional as F

    fn = "torch.nn.functional."
    _, run = compile_graph("x", f"({fn}mish(x), {fn}hardsigmoid(x), {fn}hardswish(x), {fn}softplus(x))",
                           "torch.tensor(0.7)")
    for value in (0.7, -2.5, 4.0):
        x = np.array(value, F32)
        got = run(x)
        t = torch.tensor(value)
        want = [F.mish(t), F.hardsigmoid(t), F.hardswish(t), F.softplus(t)]
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-6)



@pytest.mark.parametrize("pad, launches", [
    # slabs of 2 rows x 8 floats (64 B runs) and one leading plane: disjoint pieces, one launch
    ((0, 0, 2, -1, 1, 0), 1),
    # a 2-float column on the last axis is 8-byte strided writes: the fill under the copy
    ((2, 1, -1, 3, 1, 0), 2),
])
def test_a_constant_pad_with_long_border_runs_is_one_launch(compile_graph, pad, launches):
    compiled, run = compile_graph("x", f"torch.nn.functional.pad(x, {pad}, value=1.5)", "torch.randn(2, 5, 8)")
    assert count_launches(compiled) == launches
    x = np.arange(80, dtype=F32).reshape(2, 5, 8)
    (out,) = run(x)
    t = torch.nn.functional.pad(torch.from_numpy(x), pad, value=1.5)
    np.testing.assert_array_equal(out, t.numpy())


def test_a_cast_read_through_a_merging_reshape_is_recomputed_not_stored(compile_graph):
    # x.float() viewed as [N, C * H * W] by a row reduction (group norm's reshape merges the
    # channel and spatial axes): the reduction casts as it loads, one launch, no fp32 copy of x
    compiled, run = compile_graph("x", "x.float().reshape(4, 2 * 8 * 8).sum(1)",
                                  "torch.randn(4, 2, 8, 8).half()")
    assert len(compiled.cases[0].plan.groups) == 1
    x = (np.arange(512).reshape(4, 2, 8, 8) % 13 - 6).astype(np.float16)
    (out,) = run(x)
    np.testing.assert_allclose(out, x.astype(np.float32).reshape(4, 128).sum(1), rtol=1e-6)


@pytest.mark.parametrize("other", ["True", "False", "57", "-54.0"])
def test_a_comparison_with_a_python_scalar_bool_included_matches_torch(compile_graph, other):
    # torch.ne(x, True) compares with 1: the bool is the other operand, not a flag
    # (MultiKernelBench level0/18_ne_scalar on uint8)
    compiled, run = compile_graph("x", f"torch.ne(x, {other})", "torch.randint(0, 4, (3, 5)).to(torch.uint8)")
    x = (np.arange(15) % 4).astype(np.uint8).reshape(3, 5)
    (out,) = run(x)
    want = torch.ne(torch.from_numpy(x), eval(other)).numpy()
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_floor_divide_by_a_one_element_tensor_is_exact_at_integer_quotients(compile_graph, dtype):
    # the [1] divisor is a scalar in the kernel, which divides by multiplying with 1/b:
    # -18 * fl(1/3) is -6.0000002, whose floor is -7; the remainder's sign corrects it,
    # and a tiny negative dividend still floors to -1 (level0/2_floor_divide)
    compiled, run = compile_graph("a, b", "torch.floor_divide(a, b)",
                                  f"torch.randn(64).to(torch.{dtype}), torch.randn(1).to(torch.{dtype})")
    a = torch.tensor([-18, 18, -9, 9, 6, -6, 7, -7, -1e-30, 1e-30, 0, -0.5] * 2 + list(range(-20, 20)),
                     dtype=getattr(torch, dtype))
    for divisor in (3.0, -3.0, 0.75, 0.0):
        b = torch.tensor([divisor], dtype=getattr(torch, dtype))
        (out,) = run(*[_numpy(t) for t in (a, b)])
        want = torch.floor_divide(a, b).float().numpy()
        np.testing.assert_array_equal(np.asarray(out, dtype=np.float32), want)


def _numpy(t: torch.Tensor) -> np.ndarray:
    import ml_dtypes

    return t.float().numpy().astype(ml_dtypes.bfloat16) if t.dtype == torch.bfloat16 else t.numpy()


def test_exp_minus_one_does_not_cancel_near_zero(compile_graph):
    # float32 exp(y) - 1 at y = 3e-4 keeps exp's rounding error against a result of 3e-4
    # (relative 2e-4); the kernel takes a series there (level0/13_elu case 14)
    compiled, run = compile_graph("x", "(torch.exp(x * -12.1) - 1) * 3.0", "torch.randn(4, 64)")
    x = np.concatenate([np.linspace(-3e-3, 3e-3, 128), np.linspace(-0.5, 0.5, 128)]).astype(F32).reshape(4, 64)
    (out,) = run(x)
    want = np.expm1(x.astype(np.float64) * np.float64(F32(-12.1))) * 3.0
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=0)      # exp(y) - 1 alone is 2e-4 off
