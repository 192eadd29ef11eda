"""Sizes the host derives from an op's attributes (generic/derived.py): a constant padding's
output sizes, strides and the input's offset in it are sums of the input's sizes and the pad
amounts, so cases that take the same code path with other sizes and amounts share one case
class, the host computing them (issue 31: level1/15_pad had a class per case). Outputs are
checked against torch.nn.functional.pad on every case, and the host helpers against torch's
own output shapes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.agent.compiler.kernel_text import sandbox_outputs

# (shape, pad): float32, rank 2, both axes padded; rows long enough to take one code path
CASES = [((16, 64), (2, 2, 1, 1)), ((24, 96), (4, 4, 2, 2)), ((12, 128), (4, 4, 3, 3)), ((20, 64), (1, 3, 2, 0))]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    from sage.agent.compiler.compiler import compile_cases, trace_cases
    from sage.bench.tasks import load_task
    from sage.kernels import target_for
    from tests.agent.compiler.conftest import write_task

    path = write_task(tmp_path_factory.mktemp("pad") / "pad.py", "x, pad",
                      "torch.nn.functional.pad(x, pad, value=0.0)",
                      [f"torch.randn({shape}), {pad}" for shape, pad in CASES])
    return compile_cases(trace_cases(load_task(path, input_budget=None)), None, target_for("ascend910b2"), "t")


def test_cases_of_one_code_path_share_a_class(compiled):
    assert len(compiled.cases) == len(CASES)
    assert compiled.rules < len(CASES) and compiled.exact == 0
    assert "padded_shape(" in compiled.source        # the host computes the output's sizes


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{list(c[0])}-{list(c[1])}")
def test_every_case_agrees_with_torch(compiled, case):
    shape, pad = case
    x = torch.arange(int(np.prod(shape)), dtype=torch.float32).reshape(shape) % 13 - 6
    (out,) = sandbox_outputs(compiled.source, [x.numpy(), pad])
    np.testing.assert_array_equal(out, torch.nn.functional.pad(x, pad, value=0.0).numpy())


@pytest.mark.parametrize("shape, pad", [((5,), (1, 2)), ((3, 4, 5), (0, 1, 2, 3)), ((2, 3, 4, 5), (1, 1, 0, 2, 3, 0))])
def test_padded_shape_and_offset_are_torchs(shape, pad):
    from sage.kernels.host_helpers import pad_offset, padded_shape

    x = torch.zeros(shape)
    out = torch.nn.functional.pad(x + 1, pad, value=0.0)
    assert padded_shape(shape, pad) == list(out.shape)
    first = next(i for i, v in enumerate(out.flatten().tolist()) if v == 1)     # x[0, ..., 0] lands here
    assert pad_offset(shape, pad) == first


@pytest.mark.parametrize("shape, scale", [((1, 3, 7, 9), 2.0), ((2, 1, 9, 11), 0.5), ((1, 2, 10, 6), (1.5, 0.25))])
def test_scaled_shape_is_interpolates(shape, scale):
    from sage.kernels.host_helpers import scaled_shape

    out = torch.nn.functional.interpolate(torch.zeros(shape), scale_factor=scale, mode="nearest")
    assert scaled_shape(shape, scale) == list(out.shape)


CAT_CASES = [((4, 64), (4, 32)), ((8, 32), (8, 96)), ((6, 128), (6, 64))]


def test_concatenations_of_other_widths_share_a_class(tmp_path):
    from sage.agent.compiler.compiler import compile_cases, trace_cases
    from sage.bench.tasks import load_task
    from sage.kernels import target_for
    from tests.agent.compiler.conftest import write_task

    path = write_task(tmp_path / "cat.py", "x, y, d", "torch.cat([x, y], d)",
                      [f"torch.randn({a}), torch.randn({b}), 1" for a, b in CAT_CASES])
    compiled = compile_cases(trace_cases(load_task(path, input_budget=None)), None, target_for("ascend910b2"), "t")
    assert compiled.rules < len(CAT_CASES) and "cat_shape(" in compiled.source
    for a, b in CAT_CASES:
        x = torch.arange(int(np.prod(a)), dtype=torch.float32).reshape(a)
        y = -torch.arange(int(np.prod(b)), dtype=torch.float32).reshape(b)
        (out,) = sandbox_outputs(compiled.source, [x.numpy(), y.numpy(), 1])
        np.testing.assert_array_equal(out, torch.cat([x, y], 1).numpy())


@pytest.mark.parametrize("dim, shapes", [(0, [(2, 3), (4, 3), (1, 3)]), (-1, [(2, 3, 4), (2, 3, 1)])])
def test_cat_shape_and_offsets_are_torchs(dim, shapes):
    from sage.kernels.host_helpers import cat_offset, cat_shape

    pieces = [torch.full(s, float(k)) for k, s in enumerate(shapes)]
    out = torch.cat(pieces, dim)
    assert cat_shape(dim, shapes) == list(out.shape)
    for k in range(1, len(shapes)):
        # piece k's first element, in the flat result and along the axis
        assert out.flatten().tolist().index(float(k)) == cat_offset(dim, shapes, k, 1)
        assert out.movedim(dim, 0)[cat_offset(dim, shapes, k, 0)].flatten()[0] == k


def test_a_layer_norm_over_other_row_counts_is_one_class(tmp_path):
    """A rank-free class holds the rows as a literal; a case with other rows makes it ranked
    (reading the dimension) instead of a class of its own (rules._as_ranked); 1/n is 1.0 / a
    dimension."""
    from sage.agent.compiler.compiler import compile_cases, trace_cases
    from sage.bench.tasks import load_task
    from sage.kernels import target_for
    from tests.agent.compiler.conftest import write_task

    rows = [8, 16, 40]
    path = write_task(tmp_path / "ln.py", "x, w, b", "torch.nn.functional.layer_norm(x, (64,), w, b)",
                      [f"torch.randn(1, {r}, 64), torch.randn(64), torch.randn(64)" for r in rows])
    compiled = compile_cases(trace_cases(load_task(path, input_budget=None)), None, target_for("ascend910b2"), "t")
    assert compiled.rules == 1 and compiled.exact == 0
    gen = torch.Generator().manual_seed(0)
    for r in rows:
        x, w, b = torch.randn(1, r, 64, generator=gen), torch.randn(64, generator=gen), torch.randn(64, generator=gen)
        (out,) = sandbox_outputs(compiled.source, [x.numpy(), w.numpy(), b.numpy()])
        np.testing.assert_allclose(out, torch.nn.functional.layer_norm(x, (64,), w, b).numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape, reps", [((5,), (3,)), ((2, 3), (2, 1)), ((2, 3), (4, 2, 2)), ((1, 2, 3), (1, 1, 1))])
def test_repeated_shape_is_torchs(shape, reps):
    from sage.kernels.host_helpers import repeated_shape

    assert repeated_shape(shape, reps) == list(torch.zeros(shape).repeat(*reps).shape)
    assert repeated_shape((2, 3, 4), (2, 2)) == [2, 3, 4]        # never raises (torch refuses it)


REPEATS = [((128,), (2,)), ((256,), (4,)), ((96,), (3,))]


def test_repeats_of_other_sizes_share_a_class(tmp_path):
    """x.repeat(*r): the output has each dimension times its count, which no dimension or list
    item gives alone: each case of public level1/16_repeat was pinned to its own shapes."""
    from sage.agent.compiler.compiler import compile_cases, trace_cases
    from sage.bench.tasks import load_task
    from sage.kernels import target_for
    from tests.agent.compiler.conftest import write_task

    path = write_task(tmp_path / "rep.py", "x, r", "x.repeat(*r)",
                      [f"torch.randn({s}), {r}" for s, r in REPEATS])
    compiled = compile_cases(trace_cases(load_task(path, input_budget=None)), None, target_for("ascend910b2"), "t")
    assert compiled.rules == 1 and compiled.exact == 0 and "repeated_shape(" in compiled.source
    for shape, reps in REPEATS + [((200,), (5,))]:           # a size and count no case traced
        x = torch.arange(int(np.prod(shape)), dtype=torch.float32).reshape(shape)
        (out,) = sandbox_outputs(compiled.source, [x.numpy(), list(reps)])
        np.testing.assert_array_equal(out, x.repeat(*reps).numpy())


SPARE = [(6, 32, 2), (8, 64, 3), (5, 48, 4)]


def test_a_table_with_a_spare_row_is_one_class(tmp_path):
    """Each row's scale gathered from a [G + 1, N] table whose last row is ones (torch_npu's
    swiglu_quant, public level2/10): (G + 1) * N and G + 1 are host expressions, not literals
    that pin each case to its shapes."""
    from sage.agent.compiler.compiler import compile_cases, trace_cases
    from sage.bench.tasks import load_task
    from sage.kernels import target_for
    from tests.agent.compiler.conftest import write_task

    body = "x * torch.cat([s, torch.ones(1, s.shape[1])])[g]"
    path = write_task(tmp_path / "spare.py", "x, s, g", body,
                      [f"torch.randn({r}, {n}), torch.randn({k}, {n}), torch.randint(0, {k + 1}, ({r},))"
                       for r, n, k in SPARE])
    compiled = compile_cases(trace_cases(load_task(path, input_budget=None)), None, target_for("ascend910b2"), "t")
    assert compiled.rules == 1 and compiled.exact == 0
    assert "in ((" not in compiled.source                    # no class pinned to its cases' shapes
    gen = torch.Generator().manual_seed(1)
    for r, n, k in SPARE:
        x, s = torch.randn(r, n, generator=gen), torch.randn(k, n, generator=gen)
        g = torch.randint(0, k + 1, (r,), generator=gen)
        (out,) = sandbox_outputs(compiled.source, [x.numpy(), s.numpy(), g.numpy()])
        np.testing.assert_allclose(out, (x * torch.cat([s, torch.ones(1, n)])[g]).numpy(), rtol=1e-6)
