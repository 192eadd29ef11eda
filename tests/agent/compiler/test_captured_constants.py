"""Tensors the forward captures (made outside torch's ops: torch.tensor of literals, numpy
results): one computed on the host from the inputs' values (level1/5_cumsum computes its
result with numpy) is refused as such, whatever the case's seeded inputs are."""

import pytest


def test_a_tensor_computed_with_numpy_from_the_inputs_is_refused_as_host_computation(task_file):
    from sage.agent.compiler.build import Unsupported
    from sage.agent.compiler.compiler import trace_cases

    task = task_file("x", "torch.from_numpy(x.numpy().cumsum(0))", ["torch.randn(16)"])
    with pytest.raises(Unsupported, match="computes a tensor on the host outside torch"):
        trace_cases(task)
