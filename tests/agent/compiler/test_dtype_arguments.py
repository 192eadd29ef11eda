"""A forward argument that is a torch dtype (npu_swiglu_quant's `dst_type`) reaches the kernel
file as its name: the sandbox's job file carries it, and the compiled host code guards on it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from sage.bench.tasks import kernel_args, load_task

STANDIN = Path(__file__).parents[2] / "fixtures" / "standin_tasks"


def test_a_dtype_argument_reaches_the_kernel_as_its_name():
    from sage.agent.compiler.compiler import compile_cases, trace_cases
    from sage.kernels import target_for
    from tests.agent.compiler.kernel_text import sandbox_outputs

    task = load_task(STANDIN / "dynamic_quant_dst_type.py")
    compiled = compile_cases(trace_cases(task), None, target_for("ascend910b2"), task.name)
    assert "== 'int8'" in compiled.source and "torch." not in compiled.source
    for case in task.cases():
        args = kernel_args(case)
        assert args[1] == "int8"
        codes, scale = sandbox_outputs(compiled.source, args)
        x = case[0].float()
        want = x.abs().amax(-1) / 127
        np.testing.assert_allclose(scale, want.numpy(), rtol=1e-6)
        # round half to even of x / scale; within one code step where x / scale is a tie
        diff = np.abs(codes.astype(np.int32) - torch.round(x / want.unsqueeze(-1)).numpy().astype(np.int32))
        assert codes.dtype == np.int8 and diff.max() <= 1 and (diff == 0).mean() > 0.99

