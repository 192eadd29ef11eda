"""Ops outside aten that carry a composite body (the torch_npu stand-ins) compile through
that body: the compiler records its aten ops, while the reference model's trace keeps the
one fused operator it times. Inside an op's dispatch, torch hands a mode the overloads that
autograd would otherwise have decomposed (where.ScalarOther, __and__, einsum, isfinite);
each has a lowering, checked against torch."""

from __future__ import annotations

import numpy as np
import torch
from torch.library import custom_op

from sage.kernels import register_extension_decomposition


@custom_op("sage_test::dispatch_level_ops", mutates_args=())
def _dispatch_level_ops(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    both = (x > 0) & (y > 0)
    either = (x > 1) | (y < -1)
    z = torch.where(both, x, 2.0) + torch.where(either, -1.5, y)
    z = torch.where(torch.isfinite(z), z, torch.zeros_like(z))
    return z + torch.einsum("ij,kj->ik", x, y)[:, :1]


_dispatch_level_ops.register_fake(lambda x, y: torch.empty_like(x))
register_extension_decomposition("sage_test::dispatch_level_ops", _dispatch_level_ops._init_fn)


def _plain(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The same semantics written at the top level, where autograd decomposes as usual."""
    both = torch.logical_and(x > 0, y > 0)
    either = torch.logical_or(x > 1, y < -1)
    z = torch.where(both, x, torch.full_like(x, 2.0)) + torch.where(either, torch.full_like(y, -1.5), y)
    return z + (x @ y.T)[:, :1]


def test_a_registered_body_is_recorded_by_the_compiler_and_the_op_by_the_reference():
    from sage.kernels import trace_graph

    class M(torch.nn.Module):
        def forward(self, x, y):
            return torch.ops.sage_test.dispatch_level_ops(x, y)

    args = [torch.randn(6, 8), torch.randn(6, 8)]
    whole = {n.call.name for n in trace_graph(M(), args).nodes}
    assert whole == {"dispatch_level_ops"}
    parts = {(n.call.name, n.call.overload) for n in trace_graph(M(), args, decompose=True).nodes}
    assert ("dispatch_level_ops", "default") not in parts
    # what reaches the recorder inside another op's dispatch (no autograd decomposition there)
    assert {("where", "ScalarOther"), ("where", "ScalarSelf"), ("__and__", "Tensor"), ("__or__", "Tensor")} <= parts
    assert not any(name in ("einsum", "isfinite") for name, _ in parts)   # recorded as torch decomposes them


def test_the_compiled_body_matches_torch(compile_graph):
    x = torch.randn(6, 8, generator=torch.Generator().manual_seed(3))
    y = torch.randn(6, 8, generator=torch.Generator().manual_seed(4))
    _, run = compile_graph("x, y", "torch.ops.sage_test.dispatch_level_ops(x, y)",
                           "torch.randn(6, 8), torch.randn(6, 8)")
    (got,) = run(x.numpy(), y.numpy())
    want = _plain(x, y)
    assert torch.allclose(want, torch.ops.sage_test.dispatch_level_ops(x, y), atol=1e-6)
    np.testing.assert_allclose(got.reshape(6, 8), want.numpy(), rtol=1e-5, atol=1e-5)


def test_a_torch_npu_standin_compiles_to_its_documented_result(compile_graph):
    from sage.bench import torch_npu_standin as npu

    x = torch.randn(2, 4, 16, generator=torch.Generator().manual_seed(5))
    cos = torch.randn(1, 4, 16, generator=torch.Generator().manual_seed(6))
    sin = torch.randn(1, 4, 16, generator=torch.Generator().manual_seed(7))
    _, run = compile_graph("x, c, s", "__import__('sage.bench.torch_npu_standin', fromlist=['npu']).npu_rotary_mul(x, c, s)",
                           "torch.randn(2, 4, 16), torch.randn(1, 4, 16), torch.randn(1, 4, 16)")
    (got,) = run(x.numpy(), cos.numpy(), sin.numpy())
    # rotate by halves: [-x2, x1] (torch_npu.npu_rotary_mul, rotary_mode "half")
    rotated = torch.cat([-x[..., 8:], x[..., :8]], dim=-1)
    want = x * cos + rotated * sin
    assert torch.allclose(npu.npu_rotary_mul(x, cos, sin), want, atol=1e-6)
    np.testing.assert_allclose(got.reshape(want.shape), want.numpy(), rtol=1e-5, atol=1e-5)
