"""Plain (groups = 1) 1- to 3-D convolutions kept whole: one mix launch, the implicit GEMM of
library/conv_gemm.py, against torch.nn.functional.conv*d and a hand-summed output."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


@pytest.mark.parametrize("x_shape, cout, k, s, p, d, dtype", [
    ((2, 5, 30), 7, (7,), 1, 6, 2, "float32"),               # 1-D, dilation 2, padding past a dilated tap
    ((2, 6, 21), 8, (3,), 2, 1, 1, "float16"),               # 1-D stride 2: two column phases
    ((1, 3, 12, 12), 8, (7, 7), 2, 3, 1, "float16"),         # 2-D stride 2: four phases, 49 taps
    ((2, 5, 9, 11), 6, (3, 3), 1, 1, 1, "float32"),          # 2-D stride 1: taps of a column share a copy
    ((1, 3, 3, 5, 9), 4, (2, 3, 3), (1, 1, 2), (0, 1, 1), 1, "float32"),   # 3-D, per-axis stride
    ((1, 3, 2, 16, 32), 8, (3, 3, 3), 1, 1, 1, "float32"),   # column taps unrolled, rows of OW: one Fixpipe a tile
])
def test_conv_is_one_launch_and_matches_torch(compile_graph, x_shape, cout, k, s, p, d, dtype):
    n = len(k)
    conv = {1: "conv1d", 2: "conv2d", 3: "conv3d"}[n]
    cin = x_shape[1]
    compiled, run = compile_graph(
        "x, w, b", f"torch.nn.functional.{conv}(x, w, b, stride={s!r}, padding={p!r}, dilation={d!r})",
        f"torch.randn{x_shape}.to(torch.{dtype}), torch.randn({cout}, {cin}, *{k!r}).to(torch.{dtype}), "
        f"torch.randn({cout}).to(torch.{dtype})")
    assert [g.kind for _, g in compiled.groups] == ["conv"]       # no pad, pad copy or im2col launch
    rng = np.random.default_rng(1)
    x = rng.standard_normal(x_shape).astype(dtype)
    w = (rng.standard_normal((cout, cin, *k)) / np.sqrt(cin * np.prod(k))).astype(dtype)
    b = rng.standard_normal(cout).astype(dtype)
    (out,) = run(x, w, b)
    want = CONV[n](torch.from_numpy(x).double(), torch.from_numpy(w).double(), torch.from_numpy(b).double(),
                   stride=s, padding=p, dilation=d).numpy()
    tol = 1e-5 if dtype == "float32" else 3e-3
    np.testing.assert_allclose(np.asarray(out, np.float64).reshape(want.shape), want, rtol=tol, atol=tol)


def test_edge_outputs_see_zero_padding_and_the_bias(compile_graph):
    # x = 1, w = 1 (2 in, 3 out channels, 3 x 3), bias = c: with padding 1 a corner output sums
    # 2 channels x 4 taps = 8, an edge one 2 x 6 = 12, an inner one 18; plus the bias c.
    _, run = compile_graph("x, w, b", "torch.nn.functional.conv2d(x, w, b, padding=1)",
                           "torch.randn(1, 2, 4, 5), torch.randn(3, 2, 3, 3), torch.randn(3)")
    (out,) = run(np.ones((1, 2, 4, 5), np.float32), np.ones((3, 2, 3, 3), np.float32),
                 np.arange(3, dtype=np.float32))
    out = np.asarray(out).reshape(1, 3, 4, 5)
    assert out[0, 0, 0, 0] == 8 and out[0, 2, 0, 2] == 14 and out[0, 1, 1, 1] == 19 and out[0, 2, 3, 4] == 10


def test_a_strided_view_input_falls_back_to_the_decomposition(compile_graph):
    # x[:, 1:] starts inside x's storage: the direct kernel reads dense tensors of their own,
    # so the convolution is decomposed (pad, im2col copy, product) and still matches torch
    compiled, run = compile_graph("x, w", "torch.nn.functional.conv2d(x[:, 1:], w, padding=1)",
                                  "torch.randn(1, 3, 5, 6), torch.randn(4, 2, 3, 3)")
    assert "conv" not in [g.kind for _, g in compiled.groups]
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 3, 5, 6)).astype(np.float32)
    w = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
    (out,) = run(x, w)
    want = F.conv2d(torch.from_numpy(x[:, 1:]).double(), torch.from_numpy(w).double(), padding=1).numpy()
    np.testing.assert_allclose(np.asarray(out, np.float64).reshape(want.shape), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("x_shape, cout, k, groups, s, p, d", [
    ((2, 8, 7, 9), 12, (3, 3), 4, 1, 1, 1),       # 2-D, four groups of 2 -> 3 channels
    ((1, 6, 17), 9, (3,), 3, 2, 1, 2),             # 1-D, stride and dilation
])
def test_a_grouped_convolution_is_one_batched_product_per_group(compile_graph, x_shape, cout, k, groups, s, p, d):
    # Not depthwise, not groups = 1: the decomposition's im2col per group, one bmm over
    # (batch, group); each output channel sees only its group's input channels.
    n = len(k)
    conv = {1: "conv1d", 2: "conv2d"}[n]
    cin = x_shape[1]
    compiled, run = compile_graph(
        "x, w, b", f"torch.nn.functional.{conv}(x, w, b, stride={s}, padding={p}, dilation={d}, groups={groups})",
        f"torch.randn{x_shape}, torch.randn({cout}, {cin // groups}, *{k!r}), torch.randn({cout})")
    assert "conv" not in [g.kind for _, g in compiled.groups]
    rng = np.random.default_rng(3)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal((cout, cin // groups, *k)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32)
    (out,) = run(x, w, b)
    want = CONV[n](torch.from_numpy(x).double(), torch.from_numpy(w).double(), torch.from_numpy(b).double(),
                   stride=s, padding=p, dilation=d, groups=groups).numpy()
    np.testing.assert_allclose(np.asarray(out, np.float64).reshape(want.shape), want, rtol=1e-5, atol=1e-5)


def test_a_transposed_convolution_flips_its_window_with_one_last_axis_gather(compile_graph):
    # The flipped kernel is the flattened window reversed: a gather along the last axis,
    # which the lowering writes (an inner-axis one, as flipping H then W took, it does not).
    compiled, run = compile_graph("x, w, b", "torch.nn.functional.conv_transpose2d(x, w, b, stride=2, padding=1)",
                                  "torch.randn(1, 4, 5, 6), torch.randn(4, 3, 3, 3), torch.randn(3)")
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 4, 5, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    (out,) = run(x, w, b)
    want = F.conv_transpose2d(torch.from_numpy(x).double(), torch.from_numpy(w).double(), torch.from_numpy(b).double(),
                              stride=2, padding=1).numpy()
    np.testing.assert_allclose(np.asarray(out, np.float64).reshape(want.shape), want, rtol=1e-5, atol=1e-5)


def test_convolutions_are_decomposed_when_their_direct_kernels_overflow_the_file(task_file, monkeypatch):
    # Two window geometries: two direct kernels. Compact, the convolutions are decomposed
    # (no conv group) into kernels both cases share; under a limit between the two files'
    # sizes, compile_task gives the compact one.
    from sage.agent.compiler import compiler
    from sage.kernels import target_for

    task = task_file("x, w, k", "torch.nn.functional.conv2d(x, w, padding=k // 2)",
                     ["torch.randn(1, 3, 12, 12), torch.randn(8, 3, 3, 3), 3",
                      "torch.randn(1, 3, 12, 12), torch.randn(8, 3, 5, 5), 5"])
    kinds = lambda cases: {g.kind for c in cases for g in c.plan.groups}   # noqa: E731
    fast, compact = compiler.trace_cases(task), compiler.trace_cases(task, compact=True)
    assert "conv" in kinds(fast) and "conv" not in kinds(compact)
    # a depthwise one too: compact, the grouped im2col product (no view per tap)
    dw = task_file("x, w", "torch.nn.functional.conv2d(x, w, padding=1, groups=3)",
                   ["torch.randn(1, 3, 12, 12), torch.randn(3, 1, 3, 3)"])
    (case,) = compiler.trace_cases(dw, compact=True)
    assert "bmm" in {n.op for n in case.built.program.nodes} and "conv" not in kinds([case])
    sizes = [len(compiler.compile_cases(c, None, target_for(), "t").source.encode()) for c in (fast, compact)]
    assert sizes[1] < sizes[0]
    monkeypatch.setattr(compiler, "MAX_SOURCE_BYTES", (sizes[0] + sizes[1]) // 2)
    assert "conv" not in {g.kind for _, g in compiler.compile_task(task, target_for()).groups}


def test_a_large_pooling_window_is_one_pass_unless_compact(task_file):
    # 27 taps: one pass over the input by default (each tap a strided view, one kernel);
    # compact, axis by axis (three passes, each with its own intermediate)
    from sage.agent.compiler import compiler

    task = task_file("x", "torch.nn.functional.avg_pool3d(x, 3, stride=1)", ["torch.randn(1, 2, 6, 6, 6)"])
    launches = [len(c.plan.groups) for c in (compiler.trace_cases(task)[0], compiler.trace_cases(task, compact=True)[0])]
    assert launches[0] < launches[1]


def test_a_depthwise_convolution_no_direct_kernel_takes_is_decomposed_into_taps(compile_graph):
    # x[:, 1:] starts inside x's storage, so the vector-core kernel does not take it: one
    # strided view per tap, multiplied by that tap's weights and summed
    compiled, run = compile_graph("x, w", "torch.nn.functional.conv2d(x[:, 1:], w, padding=1, groups=3)",
                                  "torch.randn(1, 4, 6, 7), torch.randn(3, 1, 3, 3)")
    assert "conv" not in [g.kind for _, g in compiled.groups]
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 4, 6, 7)).astype(np.float32)
    w = rng.standard_normal((3, 1, 3, 3)).astype(np.float32)
    (out,) = run(x, w)
    want = F.conv2d(torch.from_numpy(x[:, 1:]).double(), torch.from_numpy(w).double(), padding=1, groups=3).numpy()
    np.testing.assert_allclose(np.asarray(out, np.float64).reshape(want.shape), want, rtol=1e-5, atol=1e-5)
