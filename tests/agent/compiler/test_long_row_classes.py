"""A reduction over rows too long for UB is traced in chunks (sage/kernels/long_rows.py):
the chunk is the largest divisor of the row's length within a limit, so the chunk, the
number of chunks and the rows of the chunked reduction are no product of dimensions. The
host computes them as the compiler did (host helper `long_row_split`), so cases of several
spatial sizes are one case class (public level2/14, an instance norm's backward, was 49
classes for 50 cases), and the file computes the same chunks for a size none traced."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from sage.kernels.host_helpers import long_row_split
from sage.kernels.long_rows import LONG_ROW_LIMITS, chunk_of

NORM = "x - x.mean(dim=(2, 3), keepdim=True) * (x * x).sum(dim=(2, 3), keepdim=True)"
TRACED = [(1, 3, 128, 128), (1, 3, 144, 144), (1, 2, 160, 160)]


def _want(x: torch.Tensor) -> np.ndarray:
    x = x.double()
    return (x - x.mean(dim=(2, 3), keepdim=True) * (x * x).sum(dim=(2, 3), keepdim=True)).numpy()


@pytest.fixture(scope="module")
def norm_file(tmp_path_factory):
    from sage.agent.compiler.compiler import compile_cases, trace_cases
    from sage.bench.tasks import load_task
    from sage.kernels import target_for
    from tests.agent.compiler.conftest import write_task

    path = write_task(tmp_path_factory.mktemp("t") / "t.py", "x", NORM,
                      [f"torch.randn{shape}" for shape in TRACED])
    return compile_cases(trace_cases(load_task(path)), None, target_for("ascend910b2"), "t")


def test_three_spatial_sizes_split_in_chunks_are_one_class(norm_file):
    # each row (16384, 20736, 25600 floats) is over what UB holds with the norm's buffers
    assert all(case.long_row_limit is not None for case in norm_file.cases)
    assert norm_file.rules == 1
    assert "def long_row_split(" in norm_file.source


@pytest.mark.parametrize("shape", [*TRACED, (1, 3, 112, 112), (1, 5, 127, 127)])
def test_the_file_is_correct_on_traced_and_untraced_sizes(norm_file, shape):
    from sage.npu.sandbox import run_sandboxed

    x = torch.randn(shape, generator=torch.Generator().manual_seed(sum(shape)))
    run = run_sandboxed(norm_file.source, [x.numpy()])
    if shape not in TRACED and run.error is not None:
        # an untraced size may be refused, never answered wrongly
        assert "no compiled case class" in run.error.message
        return
    assert run.error is None, run.error.message
    np.testing.assert_allclose(run.outputs[0], _want(x), rtol=1e-4, atol=1e-2)


@given(n=st.integers(1, 300_000), limit=st.sampled_from(LONG_ROW_LIMITS), lead=st.integers(1, 9))
def test_the_host_helper_chunks_as_the_trace_does(n, limit, lead):
    chunk = chunk_of(n, limit) if n > limit else None
    shape = (lead, n)
    assert long_row_split(shape, 1, -1, limit, 0) == (chunk or 0)
    assert long_row_split(shape, 1, -1, limit, 1) == (n // chunk if chunk else 0)
    assert long_row_split(shape, 1, -1, limit, 2) == (lead * (n // chunk) if chunk else 0)


def test_the_helper_source_runs_in_the_sandbox_language():
    from sage.kernels.host_helpers import helper_source
    from sage.npu.restricted import compile_kernel

    compile_kernel("\n".join(helper_source(n) for n in ("shape_prod", "divisor_at_most", "long_row_split",
                                                         "grouped_row_split", "grouped_run")),
                   filename="helpers.py")


GROUP_NORM = "torch.nn.functional.group_norm(x, g)"
GROUPED = [((1, 64, 56, 56), 8), ((1, 128, 56, 56), 8), ((1, 256, 56, 56), 16)]


@pytest.fixture(scope="module")
def group_norm_file(tmp_path_factory):
    from sage.agent.compiler.compiler import compile_cases, trace_cases
    from sage.bench.tasks import load_task
    from sage.kernels import target_for
    from tests.agent.compiler.conftest import write_task

    path = write_task(tmp_path_factory.mktemp("t") / "t.py", "x, g", GROUP_NORM,
                      [f"torch.randn{shape}, {g}" for shape, g in GROUPED])
    return compile_cases(trace_cases(load_task(path)), None, target_for("ascend910b2"), "t")


def test_group_norms_of_several_channel_counts_are_one_class(group_norm_file):
    # a group's C / G * H * W elements, its rows N * G and its 1 / n come from the groups
    # argument: one host expression each (grouped_run), where they were literals per case
    assert group_norm_file.rules == 1
    assert "def grouped_run(" in group_norm_file.source


@pytest.mark.parametrize("shape, groups", [*GROUPED, ((1, 192, 40, 40), 24), ((1, 60, 50, 50), 5)])
def test_the_group_norm_file_is_correct_on_traced_and_untraced_sizes(group_norm_file, shape, groups):
    from sage.npu.sandbox import run_sandboxed

    x = torch.randn(shape, generator=torch.Generator().manual_seed(shape[1]))
    run = run_sandboxed(group_norm_file.source, [x.numpy(), groups])
    if (shape, groups) not in GROUPED and run.error is not None:
        assert "no compiled case class" in run.error.message
        return
    assert run.error is None, run.error.message
    want = torch.nn.functional.group_norm(x.double(), groups).numpy()
    np.testing.assert_allclose(run.outputs[0], want, rtol=1e-4, atol=1e-4)
