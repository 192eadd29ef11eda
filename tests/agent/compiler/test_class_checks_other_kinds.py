"""A case class's checks hold up when another class's cases pass another kind of value in the
same argument: a tensor that is None elsewhere (level1/10_layer_norm's bias: "reading '.dtype'
of a NoneType is not allowed") and a list that is an int elsewhere (level1/26_avg_pool3d's
kernel_size [2, 2, 2] or 2: "'int' object is not iterable"). Each case's outputs against torch."""

from __future__ import annotations

import numpy as np
import torch

from tests.agent.compiler.kernel_text import sandbox_outputs as _run


def _compiled(task_file, args, body, cases):
    from sage.agent.compiler.compiler import compile_cases, trace_cases
    from sage.kernels import target_for

    return compile_cases(trace_cases(task_file(args, body, cases)), None, target_for("ascend910b2"), "test")


def test_an_optional_tensor_that_is_none_in_another_class(task_file) -> None:
    compiled = _compiled(task_file, "x, b", "torch.nn.functional.layer_norm(x, (8,), None, b)",
                         ["torch.randn(3, 8), torch.randn(8)", "torch.randn(3, 8), None"])
    x = torch.randn(3, 8, generator=torch.Generator().manual_seed(0))
    b = torch.randn(8, generator=torch.Generator().manual_seed(1))
    for bias in (b, None):
        (out,) = _run(compiled.source, [x.numpy(), None if bias is None else bias.numpy()])
        want = torch.nn.functional.layer_norm(x.double(), (8,), None, None if bias is None else bias.double())
        np.testing.assert_allclose(out, want.numpy(), rtol=1e-5, atol=1e-5)


def test_a_list_argument_that_is_an_int_in_another_class(task_file) -> None:
    compiled = _compiled(task_file, "x, k", "torch.nn.functional.avg_pool2d(x, k)",
                         ["torch.randn(1, 2, 4, 6), [2, 3]", "torch.randn(1, 2, 4, 6), 2"])
    x = torch.randn(1, 2, 4, 6, generator=torch.Generator().manual_seed(2))
    for k in ([2, 3], 2):
        (out,) = _run(compiled.source, [x.numpy(), k])
        np.testing.assert_allclose(out, torch.nn.functional.avg_pool2d(x.double(), k).numpy(), rtol=1e-5, atol=1e-6)
