"""From a traced forward to what a library kernel computes.

The forward is rebuilt as one expression over its inputs: elementwise aten calls become
library chain ops (through the reference model's own aten → chain table), views pass
their operand through, and the row operators (softmax, norms, last-axis reductions) and
the matrix product become nodes of their own. The synthesizer then recognises the shapes
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

from sage.agent.offline.graph import Graph
from sage.bench.library.chain import Const, Inp, Op
from sage.agent.offline.predicates import predicate_chain
from sage.bench.reference.aten import AtenCall
from sage.bench.reference.ew_map import LIB_DTYPES, base_name, broadcast_layout, chain_for

# What elementwise kernels read and write: the reference's dtypes, and bool as 0/1 bytes.
KERNEL_DTYPES = LIB_DTYPES | {"bool"}


class NoTemplate(Exception):
    """The operator is outside the classes the offline synthesizer has templates for."""


# Views that keep the element order, so an elementwise kernel can read the original buffer.
ORDER_PRESERVING = {"view", "_unsafe_view", "reshape", "_reshape_alias", "unsqueeze", "squeeze", "expand",
                    "alias", "detach", "lift_fresh", "flatten", "unflatten", "view_as", "expand_as"}
ROW_REDUCTIONS = {"sum": "sum", "mean": "mean", "amax": "max", "amin": "min"}
MATMULS = {"mm", "matmul", "bmm", "addmm"}


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
        call, name = node.call, base_name(node.call)
        if call.free:
            if self._is_matrix_transpose(node):
                return Transposed(self.build(node.args[0]))
            if name not in ORDER_PRESERVING:
                raise NoTemplate(f"aten.{call.qualname} reorders or slices data; no template moves data that way")
            return self.build(node.args[0])
        if name in ROW_REDUCTIONS:
            return self._reduction(node, ROW_REDUCTIONS[name])
        if name in ("_softmax", "_log_softmax"):
            self._check_last_axis(node, call.scalars[0])
            return RowOp(name.lstrip("_"), (self.build(node.args[0]),))
        if name == "native_layer_norm":
            shape = call.scalars[0]
            if len(shape) != 1:
                raise NoTemplate("layer norm over more than the last axis has no template")
            if node.outs.index(vid) != 0:
                raise NoTemplate("the forward uses layer norm's saved mean/rstd")
            eps = float(call.scalars[-1])
            return RowOp("layer_norm", tuple(self.build(a) for a in node.args), eps)
        if name in MATMULS:
            return self._matmul(node, name)
        return self._elementwise(node, vid)

    @staticmethod
    def _is_matrix_transpose(node) -> bool:
        """t / permute / transpose swapping the only two axes of a matrix."""
        call = node.call
        if len(call.inputs) != 1 or len(call.inputs[0].shape) != 2:
            return False
        name = base_name(call)
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

    def _matmul(self, node, name: str) -> MatMul:
        call = node.call
        if name == "addmm":
            if call.scalars and any(float(s) != 1.0 for s in call.scalars if isinstance(s, (int, float))):
                raise NoTemplate("addmm with beta/alpha other than 1 has no template")
            bias, a, b = (self.build(v) for v in node.args)
            return MatMul(a, b, bias)
        shapes = [t.shape for t in call.inputs]
        batched = all(len(sh) == 3 for sh in shapes) and shapes[0][0] == shapes[1][0]
        if not batched and any(len(sh) != 2 for sh in shapes):
            raise NoTemplate("a matrix product over broadcast batches has no template (2-D, or 3-D with one batch)")
        return MatMul(self.build(node.args[0]), self.build(node.args[1]))

    def _elementwise(self, node, vid: int) -> Any:
        call = node.call
        if base_name(call) == "copy_" or len(node.outs) != 1:
            raise NoTemplate(f"aten.{call.qualname} has no elementwise template")
        plan = chain_for(call) or chain_for(_unbroadcast(call))
        expr = plan.expr if plan is not None else predicate_chain(call)
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


def _unbroadcast(call: AtenCall) -> AtenCall:
    """The call with every non-scalar operand at the output's shape: the reference's table
    then gives the op's expression even for broadcasts its [R, C] layout cannot express;
    the synthesizer lays the operands out itself (`layout`)."""
    out = call.outputs[0] if call.outputs else None
    if out is None:
        return call
    inputs = [t if t.numel == 1 else t.model_copy(update={"shape": out.shape}) for t in call.inputs]
    return call.model_copy(update={"inputs": inputs})


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
    grouped = _grouped_layout(tuple(out_shape), shapes)
    if grouped is None:
        raise NoTemplate(f"broadcast of {[list(s) for s in shapes]} to {list(out_shape)} does not fit a "
                         "row/column or grouped layout")
    return grouped


def _grouped_layout(out: tuple[int, ...], shapes: list[tuple[int, ...]]):
    """Output axes split as [B | G | C]: each operand is full, a scalar, a row (C only), a
    column (B and G only), one row per group (B and C: `grp`) or one slab for all groups
    (G and C: `mod`)."""
    n = len(out)
    padded = [(1,) * (n - len(sh)) + tuple(sh) for sh in shapes]
    for c in range(n - 1, 0, -1):          # C = out[c:]
        for g in range(c - 1, -1, -1):     # G = out[g:c], B = out[:g]
            kinds = [_group_kind(sh, out, g, c) for sh in padded]
            if None not in kinds and ("grp" in kinds or "mod" in kinds):
                return kinds, (n - c, c - g)
    return None


def _group_kind(sh: tuple[int, ...], out: tuple[int, ...], g: int, c: int) -> str | None:
    def part(lo: int, hi: int) -> str | None:
        if sh[lo:hi] == out[lo:hi]:
            return "all"
        if all(d == 1 for d in sh[lo:hi]):
            return "one"
        return None

    b_, g_, c_ = part(0, g), part(g, c), part(c, len(out))
    table = {("all", "all", "all"): "full", ("one", "one", "one"): "scalar", ("one", "one", "all"): "row",
             ("all", "one", "all"): "grp", ("one", "all", "all"): "mod", ("all", "all", "one"): "col"}
    return table.get((b_, g_, c_))
