"""A forward argument that is a list of tensors (torch.cat's, as level1/13_cat passes it) is one
kernel input per tensor: the kernel file's forward takes the list, checks its length and each
tensor's shape and dtype, and launches on the tensors; the sandbox hands the host code device
handles for the list's tensors, as torch_npu would, never their data."""

from __future__ import annotations

import numpy as np

from tests.agent.compiler.kernel_text import sandbox_outputs as _run

CASES = ["[torch.randn(3), torch.randn(5)], 0",
         "[torch.randn(2, 4), torch.randn(2, 4), torch.randn(2, 1)], 1"]


def _compiled(task_file):
    from sage.agent.compiler.compiler import compile_cases, trace_cases
    from sage.kernels import target_for

    task = task_file("xs, dim", "torch.cat(xs, dim=dim) * 2.0", CASES)
    return compile_cases(trace_cases(task), None, target_for("ascend910b2"), "test")


def test_a_list_of_tensors_compiles_per_list_length_and_matches_numpy(task_file):
    compiled = _compiled(task_file)
    assert len(compiled.cases) == 2
    a, b = np.arange(3, dtype=np.float32), np.arange(10, 15, dtype=np.float32)
    (out,) = _run(compiled.source, [[a, b], 0])
    np.testing.assert_array_equal(out, np.array([0, 2, 4, 20, 22, 24, 26, 28], np.float32))
    x = np.ones((2, 4), np.float32)
    y = np.full((2, 4), 3, np.float32)
    z = np.array([[7], [8]], np.float32)
    (out,) = _run(compiled.source, [[x, y, z], 1])
    np.testing.assert_array_equal(out, 2 * np.concatenate([x, y, z], axis=1))


def test_a_list_of_another_length_is_no_compiled_case(task_file):
    from sage.npu.sandbox import run_sandboxed

    compiled = _compiled(task_file)
    run = run_sandboxed(compiled.source, [[np.zeros(3, np.float32)] * 4, 0])
    assert run.error is not None and "no compiled case" in run.error.message


def test_an_int_class_does_not_take_a_list_in_its_place(task_file):
    """split's size is an int in some cases and a list in others: the int's class read it as a
    size, and `64 * [64, 128, 64]` passed every test it made (public level1/14_split case 30)."""
    from sage.agent.compiler.compiler import compile_cases, trace_cases
    from sage.kernels import target_for

    task = task_file("x, s", "torch.split(x, s)", ["torch.randn(256), 64", "torch.randn(256), [64, 128, 64]"])
    compiled = compile_cases(trace_cases(task), None, target_for("ascend910b2"), "test")
    x = np.arange(256, dtype=np.float32)
    for size, want in ((64, np.split(x, 4)), ([64, 128, 64], np.split(x, [64, 192]))):
        outs = _run(compiled.source, [x, size])
        assert [o.tolist() for o in outs] == [w.tolist() for w in want]
