"""A kernel file called with a shape none of its cases traced must give torch's result or
refuse ("no compiled case class of this kernel file takes these arguments"), never a wrong
answer or an out-of-bounds access. A class whose cases' sizes coincide (M = N) takes only
calls on which they still coincide, and one holding a size no host expression explains
takes only the shapes it traced (`generic/rules.py`, `generic/ambiguity.py`)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sage.agent.compiler.generic.ambiguity import needed
from sage.agent.compiler.generic.hostexpr import Candidates, HostExpr


def _outcome(run, want: np.ndarray) -> str:
    if run.error is not None:
        return "refused" if "no compiled case class" in run.error.message else f"error {run.error.type}"
    got = np.asarray(run.outputs[0], dtype=np.float32).reshape(-1)
    if got.size != want.size:
        return "wrong size"
    return "correct" if np.allclose(got, want.reshape(-1), rtol=2e-2, atol=2e-2) else "wrong"


def _compiled(task_file, inputs: list[str], body: str = "torch.matmul(a, b)"):
    from sage.agent.compiler.compiler import compile_cases, trace_cases
    from sage.kernels import target_for

    task = task_file("a, b", body, inputs)
    return compile_cases(trace_cases(task), None, target_for("ascend910b2"), "t")


def _run(compiled, *tensors):
    from sage.npu.sandbox import run_sandboxed

    return run_sandboxed(compiled.source, [t.numpy() for t in tensors])


@pytest.fixture(scope="module")
def square_matmul(tmp_path_factory):
    """A matmul traced on square cases only: M = N in every case, K = 64."""
    from sage.agent.compiler.compiler import compile_cases, trace_cases
    from sage.bench.tasks import load_task
    from sage.kernels import target_for
    from tests.agent.compiler.conftest import write_task

    path = write_task(tmp_path_factory.mktemp("t") / "t.py", "a, b", "torch.matmul(a, b)",
                      ["torch.randn(128, 64).half(), torch.randn(64, 128).half()",
                       "torch.randn(256, 64).half(), torch.randn(64, 256).half()"])
    return compile_cases(trace_cases(load_task(path)), None, target_for("ascend910b2"), "t")


def test_a_square_matmul_file_serves_an_untraced_square_size(square_matmul):
    a, b = torch.randn(384, 64).half(), torch.randn(64, 384).half()
    assert _outcome(_run(square_matmul, a, b), (a.float() @ b.float()).numpy()) == "correct"


def test_a_square_matmul_file_refuses_a_rectangle_it_cannot_tell_m_from_n_on(square_matmul):
    # its cases cannot say whether the output's columns are a's rows or b's columns
    a, b = torch.randn(384, 64).half(), torch.randn(64, 256).half()
    assert _outcome(_run(square_matmul, a, b), (a.float() @ b.float()).numpy()) == "refused"


def test_the_coincidence_is_a_check_in_the_kernel_file(square_matmul):
    assert "== a1.shape[1]" in square_matmul.source or "v0 == v" in square_matmul.source


def test_a_size_no_expression_explains_pins_the_class_to_its_traced_shapes(task_file):
    # cat's length is a sum of sizes: no host expression gives it, so the class is pinned
    compiled = _compiled(task_file, ["torch.randn(40, 16), torch.randn(24, 16)"], "torch.cat([a, b, a], dim=0)")
    a, b = torch.randn(40, 16), torch.randn(24, 16)
    assert _outcome(_run(compiled, a, b), torch.cat([a, b, a]).numpy()) == "correct"
    assert "in (((40, 16), (24, 16)),)" in compiled.source
    a, b = torch.randn(16, 16), torch.randn(48, 16)
    assert _outcome(_run(compiled, a, b), torch.cat([a, b, a]).numpy()) == "refused"


def test_a_batched_result_count_is_a_cross_product_of_two_operands():
    # B * M from a's leading run, N from b: no run of one tensor's dimensions gives 2 * 96 * 80
    a, b = torch.zeros(2, 96, 64), torch.zeros(2, 64, 80)
    found = Candidates([a, b]).of(2 * 96 * 80)
    assert HostExpr("xprod", args=(0, 0, 2, 1, 2)) in found


def test_implied_checks_are_dropped_and_independent_ones_kept():
    flat = [torch.zeros(1, 128, 64), torch.zeros(1, 128, 64), torch.zeros(2, 64)]
    d = lambda i, k: HostExpr("dim", i, k)  # noqa: E731
    pairs = [(d(0, 1), d(1, 1)), (d(0, 2), d(1, 2)),
             (HostExpr("numel", 0), HostExpr("numel", 1)),                 # implied by the two above
             (HostExpr("lit", value=1), d(1, 0)),                           # dims_pattern pins it to 1
             (d(0, 1), HostExpr("xprod", args=(2, 0, 1, 0, 2))),            # 128 = 2 * 64: kept
             (d(1, 1), HostExpr("xprod", args=(2, 0, 1, 1, 2)))]            # the same, once more
    kept = needed(pairs, flat, ranked=True)
    assert kept == [pairs[0], pairs[1], pairs[4]]


def test_a_broadcast_file_does_not_guess_how_an_untraced_pair_broadcasts(task_file):
    # traced: b a row repeated over a's second axis; called: b a column (the same element
    # counts). A rank-free class saw only the counts and returned a wrong sum (max err 4.5).
    compiled = _compiled(task_file, ["torch.randn(1, 64, 64, 1), torch.randn(1, 1, 64, 1)"], "a + b")
    for sa, sb in (((1, 64, 64, 1), (1, 64, 1, 1)), ((1, 32, 128, 1), (1, 1, 128, 1)), ((1, 48, 64, 1), (1, 1, 64, 1))):
        a, b = torch.randn(sa), torch.randn(sb)
        assert _outcome(_run(compiled, a, b), (a + b).numpy()) in ("correct", "refused"), (sa, sb)


def test_a_constant_a_ratio_of_sizes_also_gives_is_kept_a_constant(task_file):
    """Bilinear upsampling by 2 adds the half-pixel offset 0.5 and scales by in / out = 0.5:
    traced on that case alone, both explain either constant. Read as the ratio, the offset
    became 2.0 on a downsampling by 2, which the file then took and answered wrongly (its
    pixels shifted); the class now checks that the ratio is still 0.5 and refuses it."""
    from sage.agent.compiler.compiler import compile_cases, trace_cases
    from sage.kernels import target_for
    from sage.npu.sandbox import run_sandboxed

    body = "torch.nn.functional.interpolate(x, size=size, mode='bilinear', align_corners=False)"
    task = task_file("x, size", body, ["torch.randn(1, 3, 256, 256), [512, 512]"])
    compiled = compile_cases(trace_cases(task), None, target_for("ascend910b2"), "t")
    for shape, size in [((1, 3, 256, 256), [512, 512]), ((1, 3, 512, 512), [256, 256])]:
        x = torch.randn(shape, generator=torch.Generator().manual_seed(shape[-1]))
        run = run_sandboxed(compiled.source, [x.numpy(), size])
        want = torch.nn.functional.interpolate(x, size=size, mode="bilinear", align_corners=False).numpy()
        assert _outcome(run, want) in (("correct",) if size == [512, 512] else ("correct", "refused"))
