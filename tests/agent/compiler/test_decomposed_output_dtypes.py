"""A decomposed op's result has the dtype the op itself returns for its operands: the
recorder casts to it (torch's CPU kernels have op-specific rules, mish_backward returns its
input's dtype), and the kernel returns what the eager reference does."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sage.kernels import trace_graph
from tests.kernels.conftest import Fn


A = torch.ops.aten
H, F = torch.float16, torch.float32
# (op, extra Python arguments, grad dtype, input dtype, the dtype eager CPU torch returns)
CASES = [
    (A.mish_backward, (), H, F, F),
    (A.mish_backward, (), F, H, H),          # CPU mish_backward: its input's dtype, not the promoted one
    (A.silu_backward, (), H, F, F),
    (A.hardswish_backward, (), H, F, F),
    (A.softplus_backward, (1.0, 20.0), H, F, F),
    (A.leaky_relu_backward, (0.01, False), H, F, F),
    (A.threshold_backward, (0.0,), H, F, F),
]


@pytest.mark.parametrize("fn, extra, g_dtype, x_dtype, expected", CASES,
                         ids=[f"{c[0].__name__}-{c[2]}-{c[3]}".replace("torch.", "") for c in CASES])
def test_the_traced_result_has_the_ops_own_dtype_and_value(fn, extra, g_dtype, x_dtype, expected):
    g = torch.randn(16).to(g_dtype)
    x = (torch.linspace(-4, 4, 16)).to(x_dtype)
    model = Fn(lambda a, b: fn(a, b, *extra))
    graph = trace_graph(model, [g, x], decompose=True)
    (out,) = graph.outputs
    assert graph.dtypes[out] == str(expected).removeprefix("torch.")
    # the same recording, run: the decomposition computes what the op does (one rounding)
    traced = _run_decomposed(model, [g, x])
    eager = fn(g, x, *extra)
    assert traced.dtype == eager.dtype == expected
    tol = 1e-3 if expected == H else 1e-5
    torch.testing.assert_close(traced.double(), fn(g.double(), x.double(), *extra).to(expected).double(),
                               rtol=tol, atol=tol)


def _run_decomposed(model, args):
    from sage.kernels.record import Graph, _origins, _Recorder

    with torch.no_grad(), _Recorder(_origins(model, args), Graph(), decompose=True):
        return model(*args)


def test_mish_backward_of_a_half_grad_and_a_float_input_returns_float(compile_graph):
    _, run = compile_graph("g, x", "torch.ops.aten.mish_backward(g, x)",
                           "torch.randn(8, dtype=torch.float16), torch.randn(8)")
    g = np.array([1, -2, 0.5, 3, -1, 0.25, 2, 1], np.float16)
    x = np.linspace(-3, 3, 8).astype(np.float32)
    (out,) = run(g, x)
    assert out.dtype == np.float32
    expected = torch.ops.aten.mish_backward(torch.from_numpy(g).double(), torch.from_numpy(x).double())
    np.testing.assert_allclose(out, expected.numpy(), rtol=1e-4, atol=1e-5)


def test_the_ops_dtypes_are_learnt_once_per_signature_not_per_size():
    """The op is run for its dtypes once per argument signature (dtypes, 0-dim or not, scalar
    kinds): a larger case of the same signature reuses them, another signature does not."""
    from sage.kernels import record

    def trace(g_dtype, x_dtype, n):
        graph = trace_graph(Fn(lambda a, b: A.mish_backward(a, b)),
                            [torch.randn(n).to(g_dtype), torch.randn(n).to(x_dtype)], decompose=True)
        return graph.dtypes[graph.outputs[0]]

    record._result_dtypes.clear()
    assert trace(F, H, 16) == "float16"
    assert len(record._result_dtypes) == 1
    assert trace(F, H, 4000) == "float16"      # the same signature, larger: no new entry
    assert len(record._result_dtypes) == 1
    assert trace(H, F, 16) == "float32"        # another signature is run for its own
    assert len(record._result_dtypes) == 2
    key = record._dtype_key(A.mish_backward.default, (torch.ones(2), torch.ones(())), {})
    assert key != record._dtype_key(A.mish_backward.default, (torch.ones(2), torch.ones(2)), {})
