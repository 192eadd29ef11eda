"""A kernel file called with a shape none of its cases traced must give torch's result or
refuse ("no compiled case class of this kernel file takes these arguments"), never a wrong
answer or an out-of-bounds access. Known defect (issue 31, shape-generic kernels): a class
built from one case of a library kernel (matmul, flash attention) takes other sizes its
tiling rules do not cover. These tests say so until it is fixed (strict: a fix turns them
into failures to remove the mark)."""

from __future__ import annotations

import numpy as np
import pytest
import torch


def _outcome(run, want: np.ndarray) -> str:
    if run.error is not None:
        return "refused" if "no compiled case class" in run.error.message else f"error {run.error.type}"
    got = np.asarray(run.outputs[0], dtype=np.float32).reshape(-1)
    if got.size != want.size:
        return "wrong size"
    return "correct" if np.allclose(got, want.reshape(-1), rtol=2e-2, atol=2e-2) else "wrong"


@pytest.mark.xfail(strict=True, reason="a matmul class built from one case takes an unseen size (BoundsError)")
def test_a_matmul_file_called_with_an_unseen_size_is_right_or_refuses(task_file):
    from sage.agent.compiler.compiler import compile_cases, trace_cases
    from sage.kernels import target_for
    from sage.npu.sandbox import run_sandboxed

    task = task_file("a, b", "torch.matmul(a, b)", ["torch.randn(128, 64).half(), torch.randn(64, 128).half()",
                                                    "torch.randn(256, 64).half(), torch.randn(64, 256).half()"])
    compiled = compile_cases(trace_cases(task), None, target_for("ascend910b2"), "t")
    a, b = torch.randn(384, 64).half(), torch.randn(64, 384).half()
    run = run_sandboxed(compiled.source, [a.numpy(), b.numpy()])
    assert _outcome(run, (a.float() @ b.float()).numpy()) in ("correct", "refused")
