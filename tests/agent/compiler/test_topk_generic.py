"""top-k along an inner axis of tensors of several ranks (issue 31, level1/9_top_k): the
operand is seen as [outer, axis, inner], so the transposing copies and the row top-k are one
kernel module whatever the rank and the axis, and each kernel function of that module holds
only the classes it runs (not every one of the module's). Values against torch's."""

from __future__ import annotations

import numpy as np
import torch

from tests.agent.compiler.kernel_text import sandbox_outputs as _run

# (shape, k, dim): ranks 3 and 4, along axes 1 and 2, every one with axes before and after
CASES = [((4, 6, 5), 3, 1), ((2, 3, 4, 5), 2, 1), ((3, 2, 7, 2), 4, 2), ((5, 9, 3), 9, -2)]


def _compiled(task_file):
    from sage.agent.compiler.compiler import compile_cases, trace_cases
    from sage.kernels import target_for

    task = task_file("x, k, dim", "torch.topk(x, k, dim=dim)[0]",
                     [f"torch.randn{shape}, {k}, {dim}" for shape, k, dim in CASES])
    return compile_cases(trace_cases(task), None, target_for("ascend910b2"), "test")


def test_topk_along_inner_axes_of_any_rank_is_one_kernel_with_torchs_values(task_file):
    compiled = _compiled(task_file)
    # one code path: the copies' tile widths come from the host's square_side (one formula
    # per copy), so no case's widths coincide into a differently numbered text
    assert compiled.kernels == 1 and "def square_side(" in compiled.source
    # before: a 57 KB module per rank and axis, every kernel of it holding all four classes
    assert len(compiled.source.encode()) < 40 * 1024
    rng = np.random.default_rng(3)
    for shape, k, dim in CASES:
        x = rng.permutation(int(np.prod(shape))).astype(np.float32).reshape(shape)   # no ties
        (out,) = _run(compiled.source, [x, k, dim])
        want = torch.topk(torch.from_numpy(x), k, dim=dim)[0].numpy()
        np.testing.assert_array_equal(out, want)


def test_each_kernel_of_a_module_carries_only_the_classes_it_runs(task_file):
    import ast

    compiled = _compiled(task_file)
    tree = ast.parse(compiled.source)
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and any(getattr(d, "id", None) == "kernel" for d in fn.decorator_list):
            classes = [c.name for c in ast.walk(fn) if isinstance(c, ast.ClassDef)]
            # the copy kernels define their tile class, the sort kernel its own: one each
            assert len(classes) == 1, (fn.name, classes)


def test_largest_and_smallest_are_one_kernel_taking_the_flag_at_launch(task_file):
    from sage.agent.compiler.compiler import compile_cases, trace_cases
    from sage.kernels import target_for

    cases = [((6, 40), 5, True), ((9, 33), 4, False)]
    task = task_file("x, k, largest", "torch.topk(x, k, dim=-1, largest=largest)[0]",
                     [f"torch.randn{shape}, {k}, {largest}" for shape, k, largest in cases])
    compiled = compile_cases(trace_cases(task), None, target_for("ascend910b2"), "test")
    # one kernel text and one case class: the flag is read as int(largest) by the host
    assert compiled.kernels == 1 and compiled.rules == 1 and "int(a2)" in compiled.source
    rng = np.random.default_rng(5)
    for (shape, k, largest) in cases + [((3, 45), 7, False)]:     # a shape never compiled
        x = rng.permutation(int(np.prod(shape))).astype(np.float32).reshape(shape)
        (out,) = _run(compiled.source, [x, k, largest])
        np.testing.assert_array_equal(out, torch.topk(torch.from_numpy(x), k, dim=-1, largest=largest)[0].numpy())
