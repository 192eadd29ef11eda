"""The op registry: cost classes of recorded calls, semantics against torch, recipes that
use only DSL instructions, and the op sets other layers ask about."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import sage.npu.ascendc as dsl
from sage.kernels import (
    CUBE_OPS, MATMUL_OPS, OPS, ROW_OPS, VECTOR_OPS, CostClass, Promotion, call_chain, cost_class_of, is_free, op_def,
    record_aten,
)
from sage.kernels.vector_ops import ByParam, ByParamsPresent

from tests.kernels.conftest import Fn


def launched(fn, *args):
    return [c for c in record_aten(Fn(fn), list(args)) if not c.free]


X = torch.randn(8, 16)


@pytest.mark.parametrize("fn, args, name, klass", [
    (lambda t: t + 1.0, [X], "add", CostClass.ELEMENTWISE),
    (lambda a, b: a * b, [X, torch.randn(8, 1)], "mul", CostClass.BROADCAST),
    (lambda t: t.sum(-1), [X], "sum", CostClass.REDUCTION),
    (lambda t: torch.softmax(t, -1), [X], "_softmax", CostClass.SOFTMAX_NORM),
    (lambda t: F.layer_norm(t, (16,)), [X], "native_layer_norm", CostClass.SOFTMAX_NORM),
    (lambda a, b: torch.cat([a, b]), [X, X], "cat", CostClass.COPY),
    (lambda t: t.t().contiguous(), [X], "clone", CostClass.COPY),
    (lambda t: t.half(), [X], "_to_copy", CostClass.COPY),
    (lambda t, i: t[i], [X, torch.tensor([0, 3])], "index", CostClass.INDEX),
    (lambda t, i: t.gather(1, i), [X, torch.zeros(8, 2, dtype=torch.long)], "gather", CostClass.INDEX),
    (lambda t: torch.sort(t, -1).values, [X], "sort", CostClass.SORT),
    (lambda t: torch.topk(t, 3).values, [X], "topk", CostClass.SORT),
    (lambda t: torch.cumsum(t, -1), [X], "cumsum", CostClass.SCAN),
    (lambda a, b: a @ b, [X, X.t().contiguous()], "mm", CostClass.MATMUL),
    (lambda t: F.conv2d(t.view(1, 1, 8, 16), torch.ones(2, 1, 3, 3)), [X], "convolution", CostClass.CONV),
    (lambda t: F.avg_pool2d(t.view(1, 1, 8, 16), 2), [X], "avg_pool2d", CostClass.OTHER),
])
def test_recorded_calls_get_their_cost_class(fn, args, name, klass):
    (call,) = [c for c in launched(fn, *args) if c.name == name]
    assert cost_class_of(call) is klass


def test_an_unlisted_op_is_classed_by_its_shapes():
    (call,) = launched(lambda t: torch.nan_to_num(t), X)
    assert op_def(call.name) is None and cost_class_of(call) is CostClass.ELEMENTWISE


def test_views_are_free_and_in_place_variants_share_an_entry():
    assert is_free("view") and is_free("unsqueeze_") and not is_free("add")
    assert op_def("add_") is OPS["add"] and op_def("_softmax") is OPS["_softmax"]
    assert OPS["reshape"].keeps_order and not OPS["permute"].keeps_order


def test_one_definition_of_matrix_products():
    assert {"mm", "bmm", "addmm", "baddbmm", "linear", "matmul"} <= MATMUL_OPS
    assert CUBE_OPS == {"mm", "bmm", "addmm", "baddbmm"} and CUBE_OPS <= MATMUL_OPS
    assert ROW_OPS == {"sum", "mean", "amax", "amin", "max", "min", "_softmax", "_log_softmax", "native_layer_norm"}
    assert all(OPS[n].cost_class is CostClass.MATMUL for n in MATMUL_OPS)


def test_every_recipe_uses_dsl_instructions_only():
    for v in VECTOR_OPS.values():
        recipes = [r for r in (v.recipe, v.scalar_right, v.scalar_left) if r is not None]
        steps = []
        for r in recipes:
            if isinstance(r, ByParam):
                steps += [s for rr in (*r.table.values(), r.default) for s in rr]
            elif isinstance(r, ByParamsPresent):
                steps += [s for rr in r.table.values() for s in rr]
            else:
                steps += list(r)
        for instr, _ in steps:
            assert callable(getattr(dsl, instr, None)), f"{v.name}: {instr} is not a DSL instruction"
        if v.vector:
            assert callable(getattr(dsl, v.vector, None)), v.name


# -- semantics against torch: the result dtype each entry claims, on float and int operands ----------
SEMANTICS = {
    "exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "reciprocal": torch.reciprocal,
    "sigmoid": torch.sigmoid, "tanh": torch.tanh, "log1p": torch.log1p, "abs": torch.abs, "neg": torch.neg,
    "relu": torch.relu, "square": torch.square, "silu": F.silu, "mish": F.mish, "hardsigmoid": F.hardsigmoid,
    "hardswish": F.hardswish, "gelu": F.gelu, "leaky_relu": F.leaky_relu, "elu": F.elu, "softplus": F.softplus,
    "clamp": lambda t: t.clamp(-1, 1), "floor": torch.floor,
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "maximum": torch.maximum,
    "minimum": torch.minimum, "logaddexp": torch.logaddexp, "gt": torch.gt, "le": torch.le, "eq": torch.eq,
    "logical_and": torch.logical_and, "logical_not": torch.logical_not, "floor_divide": torch.floor_divide,
    "where": lambda a, b: torch.where(a > 0, a, b), "_to_copy": lambda t: t.to(torch.float16),
}
DEFAULT_FLOAT = torch.get_default_dtype()


@pytest.mark.parametrize("name", sorted(SEMANTICS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32])
def test_semantics_match_torch(name, dtype):
    entry = OPS[name]
    fn = SEMANTICS[name]
    n_args = 2 if entry.broadcast else 1
    a = ((torch.arange(20.0).reshape(4, 5) - 9.5) / 2).to(dtype)
    b = torch.tensor([[1.5, -2.5, 3.5, 1.25, 2.0]]).to(dtype)      # no zero divisor, even as int32
    args = [a, b][:n_args]
    if entry.float_only and not dtype.is_floating_point:
        with pytest.raises((RuntimeError, NotImplementedError)):
            fn(*args)
        return
    out = fn(*args)
    expected = {Promotion.SAME: dtype, Promotion.BOOL: torch.bool, Promotion.CAST: torch.float16,
                Promotion.FLOAT: dtype if dtype.is_floating_point else DEFAULT_FLOAT}[entry.promotion]
    assert out.dtype == expected
    if entry.broadcast:
        assert out.shape == (4, 5)     # the [1, 5] operand broadcast over the rows


def test_compiler_only_forms_are_not_timed_as_vendor_kernels():
    """A comparison lowers to a chain for the offline compiler, while the reference model
    times the eager comparison by formula (no vendor library form)."""
    (gt,) = launched(lambda t: t > 0.5, X)
    assert call_chain(gt) is not None
    from sage.kernels import chain_for

    assert chain_for(gt) is None
    (add,) = launched(lambda t: t + 0.5, X)
    assert chain_for(add) is not None and call_chain(add) == chain_for(add).expr
