"""Shape-generic kernel files (sage/agent/compiler/generic/): cases of one class share one
kernel and one host function that computes their sizes and tiling at launch, so the file
stays small however many cases a task has, and a shape of the class that was never traced
runs the same kernel with its own tiling. Outputs are checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from tests.agent.compiler.kernel_text import sandbox_outputs as _run


def _compiled(task_file, args: str, body: str, cases: list[str]):
    from sage.agent.compiler.compiler import compile_cases, trace_cases
    from sage.kernels import target_for

    task = task_file(args, body, cases)
    return compile_cases(trace_cases(task), None, target_for("ascend910b2"), "test")


SHAPES = [(7,), (3, 5), (2, 3, 40), (64, 129), (1,), (4, 1, 1, 9)]


def test_an_elementwise_op_over_many_shapes_is_one_kernel_for_every_rank(task_file):
    cases = [f"torch.randn{s}" for s in SHAPES]
    compiled = _compiled(task_file, "x", "torch.sigmoid(x) * 3.0 + 1.0", cases)
    assert compiled.rules == 1 and compiled.kernels == 1 and compiled.exact == 0
    rng = np.random.default_rng(0)
    # the shapes compiled, and two it never saw (another rank, another size)
    for shape in SHAPES + [(5, 6, 7), (1000,)]:
        x = rng.standard_normal(shape).astype(np.float32)
        (out,) = _run(compiled.source, [x])
        assert out.shape == shape          # [1] stays [1]; rank 0 is not rank 1
        np.testing.assert_allclose(out, 3.0 / (1.0 + np.exp(-x.astype(np.float64))) + 1.0, rtol=1e-5, atol=1e-5)


def test_a_scalar_argument_is_read_at_launch_not_baked_in(task_file):
    # elu-like: the constant is the case's Python float, passed to the kernel each launch
    cases = ["torch.randn(4, 8), 0.5", "torch.randn(3, 17), 2.25"]
    compiled = _compiled(task_file, "x, a", "torch.where(x > 0, x, x * a)", cases)
    assert compiled.kernels == 1
    x = np.linspace(-4, 4, 6 * 11, dtype=np.float32).reshape(6, 11)
    for a in (0.5, 2.25, -7.0):
        (out,) = _run(compiled.source, [x, a])
        np.testing.assert_allclose(out, np.where(x > 0, x, x * np.float32(a)), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_a_reduction_over_rows_of_many_lengths_shares_its_kernel(task_file, dtype):
    shapes = [(4, 8), (3, 100), (2, 5000), (9, 1)]
    cases = [f"torch.randn{s}.to(torch.{dtype})" for s in shapes]
    compiled = _compiled(task_file, "x", "x.sum(-1)", cases)
    assert compiled.kernels < len(shapes) and compiled.exact == 0
    for shape in shapes + [(5, 333)]:
        x = (np.arange(np.prod(shape)) % 7 - 3).astype(dtype).reshape(shape)
        (out,) = _run(compiled.source, [x])
        np.testing.assert_array_equal(out, x.astype(np.float64).sum(-1).astype(dtype))


def test_fifty_cases_stay_far_under_the_source_limit(task_file):
    cases = [f"torch.randn({1 + 3 * k}, {2 + k % 7}, {5 + 11 * k})" for k in range(50)]
    compiled = _compiled(task_file, "x, y", "torch.nn.functional.hardsigmoid(x) * y",
                         [f"{c}, {c}" for c in cases])
    assert len(compiled.source.encode()) < 64 * 1024
    x = np.linspace(-5, 5, 3 * 4 * 60, dtype=np.float32).reshape(3, 4, 60)
    y = np.full_like(x, 2.0)
    (out,) = _run(compiled.source, [x, y])
    np.testing.assert_allclose(out, np.clip(x / 6 + 0.5, 0, 1) * 2.0, rtol=1e-6, atol=1e-7)


def test_a_dtype_never_compiled_is_no_case_class(task_file):
    from sage.npu.sandbox import run_sandboxed

    compiled = _compiled(task_file, "x", "x + 1.0", ["torch.randn(4, 4)"])
    run = run_sandboxed(compiled.source, [np.zeros((4, 4), np.float16)])
    assert run.error is not None and "no compiled case class" in run.error.message


def test_a_broadcast_result_takes_its_sizes_from_several_inputs(task_file):
    # logaddexp of [2] and [4, 16, 1, 1] is [4, 16, 1, 2]: the result's dimensions come from
    # both inputs (host helpers bshape/bsize), one class for the pattern, not one per case
    cases = ["torch.randn(2), torch.randn(4, 16, 1, 1)", "torch.randn(5), torch.randn(3, 2, 1, 1)",
             "torch.randn(7), torch.randn(2, 9, 1, 1)"]
    compiled = _compiled(task_file, "x, y", "x + y * 2.0", cases)
    assert compiled.rules == 1 and compiled.exact == 0
    rng = np.random.default_rng(1)
    for xs, ys in (((2,), (4, 16, 1, 1)), ((6,), (5, 3, 1, 1))):
        x, y = rng.standard_normal(xs).astype(np.float32), rng.standard_normal(ys).astype(np.float32)
        (out,) = _run(compiled.source, [x, y])
        np.testing.assert_allclose(out, x + y * np.float32(2.0), rtol=1e-6)


def test_an_elementwise_class_over_a_one_element_operand_is_not_taken_by_a_broadcast_that_grows(task_file):
    # x [n] with y of one element gives x's shape; x [4] with y [2, 1, 1, 1, 1] does not,
    # although y has one element per row: the classes check the broadcast's shape
    cases = ["torch.randn(7), torch.randn(1)", "torch.randn(2, 9), torch.randn(1, 1)",
             "torch.randn(4), torch.randn(2, 1, 1, 1, 1)"]
    compiled = _compiled(task_file, "x, y", "torch.logaddexp(x, y)", cases)
    assert compiled.exact == 0
    rng = np.random.default_rng(2)
    for xs, ys in (((7,), (1,)), ((2, 9), (1, 1)), ((4,), (2, 1, 1, 1, 1)), ((11,), (1,))):
        x, y = rng.standard_normal(xs).astype(np.float32), rng.standard_normal(ys).astype(np.float32)
        (out,) = _run(compiled.source, [x, y])
        np.testing.assert_allclose(out, np.logaddexp(x, y), rtol=1e-5, atol=1e-6)


def test_a_constant_made_of_scalar_arguments_is_computed_by_the_host(task_file):
    # the forward multiplies its Python floats before the graph sees them: a * b is one
    # constant, which the host recomputes per call (elu_backward's input_scale * alpha * scale)
    cases = ["torch.randn(4, 8), 3.0, 4.0", "torch.randn(2, 5), 5.0, -5.0", "torch.randn(9), 0.5, 0.25"]
    compiled = _compiled(task_file, "x, a, b", "x * (a * b) + b", cases)
    assert compiled.rules == 1 and compiled.exact == 0
    x = np.linspace(-2, 2, 30, dtype=np.float32).reshape(5, 6)
    for a, b in ((3.0, 4.0), (1.5, -7.25)):
        (out,) = _run(compiled.source, [x, a, b])
        np.testing.assert_allclose(out, x * np.float32(a * b) + np.float32(b), rtol=1e-6)


ELU = ("torch.where(x > 0, torch.as_tensor(s, dtype=x.dtype) * x, torch.as_tensor(a, dtype=x.dtype) * "
       "torch.as_tensor(s, dtype=x.dtype) * (torch.exp(torch.as_tensor(k, dtype=x.dtype) * x) - 1))")


def test_constants_rounded_to_the_input_dtype_reach_the_kernel_unrounded(task_file):
    # as_tensor(alpha, dtype=float16) rounds alpha in eager torch, not in the float64 truth:
    # the host passes the Python float and the kernel computes in float32, rounding once.
    # level0/13_elu case 4: alpha * scale * (exp(-95 x) - 1) at x = -0.10205 is 65519.89 in
    # the truth (65504 in float16); with alpha and scale rounded first it is 65551, inf.
    # -95.0 rounds to itself: that case is still of the class of those whose k does round.
    cases = ["torch.randn(21, 19, 16, 7).half(), 8.153589118365417, 0.49504242433451395, -95.0",
             "torch.randn(3, 40).half(), 6.039804185616177, -80.86322900813678, -27.619739081366276"]
    compiled = _compiled(task_file, "x, a, s, k", ELU, cases)
    assert compiled.rules == 1 and compiled.exact == 0
    x = np.full((4, 8), -0.10205078125, np.float16)
    x[0, :4] = [0.5, -0.001, 1.5, -0.05]
    for a, s, k in ((8.153589118365417, 0.49504242433451395, -95.0), (6.0398, -80.8632, -27.6197)):
        (out,) = _run(compiled.source, [x, a, s, k])
        t = x.astype(np.float64)
        truth = np.where(t > 0, s * t, a * s * (np.exp(k * t) - 1)).astype(np.float16)
        np.testing.assert_allclose(out.astype(np.float64), truth.astype(np.float64), rtol=2e-3)
        assert np.isfinite(out).all() == np.isfinite(truth).all()


def test_a_negative_integer_argument_reaches_its_own_class(task_file):
    # a class checks the values its cases agree on as 0, 1 or other; "other" is `not in
    # (0, 1)` on the host (a test `>= 2` refused the class's own case of n = -3)
    compiled = _compiled(task_file, "x, n", "x + n", ["torch.randn(4, 8), -3", "torch.randn(2, 5), -5"])
    assert compiled.rules == 1          # n reaches the kernel as float(n), a float constant of the graph
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for n in (-3, 7):
        (out,) = _run(compiled.source, [x, n])
        np.testing.assert_array_equal(out, x + n)


def test_a_group_whose_symbolic_run_fails_gets_its_own_concrete_kernel(task_file):
    # when only the traced generator refuses (a tile that fits the case's sizes but not the
    # symbolic decisions), the case keeps the kernel written for its sizes: no parameters,
    # an empty tiling, never merged
    from sage.agent.compiler.build import Unsupported
    from sage.agent.compiler.generic.casecode import traced
    from sage.agent.compiler.lowerings import lower_group
    from sage.agent.compiler.schedule import Schedule
    from sage.kernels import target_for
    from sage.kernels.symbolic import active

    compiled = _compiled(task_file, "x", "x * 2.0 + 1.0", ["torch.randn(5, 7)"])
    case = compiled.cases[0]
    group, prog = case.plan.groups[0], case.built.program

    def lower():
        if active() is not None:
            raise Unsupported("refused under the trace")
        return lower_group(group, prog, "g", Schedule(), target_for("ascend910b2"))

    launch = traced(lower, prog)
    assert launch.values == [] and launch.fields == [] and launch.launch.program is None
    assert "tiling" in launch.kernel and "td0" not in launch.kernel
