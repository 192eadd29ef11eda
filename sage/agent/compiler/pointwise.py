"""Which primitive a node is, and pointwise nodes as chain expressions.

A pointwise node computes its output element by element from its operands: an
elementwise op with a chain form in the registry, a copy or cast (any layout: the tile
program reads strided operands), a fill, or an `arange` (an `Iota` leaf). Its expression
is over `Inp(k)` = its k-th operand, an index into the node's inputs or an Iota.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sage.agent.compiler.build import Unsupported
from sage.agent.compiler.ir import Node
from sage.kernels import Const, Expr, Inp, Op, Prim, base_name, op_def
from sage.kernels import chain_context, const, op

COPIES = {"clone", "contiguous", "_to_copy", "copy", "lift_fresh_copy", "alias_copy", "to", "_copy_from"}
FLOATS = {"float32", "float16", "bfloat16", "float64"}
FILL_VALUE = {"zeros": 0.0, "zeros_like": 0.0, "new_zeros": 0.0, "zero": 0.0, "ones": 1.0, "ones_like": 1.0,
              "new_ones": 1.0}


@dataclass(frozen=True)
class IotaOperand:
    """arange as an operand: value = start + step * (flat index of the output)."""

    start: float
    step: float


@dataclass
class Pointwise:
    expr: Expr
    operands: list[int | IotaOperand] = field(default_factory=list)   # Inp(k) -> node input or an iota


def prim_of(node: Node) -> Prim | None:
    entry = op_def(node.call.name)
    return entry.prim if entry is not None else None


def pointwise_of(node: Node, consts: dict[int, float]) -> Pointwise | None:
    """The node as a pointwise expression, or None when it is not pointwise."""
    name = node.op
    out = node.outs[0] if node.outs else None
    if out is None or len(node.outs) != 1:
        return None
    if name in COPIES:
        src = len(node.ins) - 1
        if src < 0 or node.ins[src] is None:
            return None
        return Pointwise(_convert(Inp(0), node.ins[src].dtype, out.dtype), [src])
    prim = prim_of(node)
    if prim is not None and prim.kind == "fill":
        value = _fill_value(node, consts)
        return Pointwise(Const(float(value))) if value is not None else None
    if prim is not None and prim.kind == "iota":
        start, step = _arange(node)
        return Pointwise(op("identity", Inp(0)), [IotaOperand(start, step)])
    entry = op_def(node.call.name)
    if entry is None or not entry.chain:
        return None
    # One-element operands fold to constants only when the compiler knows their value
    # (literals); an input's value is data the host may not read.
    call = node.call
    inputs = [m if (r is not None and r.buf in consts) else m.model_copy(update={"value": None})
              for m, r in zip(call.inputs, node.ins)]
    ctx = chain_context(base_name(call.name), call.model_copy(update={"inputs": inputs}))
    expr = next((e for f in entry.chain if (e := f.rule(ctx)) is not None), None)
    if expr is None:
        return None
    operands = [i for i, folded in enumerate(ctx.folded) if not folded]
    return Pointwise(expr, list(operands))


def _convert(x: Expr, src: str, dst: str) -> Expr:
    """A dtype conversion inside a chain: float -> int truncates, anything -> bool tests != 0."""
    if dst == "bool" and src != "bool":
        return op("ne", x, 0.0)
    if src in FLOATS and dst not in FLOATS and dst != "bool":
        return op("trunc", x)
    return op("identity", x)


def _fill_value(node: Node, consts: dict[int, float]) -> float | None:
    name, scalars = node.op, node.scalars
    if name in FILL_VALUE:
        return FILL_VALUE[name]
    if name == "fill":
        if node.call.overload == "Tensor":
            ref = node.ins[1] if len(node.ins) > 1 else None
            if ref is None or ref.buf not in consts:
                raise Unsupported(f"{node.describe()}: fill with a tensor value the compiler does not know")
            return consts[ref.buf]
        return _num(scalars[0]) if scalars else None
    if name == "full":                  # full(size, value)
        return _num(scalars[1]) if len(scalars) > 1 else None
    if name in ("full_like", "new_full"):
        return _num(scalars[-1]) if scalars else None
    if name == "scalar_tensor":
        return _num(scalars[0]) if scalars else None
    return None


def _num(v) -> float | None:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    return None


def _arange(node: Node) -> tuple[float, float]:
    nums = [float(v) for v in node.scalars if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(nums) == 1:
        return 0.0, 1.0
    if len(nums) == 2:
        return nums[0], 1.0
    if len(nums) == 3:
        return nums[0], nums[2]
    raise Unsupported(f"{node.describe()}: arange with arguments {node.scalars}")


def is_reduce(node: Node) -> bool:
    prim = prim_of(node)
    return prim is not None and prim.kind == "reduce" and len(node.outs) == 1


def reduce_dims(node: Node) -> tuple[list[int], bool]:
    """The reduced axes of the input (sorted, non-negative) and keepdim."""
    prim = prim_of(node)
    assert prim is not None
    rank = len(node.ins[0].shape) if node.ins and node.ins[0] is not None else 0
    scalars = node.scalars
    dims = scalars[prim.dims] if prim.dims is not None and len(scalars) > prim.dims else node.kwargs.get("dim")
    if dims is None or dims == []:
        dims = list(range(rank))
    elif isinstance(dims, int):
        dims = [dims]
    keep = scalars[prim.keepdim] if prim.keepdim is not None and len(scalars) > prim.keepdim \
        else node.kwargs.get("keepdim", False)
    return sorted({d % max(rank, 1) for d in dims}), bool(keep)


__all__ = ["COPIES", "Inp", "IotaOperand", "Op", "Pointwise", "const", "is_reduce", "pointwise_of", "prim_of",
           "reduce_dims"]
