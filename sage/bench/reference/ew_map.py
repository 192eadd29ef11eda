"""Aten elementwise operators as library chains.

`chain_for(call)` returns the fused-elementwise spec that one eager aten call is timed
with (one chain node for simple ops; the library's decomposition for gelu, silu, ...),
with the tensor operands to feed it and their broadcast kinds, or None when the call has
no library form (comparisons, integer types, general broadcasts) and falls back to the
roofline formula.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sage.bench.library.chain import Expr, Kind, const, inp, op
from sage.bench.reference.aten import AtenCall, TensorMeta

LIB_DTYPES = {"float32", "float16", "bfloat16", "int32"}

UNARY_ATEN = {
    "abs": "abs", "neg": "neg", "exp": "exp", "log": "log", "sqrt": "sqrt", "rsqrt": "rsqrt",
    "reciprocal": "reciprocal", "relu": "relu", "sigmoid": "sigmoid", "tanh": "tanh",
    "silu": "silu", "mish": "mish", "hardsigmoid": "hardsigmoid", "hardswish": "hardswish",
    "log1p": "log1p", "square": "square", "clone": "identity", "_to_copy": "identity",
    "copy": "identity", "contiguous": "identity", "positive": "identity",
}
BINARY_ATEN = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "maximum": "maximum",
               "minimum": "minimum", "logaddexp": "log_add_exp", "true_divide": "div"}


@dataclass
class ChainPlan:
    expr: Expr
    operands: list[TensorMeta]       # the kernel's tensor inputs, in Inp order
    kinds: list[Kind]
    out: TensorMeta
    R: int
    C: int


def base_name(call: AtenCall) -> str:
    return call.name[:-1] if call.name.endswith("_") and not call.name.startswith("_") else call.name


def chain_for(call: AtenCall) -> ChainPlan | None:
    if not call.outputs:
        return None
    out = call.outputs[0]
    if out.dtype not in LIB_DTYPES or out.numel == 0:
        return None
    name = base_name(call)
    terms: list[TensorMeta | float] = []
    for t in call.inputs:
        # 1-element operands are scalars the host passes to the kernel as immediates.
        terms.append(t.value if t.value is not None and t.numel == 1 and out.numel > 1 else t)
    if any(isinstance(t, TensorMeta) and t.dtype not in LIB_DTYPES for t in terms):
        return None
    s = call.scalars
    expr_terms = _expr_terms(terms)
    e = _expr(name, call, expr_terms, s)
    if e is None:
        return None
    tensors = [t for t in terms if isinstance(t, TensorMeta)]
    if call.name == "copy_" and tensors:
        tensors = tensors[1:]          # copy_(dst, src): the kernel reads src, writes dst
        e = op("identity", inp(0))
    if not tensors:
        return None
    layout = broadcast_layout(out.shape, [t.shape for t in tensors])
    if layout is None:
        return None
    kinds, R, C = layout
    return ChainPlan(expr=e, operands=tensors, kinds=kinds, out=out, R=R, C=C)


def _expr_terms(terms: list) -> list[Expr]:
    out, k = [], 0
    for t in terms:
        if isinstance(t, TensorMeta):
            out.append(inp(k))
            k += 1
        else:
            out.append(const(t))
    return out


def _expr(name: str, call: AtenCall, x: list[Expr], s: list) -> Expr | None:
    kw = call.kwargs
    if name in UNARY_ATEN and len(x) >= 1:
        if name in ("clone", "_to_copy", "contiguous") and not call.inputs[0].contiguous:
            return None                 # a transposing copy is a gather, not an elementwise kernel
        return op(UNARY_ATEN[name], x[0]) if name != "copy" else op("identity", x[-1])
    if name == "gelu":
        return op("gelu_tanh" if kw.get("approximate") == "tanh" else "gelu", x[0])
    if name == "leaky_relu":
        return op("leaky_relu", x[0], slope=float(s[0]) if s else 0.01)
    if name == "elu":
        alpha = float(s[0]) if s else 1.0
        if (len(s) > 1 and float(s[1]) != 1.0) or (len(s) > 2 and float(s[2]) != 1.0):
            return None
        return op("elu", x[0], alpha=alpha)
    if name == "softplus":
        if s and float(s[0]) != 1.0:
            return None
        return op("softplus", x[0])
    if name in ("clamp", "clamp_min", "clamp_max", "hardtanh"):
        lo, hi = _clamp_bounds(name, s)
        params = {k: v for k, v in (("min", lo), ("max", hi)) if v is not None}
        return op("clamp", x[0], **params)
    if name == "pow" and call.overload == "Tensor_Scalar":
        return op("pow_scalar", x[0], exponent=float(s[0]))
    if name in BINARY_ATEN:
        if name == "div" and kw.get("rounding_mode") is not None:
            return None
        nums = [v for v in s if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if len(x) == 2:
            a, b = x
            alpha = kw.get("alpha", nums[0] if nums else 1)
        elif len(x) == 1 and nums:
            # add.Tensor(x, 2.0) / add.Scalar(x, 2.0[, alpha]): the operand is a Python number.
            a, b = x[0], const(nums[0])
            alpha = kw.get("alpha", nums[1] if len(nums) > 1 else 1)
        else:
            return None
        if alpha != 1 and name in ("add", "sub"):
            b = op("mul", b, float(alpha))
        return op(BINARY_ATEN[name], a, b)
    if name == "rsub":
        alpha = float(s[-1]) if len(s) >= 1 and len(x) == 2 else 1.0
        other = x[1] if len(x) == 2 else const(float(s[0]))
        return op("sub", other, op("mul", x[0], alpha) if alpha != 1 else x[0])
    if name == "sigmoid_backward" and len(x) == 2:     # grad * y * (1 - y)
        g, y = x
        return op("mul", g, op("mul", y, op("sub", 1.0, y)))
    if name == "tanh_backward" and len(x) == 2:        # grad * (1 - y^2)
        g, y = x
        return op("mul", g, op("sub", 1.0, op("square", y)))
    return None


def _clamp_bounds(name: str, s: list) -> tuple[float | None, float | None]:
    vals = [float(v) if isinstance(v, (int, float)) else None for v in s] + [None, None]
    if name == "clamp_min":
        return vals[0], None
    if name == "clamp_max":
        return None, vals[0]
    if name == "hardtanh":
        return (vals[0] if vals[0] is not None else -1.0), (vals[1] if vals[1] is not None else 1.0)
    return vals[0], vals[1]


def broadcast_layout(out: tuple[int, ...], shapes: list[tuple[int, ...]]) -> tuple[list[Kind], int, int] | None:
    """Kinds of operands against `out` seen as [R, C], or None when no single split works
    (e.g. [B, 1, N] over [B, M, N]), in which case the op is timed by the formula."""
    n = len(out)
    total = math.prod(out)
    padded = [(1,) * (n - len(sh)) + tuple(sh) for sh in shapes]
    kinds: list[Kind | None] = []
    splits: set[int] = set()
    for sh in padded:
        if sh == tuple(out):
            kinds.append("full")
            continue
        if math.prod(sh) == 1:
            kinds.append("scalar")
            continue
        found = None
        for k in range(1, n):
            if all(d == 1 for d in sh[:k]) and sh[k:] == tuple(out[k:]):
                found = ("row", k)
                break
            if all(d == 1 for d in sh[k:]) and sh[:k] == tuple(out[:k]):
                found = ("col", k)
                break
        if found is None:
            return None
        kinds.append(found[0])
        splits.add(found[1])
    if len(splits) > 1:
        return None
    if not splits:
        return [k for k in kinds if k], 1, total
    k = splits.pop()
    C = math.prod(out[k:])
    return [k_ for k_ in kinds if k_], total // C, C
