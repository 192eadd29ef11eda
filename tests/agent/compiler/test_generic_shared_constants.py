"""A constant an expression repeats is one parameter of the shape-generic kernel
(generic/lift.py), so the kernel keeps the common subexpressions the per-case kernel had.

Issue 31's regression: with each copy of softcapping's cap its own parameter, the generic
kernel of level2/15 computed tanh(x / cap) * cap twice per element (and level2/14's mean
four times), doubling the vector work: device 11.0 -> 18.6 us. The checks here are counts
derived by hand from the formula, the simulated device time against the kernel lowered for
its case alone (what the schedule search timed), and outputs against numpy."""

from __future__ import annotations

import numpy as np

from tests.agent.compiler.kernel_text import sandbox_outputs as _run

SOFTCAP = "torch.softmax(torch.tanh(x / c) * c, -1)"


def _compiled(task_file, args: str, body: str, cases: list[str]):
    from sage.agent.compiler.compiler import compile_cases, trace_cases
    from sage.kernels import target_for

    return compile_cases(trace_cases(task_file(args, body, cases)), None, target_for("ascend910b2"), "test")


def _softcap(x: np.ndarray, c: float) -> np.ndarray:
    z = np.tanh(x.astype(np.float64) / c) * c
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_lifting_gives_equal_constants_one_parameter_and_a_guard():
    from sage.agent.compiler.generic.lift import lift, lifting
    from sage.kernels import Const, Inp, Op
    from sage.kernels.symbolic import Trace, tracing

    tree = Op("add", (Op("mul", (Inp(0), Const(50.0))), Op("mul", (Op("div", (Inp(0), Const(50.0))),
                                                                    Const(0.5))), Const(-0.0), Const(0.0),
                      Const(float("nan")), Const(float("nan")), Const(2)), ())
    with tracing(Trace()) as trace, lifting(trace, lambda name: False):
        out = lift(tree)
    first, second = out.args[0].args[1].value, out.args[1].args[0].args[1].value
    # one parameter per constant traced (the host computes each), the repeat reads the first's
    assert trace.values[:3] == [50.0, 50.0, 0.5] and len(trace.values) == 8
    assert first.formula == second.formula == ("p", 0)
    assert trace.guards == {("==", ("p", 1), ("p", 0)): True}
    # -0.0 is not 0.0, NaN equals nothing, 2 is an int: each its own parameter
    zeros, nans = out.args[2:4], out.args[4:6]
    assert zeros[0].value.formula != zeros[1].value.formula
    assert nans[0].value.formula != nans[1].value.formula
    assert out.args[6].value.formula == ("p", 7)


def test_softcapped_softmax_computes_tanh_once(task_file):
    # tanh(x / c) * c appears twice in softmax's tree (the max and the exp): by hand the
    # kernel needs one Exp for the tanh (2 / (1 + exp(-2y)) - 1) and one for the softmax
    compiled = _compiled(task_file, "x, c", SOFTCAP, ["torch.randn(64, 256), 50.0"])
    assert compiled.kernels == 1 and compiled.exact == 0
    assert compiled.source.count("Exp(") == 2
    x = np.linspace(-300, 300, 64 * 256, dtype=np.float32).reshape(64, 256)
    for c in (50.0, 30.0):                      # a cap never compiled is read at launch
        (out,) = _run(compiled.source, [x, c])
        np.testing.assert_allclose(out, _softcap(x, c), rtol=1e-5, atol=1e-7)


def test_the_generic_kernel_is_no_slower_than_the_kernel_for_its_case_alone(task_file):
    # what the schedule search timed is the group lowered for the case's sizes; the file's
    # shape-generic kernel of the same schedule must not do more work than that on the device
    from sage.agent.compiler.harness import group_file
    from sage.agent.compiler.lowerings import lower_group
    from sage.agent.compiler.schedule import Schedule
    from sage.kernels import target_for
    from sage.npu.sandbox import run_sandboxed

    compiled = _compiled(task_file, "x, c", SOFTCAP, ["torch.randn(512, 256), 50.0"])
    case = compiled.cases[0]
    prog = case.built.program
    (group,) = case.plan.groups
    launch = lower_group(group, prog, "g", compiled.schedules.get(case.keys[0], Schedule()),
                         target_for("ascend910b2"))
    x = np.random.default_rng(0).standard_normal((512, 256)).astype(np.float32)
    source, taken = group_file(launch, prog)
    assert taken == ["a0"]                     # the constant is written into the kernel alone
    alone = run_sandboxed(source, [x])
    generic = run_sandboxed(compiled.source, [x, 50.0])
    assert alone.profile is not None and generic.profile is not None
    assert generic.profile.device_us <= alone.profile.device_us * 1.02


def test_cases_whose_repeated_constants_differ_each_get_their_own_kernel_and_are_right(task_file):
    # exp(x * a) + exp(x * b): with a == b one product and one Exp; with a != b two of each.
    # The guard a == b keeps a differing case (compiled or not) off the shared kernel.
    compiled = _compiled(task_file, "x, a, b", "torch.exp(x * a) + torch.exp(x * b)",
                         ["torch.randn(8, 40), 0.5, 0.5", "torch.randn(8, 40), 0.5, 0.25"])
    assert compiled.kernels == 2 and compiled.exact == 0
    # the two kernels may share one text (generic/unify.py): count the Exps each case runs
    from sage.npu.sandbox import run_sandboxed

    y = np.zeros((8, 40), np.float32)
    exps = [sum(e.get("name") == "Exp" for e in run_sandboxed(compiled.source, [y, a, b], trace=True).trace or [])
            for a, b in ((0.5, 0.5), (0.5, 0.25))]
    assert exps[0] > 0 and exps[1] == 2 * exps[0]
    x = np.linspace(-3, 3, 8 * 40, dtype=np.float32).reshape(8, 40)
    for a, b in ((0.5, 0.5), (0.5, 0.25), (-1.0, 2.0)):
        (out,) = _run(compiled.source, [x, a, b])
        want = np.exp(x.astype(np.float64) * a) + np.exp(x.astype(np.float64) * b)
        np.testing.assert_allclose(out, want, rtol=1e-5)
