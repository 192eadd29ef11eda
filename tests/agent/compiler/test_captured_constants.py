"""Tensors the forward captures (made outside torch's ops: torch.tensor of literals, numpy
results): one computed on the host from the inputs' values is refused as such, whatever the
case's seeded inputs are, unless it is a NumPy function with a torch twin
(sage/kernels/numpy_twins.py: level1/5_cumsum's np.cumsum), traced as that op."""

import numpy as np
import pytest


def test_a_tensor_computed_with_numpy_from_the_inputs_is_refused_as_host_computation(task_file):
    from sage.agent.compiler.build import Unsupported
    from sage.agent.compiler.compiler import trace_cases

    task = task_file("x", "torch.from_numpy(np.sort(x.numpy(), 0))", ["torch.randn(16)"])
    with pytest.raises(Unsupported, match="computes a tensor on the host outside torch"):
        trace_cases(task)



def test_a_tensor_computed_on_the_host_from_integer_inputs_is_refused(task_file):
    # integer inputs are not perturbed (they may be indices); the case drawn under another
    # seed has other integers, and the cumsum numpy made of them is another captured constant
    from sage.agent.compiler.build import Unsupported
    from sage.agent.compiler.compiler import trace_cases

    task = task_file("i", "torch.from_numpy(np.sort(i.numpy())) + i", ["torch.randint(0, 10, (16,))"])
    with pytest.raises(Unsupported, match="computes a tensor on the host outside torch"):
        trace_cases(task)

def test_small_literal_constants_are_written_by_a_kernel_and_match_torch(task_file):
    import numpy as np
    import torch

    from sage.agent.compiler.compiler import compile_cases, trace_cases
    from sage.kernels import target_for
    from sage.npu.sandbox import run_sandboxed

    body = "(x * torch.tensor([1.0, -2.0, 0.5, 4.0])).index_select(1, torch.tensor([3, 0, 2]))"
    task = task_file("x", body, ["torch.randn(5, 4)"])
    compiled = compile_cases(trace_cases(task), None, target_for("ascend910b2"), "test")
    assert sum(g.kind == "captured_constant" for _, g in compiled.groups) == 2
    x = np.arange(20, dtype=np.float32).reshape(5, 4)
    run = run_sandboxed(compiled.source, [x])
    assert run.error is None, run.error
    # column j of the result is x[:, idx[j]] * w[idx[j]]: idx 3 -> *4, 0 -> *1, 2 -> *0.5
    expected = np.stack([x[:, 3] * 4, x[:, 0] * 1, x[:, 2] * 0.5], axis=1)
    np.testing.assert_array_equal(run.outputs[0], expected)
    assert torch.equal(torch.from_numpy(expected), task.make_model()(torch.from_numpy(x)))


def test_a_constant_over_4_kb_is_refused_with_the_captured_constant_reason(task_file):
    from sage.agent.compiler.build import Unsupported
    from sage.agent.compiler.compiler import trace_cases

    task = task_file("x", "x + torch.tensor([float(i) for i in range(2048)])", ["torch.randn(2048)"])
    with pytest.raises(Unsupported, match="tensor constant captured by the model"):
        trace_cases(task)


def test_weights_drawn_in_every_forward_are_inputs_of_the_kernel(task_file):
    # the public conv task files build nn.Conv2d inside forward: fresh random weights per call.
    # The draws are the case's last argument (sage/bench/drawn_inputs.py): the kernel reads
    # them as inputs and gives x @ W.T + b with the case's W and b.
    from sage.agent.compiler.compiler import compile_cases, trace_cases
    from sage.bench.tasks import kernel_args
    from sage.kernels import target_for
    from sage.npu.sandbox import run_sandboxed

    task = task_file("x", "torch.nn.Linear(4, 2)(x)", ["torch.randn(3, 4)"])
    cases = trace_cases(task)
    x, (w, b) = cases[0].case
    assert (tuple(w.shape), tuple(b.shape)) == ((2, 4), (2,))
    compiled = compile_cases(cases, None, target_for("ascend910b2"), "test")
    result = run_sandboxed(compiled.source, kernel_args(cases[0].case))
    assert result.error is None
    np.testing.assert_allclose(result.outputs[0], (x @ w.T + b).numpy(), rtol=1e-5, atol=1e-5)


def test_a_draw_the_load_did_not_see_is_refused_as_such(task_file):
    # the load's probe runs the forward on meta tensors and stops where it fails; a draw after
    # that point stays a captured constant of the trace, new on every call: still refused
    from sage.agent.compiler.build import Unsupported
    from sage.agent.compiler.compiler import trace_cases

    task = task_file("x", "torch.nn.Linear(4, 2)(x)", ["torch.randn(3, 4)"])
    task._draws, task._checked = False, None     # as if the probe had stopped before the Linear
    with pytest.raises(Unsupported, match="draws new random tensors on every call"):
        trace_cases(task)


@pytest.mark.parametrize("body", ["torch.from_numpy(np.cumsum(x.cpu().numpy(), axis=1, dtype=np.float32)).to(x.device)",
                                  "torch.from_numpy(x.numpy().cumsum(1))"])
def test_a_numpy_cumsum_of_the_input_traces_as_torch_cumsum(compile_graph, body):
    # public level1/5_cumsum takes its serial sum on the host with numpy: traced as the torch
    # op it computes, the kernel is the scan's, checked against torch on other inputs
    import torch

    compiled, run = compile_graph("x", body, "torch.rand(6, 300)")
    assert [g.kind for _, g in compiled.groups] == ["scan"]
    x = torch.rand(6, 300, generator=torch.Generator().manual_seed(4))
    (out,) = run(x.numpy())
    np.testing.assert_allclose(out, torch.cumsum(x.double(), 1).numpy(), rtol=1e-6)


def test_numpy_outside_a_trace_is_numpy_again():
    # the twins live only while a trace runs: afterwards Tensor.numpy and from_numpy are torch's
    import torch

    from sage.kernels.numpy_twins import HostCopy

    a = torch.arange(4.0).numpy()
    assert type(a) is np.ndarray and not isinstance(a, HostCopy)
    assert torch.from_numpy(np.cumsum(a)).tolist() == [0.0, 1.0, 3.0, 6.0]
