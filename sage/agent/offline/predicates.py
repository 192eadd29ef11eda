"""Aten calls the reference model's chain table leaves out: comparisons, logic, selects.

The reference model (`sage.bench.reference.ew_map`) times these operators by formula; the
synthesizer still writes kernels for them with the library's comparison and select ops.
A bool value inside a chain is a 0/1 number, so `logical_and` of two bools is their
product; a non-bool operand is first tested against zero, as torch does.

`predicate_chain` returns the chain over the call's tensor operands (`Inp(k)` for the k-th
tensor that is not folded into a constant), or None for a call outside this table.
"""

from __future__ import annotations

from typing import Any

from sage.bench.library.chain import COMPARE, Expr, const, inp, op
from sage.bench.reference.aten import AtenCall, TensorMeta
from sage.bench.reference.ew_map import base_name

_ARITH = {"add", "sub", "mul", "maximum", "minimum"}
_LOGIC = {"logical_and": "mul", "logical_or": "maximum", "bitwise_and": "mul", "bitwise_or": "maximum"}


def predicate_chain(call: AtenCall) -> Expr | None:
    if not call.outputs or len(call.outputs) != 1:
        return None
    out = call.outputs[0]
    name = base_name(call)
    terms: list[Any] = []
    k = 0
    for t in call.inputs:
        if t.value is not None and t.numel == 1 and out.numel > 1:
            terms.append(const(t.value))
        else:
            terms.append((inp(k), t))
            k += 1
    x = [t[0] if isinstance(t, tuple) else t for t in terms]
    nums = [float(v) for v in call.scalars if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if name in COMPARE:
        if len(x) == 2:
            return op(name, x[0], x[1])
        if len(x) == 1 and len(nums) == 1:
            return op(name, x[0], nums[0])
        return None
    if name in _ARITH and len(x) == 2 and any(_is_bool(t) for t in terms) and not call.scalars and not call.kwargs:
        return op(name, x[0], x[1])   # arithmetic with a bool mask operand (0/1)
    if name in _LOGIC and len(x) == 2:
        if name.startswith("bitwise") and not all(_is_bool(t) for t in terms):
            return None   # bitwise logic on integers works on bits, not truth values
        return op(_LOGIC[name], _truth(terms[0]), _truth(terms[1]))
    if name in ("logical_not", "bitwise_not") and len(x) == 1:
        if name == "bitwise_not" and not _is_bool(terms[0]):
            return None
        return op("eq", x[0], 0.0)
    if name == "where" and len(x) == 3:
        return op("where", x[0], x[1], x[2])
    if name == "masked_fill" and len(x) >= 2:
        fill = x[2] if len(x) == 3 else (const(nums[0]) if nums else None)
        return op("where", x[1], fill, x[0]) if fill is not None else None
    if name == "threshold" and len(x) == 1 and len(nums) == 2:
        # threshold(x, th, value) = x where x > th else value
        return op("where", op("gt", x[0], nums[0]), x[0], nums[1])
    if name == "floor_divide" and len(x) == 2:
        return op("floor", op("div", x[0], x[1]))
    if name == "floor" and len(x) == 1:
        return op("floor", x[0])
    return None


def _is_bool(term: Any) -> bool:
    return isinstance(term, tuple) and isinstance(term[1], TensorMeta) and term[1].dtype == "bool"


def _truth(term: Any) -> Expr:
    """A bool operand is already 0/1; any other is tested against zero."""
    if _is_bool(term):
        return term[0]
    e = term[0] if isinstance(term, tuple) else term
    return op("ne", e, 0.0)
