"""From a traced forward to what a library kernel computes.

The forward is rebuilt as one expression over its inputs: elementwise aten calls become
library chain ops (by the op registry's chain forms, `sage.kernels.call_chain`), views
that keep the element order pass their operand through, and the row operators (softmax,
norms, last-axis reductions) and the matrix products (the registry's cube forms) become
nodes of their own. The synthesizer then recognises the shapes
it has templates for:

- a pure elementwise chain (any broadcast the library's [R, C] layout can express);
- one row operator on an input (softmax, log-softmax, layer norm, sum/mean/max/min);
- RMS norm written out in elementwise ops around a mean (x * rsqrt(mean(x^2) + eps) * w);
- a matrix product with an elementwise epilogue.

Anything else raises `NoTemplate` with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sage.kernels import (
    KERNEL_DTYPES, Const, CubeForm, Graph, Inp, Op, base_name, broadcast_layout, call_chain, grouped_layout, op_def,
)


class NoTemplate(Exception):
    """The operator is outside the classes the offline synthesizer has templates for."""


@dataclass(frozen=True)
class Leaf:
    """A forward input or a Model parameter, by value id."""

    vid: int


@dataclass(frozen=True)
class Reduce:
    kind: str                 # sum | mean | max | min (over the last axis)
    arg: Any
    keepdim: bool


@dataclass(frozen=True)
class RowOp:
    op: str                   # softmax | log_softmax | layer_norm
    args: tuple               # x[, weight, bias]
    eps: float = 0.0


@dataclass(frozen=True)
class Transposed:
    """A matrix read with its two axes swapped (a.T): only a matrix product can take it,
    by loading its tiles transposed."""

    arg: Any


@dataclass(frozen=True)
class MatMul:
    a: Any
    b: Any
    bias: Any = None          # addmm's bias operand


class ExprBuilder:
    def __init__(self, graph: Graph) -> None:
        self.g = graph
        self.memo: dict[int, Any] = {}

    def build(self, vid: int) -> Any:
        if vid not in self.memo:
            self.memo[vid] = self._build(vid)
        return self.memo[vid]

    def _build(self, vid: int) -> Any:
        g = self.g
        if vid in g.inputs or vid in g.params:
            return Leaf(vid)
        node = g.producer.get(vid)
        if node is None:
            raise NoTemplate("the forward uses a tensor it did not receive as an input (a captured constant)")
        call = node.call
        entry = op_def(call.name)
        if call.free:
            if self._is_matrix_transpose(node):
                return Transposed(self.build(node.args[0]))
            if entry is None or not entry.keeps_order:
                raise NoTemplate(f"aten.{call.qualname} reorders or slices data; no template moves data that way")
            return self.build(node.args[0])
        row = entry.row if entry is not None else None
        if row is not None and row.op in ("sum", "mean", "max", "min") and not row.indices:
            return self._reduction(node, row.op)
        if row is not None and row.op in ("softmax", "log_softmax"):
            self._check_last_axis(node, call.scalars[0])
            return RowOp(row.op, (self.build(node.args[0]),))
        if row is not None and row.op == "layer_norm":
            shape = call.scalars[0]
            if len(shape) != 1:
                raise NoTemplate("layer norm over more than the last axis has no template")
            if node.outs.index(vid) != 0:
                raise NoTemplate("the forward uses layer norm's saved mean/rstd")
            eps = float(call.scalars[-1])
            return RowOp("layer_norm", tuple(self.build(a) for a in node.args), eps)
        if entry is not None and entry.cube is not None:
            return self._matmul(node, entry.cube)
        return self._elementwise(node, vid)

    @staticmethod
    def _is_matrix_transpose(node) -> bool:
        """t / permute / transpose swapping the only two axes of a matrix."""
        call = node.call
        if len(call.inputs) != 1 or len(call.inputs[0].shape) != 2:
            return False
        name = base_name(call.name)
        if name in ("t", "numpy_T", "mT"):
            return True
        if name == "permute":
            return [d % 2 for d in call.scalars[0]] == [1, 0]
        if name == "transpose":
            return sorted(d % 2 for d in call.scalars[:2]) == [0, 1]
        return False

    def _check_last_axis(self, node, dim: Any) -> None:
        ndim = len(node.call.inputs[0].shape)
        dims = dim if isinstance(dim, list) else [dim]
        if len(dims) != 1 or dims[0] not in (-1, ndim - 1):
            raise NoTemplate(f"aten.{node.call.qualname} over dims {dims}: only the last axis has a template")

    def _reduction(self, node, kind: str) -> Reduce:
        call = node.call
        if not call.scalars or call.scalars[0] in (None, []):
            raise NoTemplate(f"aten.{call.qualname} reduces every axis; only last-axis reductions have a template")
        self._check_last_axis(node, call.scalars[0])
        keepdim = bool(call.scalars[1]) if len(call.scalars) > 1 else bool(call.kwargs.get("keepdim", False))
        if call.kwargs.get("dtype") or (len(call.scalars) > 2 and call.scalars[2]):
            raise NoTemplate(f"aten.{call.qualname} with an output dtype has no template")
        return Reduce(kind, self.build(node.args[0]), keepdim)

    def _matmul(self, node, form: CubeForm) -> MatMul:
        call = node.call
        if form.bias is not None:
            if call.scalars and any(float(s) != 1.0 for s in call.scalars if isinstance(s, (int, float))):
                raise NoTemplate(f"{base_name(call.name)} with beta/alpha other than 1 has no template")
            bias, a, b = (self.build(node.args[i]) for i in (form.bias, form.a, form.b))
            return MatMul(a, b, bias)
        shapes = [t.shape for t in call.inputs]
        batched = all(len(sh) == 3 for sh in shapes) and shapes[0][0] == shapes[1][0]
        if not batched and any(len(sh) != 2 for sh in shapes):
            raise NoTemplate("a matrix product over broadcast batches has no template (2-D, or 3-D with one batch)")
        return MatMul(self.build(node.args[form.a]), self.build(node.args[form.b]))

    def _elementwise(self, node, vid: int) -> Any:
        call = node.call
        if len(node.outs) != 1:
            raise NoTemplate(f"aten.{call.qualname} has no elementwise template")
        expr = call_chain(call)
        if expr is None:
            raise NoTemplate(f"aten.{call.qualname} has no template (inputs {call.describe()})")
        out = call.outputs[0]
        operands = []
        for meta, arg in zip(call.inputs, node.args):
            folded = meta.value is not None and meta.numel == 1 and out.numel > 1
            if folded and (arg in self.g.inputs or arg in self.g.params):
                # Baking an input's value into the kernel would read tensor data on the host.
                raise NoTemplate("a one-element input tensor used as a scalar has no template")
            if not folded:
                operands.append(arg)
        return _substitute(expr, [self.build(a) for a in operands])


def _substitute(expr: Any, operands: list[Any]) -> Any:
    if isinstance(expr, Inp):
        return operands[expr.index]
    if isinstance(expr, Op):
        return Op(expr.name, tuple(_substitute(a, operands) for a in expr.args), expr.params)
    return expr


def strip(expr: Any) -> Any:
    """Drops identity ops (copies, dtype casts): the kernel casts once at its ends."""
    while isinstance(expr, Op) and expr.name == "identity":
        expr = expr.args[0]
    return expr


def walk(expr: Any):
    yield expr
    if isinstance(expr, Op):
        for a in expr.args:
            yield from walk(a)
    elif isinstance(expr, (Reduce,)):
        yield from walk(expr.arg)
    elif isinstance(expr, RowOp):
        for a in expr.args:
            yield from walk(a)
    elif isinstance(expr, Transposed):
        yield from walk(expr.arg)
    elif isinstance(expr, MatMul):
        for a in (expr.a, expr.b, expr.bias):
            if a is not None:
                yield from walk(a)


def leaves_in_order(expr: Any) -> list[Leaf]:
    seen: dict[Leaf, None] = {}
    for e in walk(expr):
        if isinstance(e, Leaf):
            seen.setdefault(e, None)
    return list(seen)


def is_pure_chain(expr: Any) -> bool:
    return all(isinstance(e, (Op, Const, Leaf)) for e in walk(expr))


def to_chain(expr: Any, index: dict[Leaf, int]) -> Any:
    """Leaves → library `Inp(k)`."""
    if isinstance(expr, Leaf):
        return Inp(index[expr])
    if isinstance(expr, Op):
        return Op(expr.name, tuple(to_chain(a, index) for a in expr.args), expr.params)
    return expr


def check_dtypes(dtypes: list[str]) -> None:
    bad = sorted(set(dtypes) - KERNEL_DTYPES)
    if bad:
        raise NoTemplate(f"dtype {', '.join(bad)} has no template (float32, float16, bfloat16, int32, bool do)")


def layout(out_shape: tuple[int, ...], shapes: list[tuple[int, ...]]) -> tuple[list[str], tuple[int, int] | None]:
    """Broadcast kinds of the operands, and the grouped split (C axes, G axes) when the
    plain [R, C] view cannot express the broadcast (e.g. [B, 1, N] over [B, M, N])."""
    found = broadcast_layout(out_shape, shapes)
    if found is not None:
        return found[0], None
    grouped = grouped_layout(tuple(out_shape), shapes)
    if grouped is None:
        raise NoTemplate(f"broadcast of {[list(s) for s in shapes]} to {list(out_shape)} does not fit a "
                         "row/column or grouped layout")
    return grouped
