"""One test per registry op: the pattern docs/architecture.md asks of a new entry.

Each row of `OP_CASES` is a torch function, its inputs, the aten op it must dispatch and
that op's cost class. The test records the call, lowers it through the registry
(`call_chain`), writes the library kernel and runs it in the simulator against torch.
Adding an op with a chain form = its registry entry + one row here.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from sage.kernels import (
    CostClass, ElementwiseSpec, Lowerer, Val, broadcast_layout, call_chain, cost_class_of, elementwise_source, op,
    inp, record_aten,
)
from sage.npu.execute import run_kernel_source

from tests.kernels.conftest import Fn


def _x(*shape, lo=-3.0, hi=3.0):
    return torch.rand(*shape, generator=torch.Generator().manual_seed(sum(shape))) * (hi - lo) + lo


OP_CASES = [
    # torch function, inputs, aten op, cost class
    (F.hardsigmoid, [_x(7, 301)], "hardsigmoid", CostClass.ELEMENTWISE),
    (torch.logaddexp, [_x(7, 301), _x(301)], "logaddexp", CostClass.BROADCAST),
    (lambda t: torch.clamp_min(t, 0.25), [_x(5, 77)], "clamp_min", CostClass.ELEMENTWISE),
    # tensor bounds, one per column (MultiKernelBench reference/broadcast/clamp_broadcast), some lo > hi
    (torch.clamp, [_x(7, 301), _x(301, lo=-2, hi=0.5), _x(301, lo=-0.5, hi=2)], "clamp", CostClass.BROADCAST),
    (lambda t, hi: torch.clamp(t, max=hi), [_x(7, 301), _x(301)], "clamp", CostClass.BROADCAST),
    (torch.clamp_min, [_x(7, 301), _x(301)], "clamp_min", CostClass.BROADCAST),
    (lambda t: F.leaky_relu(t, 0.2), [_x(5, 77)], "leaky_relu", CostClass.ELEMENTWISE),
    (torch.where, [_x(9, 65) > 0, _x(9, 65), _x(65)], "where", CostClass.BROADCAST),
    (lambda t: torch.rsub(t, 2.0), [_x(33)], "rsub", CostClass.ELEMENTWISE),
]


@pytest.mark.parametrize("fn, inputs, name, klass", OP_CASES, ids=[c[2] for c in OP_CASES])
def test_op_lowers_through_the_registry_and_matches_torch(fn, inputs, name, klass):
    (call,) = [c for c in record_aten(Fn(fn), inputs) if not c.free]
    assert call.name == name and cost_class_of(call) is klass
    expr = call_chain(call)
    assert expr is not None, f"aten.{name} has no chain form"
    operands = [t for t in call.inputs if not (t.numel == 1 and call.outputs[0].numel > 1)]
    kinds, _, _ = broadcast_layout(call.outputs[0].shape, [t.shape for t in operands])
    spec = ElementwiseSpec(expr=expr, in_dtypes=tuple(t.dtype for t in operands), kinds=tuple(kinds),
                           out_dtype=call.outputs[0].dtype)
    args = [t.numpy() for t in inputs]
    run = run_kernel_source(elementwise_source(spec), args)
    assert run.error is None, run.error
    want = fn(*inputs).numpy()
    got = run.outputs[0].reshape(want.shape)
    assert np.allclose(got, want, rtol=1e-5, atol=1e-6)


def test_hardsigmoid_lowers_to_its_definition():
    """hardsigmoid(x) = min(max(x / 6 + 1/2, 0), 1): four scalar-form instructions."""
    low = Lowerer(kinds=["full"], inputs={0: Val("full", "x0")})
    low.lower(op("hardsigmoid", inp(0)))
    assert low.lines == ["Muls(tf0, x0, 0.16666666666666666, n)", "Adds(tf0, tf0, 0.5, n)",
                         "Maxs(tf0, tf0, 0.0, n)", "Mins(tf0, tf0, 1.0, n)"]
