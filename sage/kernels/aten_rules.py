"""How one aten call becomes an elementwise chain: the rules the registry's entries name.

A rule reads a `ChainCtx` (the call, its tensor operands as chain terms, its Python
arguments) and returns the chain expression over the call's non-folded tensor operands
(`Inp(k)` for the k-th), or None when this call of the op has no chain form (an
unsupported argument, a missing operand). One-element tensors are folded into constants.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import math

from sage.kernels.chain import Const, Expr, const, inp, op

if TYPE_CHECKING:
    from sage.kernels.record import AtenCall, TensorMeta


@dataclass
class ChainCtx:
    name: str                        # the aten name without an in-place underscore
    call: AtenCall
    x: list[Expr]                    # one term per tensor input: Inp(k), or Const when folded
    metas: list[TensorMeta]
    folded: list[bool]
    scalars: list[Any]
    nums: list[int | float]          # the numeric (non-bool) Python arguments, in order

    @property
    def kwargs(self) -> dict[str, Any]:
        return self.call.kwargs

    def is_bool(self, i: int) -> bool:
        """The i-th operand is a bool tensor (a 0/1 mask inside a chain)."""
        return not self.folded[i] and self.metas[i].dtype == "bool"

    def truth(self, i: int) -> Expr:
        """A bool operand is already 0/1; any other is tested against zero."""
        return self.x[i] if self.is_bool(i) else op("ne", self.x[i], 0.0)


def chain_ctx(name: str, call: AtenCall) -> ChainCtx:
    """The call's terms; a one-element tensor is a scalar the host passes to the kernel as
    an immediate, unless the output is one element too."""
    out_numel = call.outputs[0].numel
    x: list[Expr] = []
    folded: list[bool] = []
    k = 0
    for t in call.inputs:
        fold = t.value is not None and t.numel == 1 and out_numel > 1
        folded.append(fold)
        if fold:
            x.append(const(t.value))
        else:
            x.append(inp(k))
            k += 1
    nums = [v for v in call.scalars if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return ChainCtx(name, call, x, list(call.inputs), folded, list(call.scalars), nums)


ChainRule = Callable[[ChainCtx], "Expr | None"]


# -- unary ---------------------------------------------------------------------------------------
def unary(vop: str) -> ChainRule:
    return lambda c: op(vop, c.x[0]) if c.x else None


def contiguous_copy(c: ChainCtx) -> Expr | None:
    """clone / _to_copy / contiguous: a copy, unless it transposes (then it is a gather)."""
    if not c.x or not c.metas[0].contiguous:
        return None
    return op("identity", c.x[0])


def copy_from(c: ChainCtx) -> Expr | None:
    """copy_(dst, src): the kernel reads src."""
    return op("identity", c.x[-1]) if c.x else None


def gelu(c: ChainCtx) -> Expr:
    return op("gelu_tanh" if c.kwargs.get("approximate") == "tanh" else "gelu", c.x[0])


def leaky_relu(c: ChainCtx) -> Expr:
    return op("leaky_relu", c.x[0], slope=float(c.scalars[0]) if c.scalars else 0.01)


def elu(c: ChainCtx) -> Expr | None:
    s = c.scalars
    if (len(s) > 1 and float(s[1]) != 1.0) or (len(s) > 2 and float(s[2]) != 1.0):
        return None           # scale or input_scale other than 1
    return op("elu", c.x[0], alpha=float(s[0]) if s else 1.0)


def softplus(c: ChainCtx) -> Expr | None:
    if c.scalars and float(c.scalars[0]) != 1.0:
        return None           # beta other than 1
    return op("softplus", c.x[0])


def clamp(lo_arg: int | None, hi_arg: int | None, lo_default: float | None = None,
          hi_default: float | None = None) -> ChainRule:
    """Bounds from the positional arguments `lo_arg`/`hi_arg` (None: that bound is absent).
    A bound may be a tensor (clamp.Tensor: MultiKernelBench's broadcast/clamp_broadcast clamps
    each column by its own min and max): then the chain is minimum(maximum(x, lo), hi), as
    torch computes it (hi wins where lo > hi)."""

    def rule(c: ChainCtx) -> Expr:
        if len(c.x) > 1:
            return _tensor_bounds(c, lo_arg, hi_arg)
        vals = [float(v) if isinstance(v, (int, float)) else None for v in c.scalars] + [None, None]
        for key, at in (("min", lo_arg), ("max", hi_arg)):
            if at is not None and isinstance(c.kwargs.get(key), (int, float)):
                vals[at] = float(c.kwargs[key])
        lo = (vals[lo_arg] if vals[lo_arg] is not None else lo_default) if lo_arg is not None else None
        hi = (vals[hi_arg] if vals[hi_arg] is not None else hi_default) if hi_arg is not None else None
        return op("clamp", c.x[0], **{k: v for k, v in (("min", lo), ("max", hi)) if v is not None})

    return rule


def _tensor_bounds(c: ChainCtx, lo_arg: int | None, hi_arg: int | None) -> Expr:
    """clamp with tensor bounds: the bound of each argument after x, a tensor term (a folded
    one-element tensor is a constant), a number, or absent (None)."""
    tensors, scalars = iter(c.x[1:]), iter(c.scalars)
    bounds: list[Expr | None] = []
    for kind in c.call.arg_kinds[1:]:
        if kind == "tensor":
            bounds.append(next(tensors))
        else:
            v = next(scalars, None)
            bounds.append(const(float(v)) if isinstance(v, (int, float)) and not isinstance(v, bool) else None)
    bounds += [None, None]
    e = c.x[0]
    if lo_arg is not None and bounds[lo_arg] is not None:
        e = op("maximum", e, bounds[lo_arg])
    if hi_arg is not None and bounds[hi_arg] is not None:
        e = op("minimum", e, bounds[hi_arg])
    return e


# Integral exponents up to this magnitude are products (squarings), a few ulp off at most.
_POW_BY_PRODUCTS = 64


def pow_scalar(c: ChainCtx) -> Expr | None:
    """pow.Tensor_Scalar. The vector recipe's general form is exp(e * ln x), NaN for x < 0,
    which is right only for a fractional e: an integral one has a real power of a negative
    base (std ** -3, x ** 5). Those are products, or for a large e the power of |x| with the
    sign put back for an odd e."""
    if c.call.overload != "Tensor_Scalar":
        return None
    x, e = c.x[0], float(c.scalars[0])
    if not e.is_integer() or e == 0:
        return op("pow_scalar", x, exponent=e)
    n = int(abs(e))
    if n <= _POW_BY_PRODUCTS:
        power = _power_by_squaring(x, n)
        return op("reciprocal", power) if e < 0 else power
    magnitude = op("pow_scalar", op("abs", x), exponent=e)
    if n % 2 == 0:
        return magnitude
    return op("mul", magnitude, op("sub", 1.0, op("mul", op("lt", x, 0.0), 2.0)))   # -1 where x < 0


def _power_by_squaring(x: Expr, n: int) -> Expr:
    """x ** n (n >= 1) in about 2 log2(n) products; the chain lowering computes a shared
    square once."""
    result: Expr | None = None
    square = x
    while True:
        if n & 1:
            result = square if result is None else op("mul", result, square)
        n >>= 1
        if not n:
            return result
        square = op("mul", square, square)


def sigmoid_backward(c: ChainCtx) -> Expr | None:
    if len(c.x) != 2:
        return None
    g, y = c.x                        # grad * y * (1 - y)
    return op("mul", g, op("mul", y, op("sub", 1.0, y)))


def tanh_backward(c: ChainCtx) -> Expr | None:
    if len(c.x) != 2:
        return None
    g, y = c.x                        # grad * (1 - y^2)
    return op("mul", g, op("sub", 1.0, op("square", y)))


# -- binary ----------------------------------------------------------------------------------
def _operands(c: ChainCtx) -> tuple[Expr, Expr] | None:
    """The two operands of a binary call: two tensors, or a tensor and a Python number."""
    if len(c.x) == 2:
        return c.x[0], c.x[1]
    if len(c.x) == 1 and c.nums:
        return c.x[0], const(c.nums[0])
    return None


def binary(vop: str, *, alpha: bool = False, rounding: bool = False) -> ChainRule:
    """a op b; the second operand may be a Python number; `alpha` scales it (add, sub);
    `rounding`: a rounding mode (floor/trunc division) has no chain form."""

    def rule(c: ChainCtx) -> Expr | None:
        if rounding and c.kwargs.get("rounding_mode") is not None:
            return None
        if len(c.x) == 2:
            a, b = c.x
            scale = c.kwargs.get("alpha", c.nums[0] if c.nums else 1)
        elif len(c.x) == 1 and c.nums:
            # add.Tensor(x, 2.0) / add.Scalar(x, 2.0[, alpha]): the operand is a Python number.
            a, b = c.x[0], const(c.nums[0])
            scale = c.kwargs.get("alpha", c.nums[1] if len(c.nums) > 1 else 1)
        else:
            return None
        if alpha and scale != 1:
            b = op("mul", b, float(scale))
        return op(vop, a, b)

    return rule


def rsub(c: ChainCtx) -> Expr:
    """other - alpha * x."""
    s = c.scalars
    scale = float(s[-1]) if len(s) >= 1 and len(c.x) == 2 else 1.0
    other = c.x[1] if len(c.x) == 2 else const(float(s[0]))
    return op("sub", other, op("mul", c.x[0], scale) if scale != 1 else c.x[0])


def with_mask(vop: str) -> ChainRule:
    """Arithmetic where an operand is a bool mask (a 0/1 number in the chain)."""

    def rule(c: ChainCtx) -> Expr | None:
        if len(c.x) != 2 or not (c.is_bool(0) or c.is_bool(1)) or c.scalars or c.kwargs:
            return None
        return op(vop, c.x[0], c.x[1])

    return rule


# -- comparisons, logic, selects ----------------------------------------------------------------
def compare(vop: str) -> ChainRule:
    def rule(c: ChainCtx) -> Expr | None:
        if len(c.x) == 2:
            return op(vop, c.x[0], c.x[1])
        # the other operand may be a Python bool (`torch.ne(x, True)` compares with 1): for a
        # comparison it is a number, not a flag as bools are elsewhere
        other = c.nums or [float(v) for v in c.scalars if isinstance(v, bool)]
        if len(c.x) == 1 and len(other) == 1:
            return op(vop, c.x[0], other[0])
        return None

    return rule


def logic(vop: str, *, bitwise: bool = False) -> ChainRule:
    """A truth-value combination of two operands: and = product, or = maximum of 0/1."""

    def rule(c: ChainCtx) -> Expr | None:
        if len(c.x) != 2:
            return None
        if bitwise and not (c.is_bool(0) and c.is_bool(1)):
            return None       # bitwise logic on integers works on bits, not truth values
        return op(vop, c.truth(0), c.truth(1))

    return rule


def logical_not(*, bitwise: bool = False) -> ChainRule:
    def rule(c: ChainCtx) -> Expr | None:
        if len(c.x) != 1 or (bitwise and not c.is_bool(0)):
            return None
        return op("eq", c.x[0], 0.0)

    return rule


def where(c: ChainCtx) -> Expr | None:
    """where(cond, self, other); the ScalarOther / ScalarSelf / Scalar overloads take the
    missing operands as Python numbers, in the schema's order."""
    if len(c.x) == 3:
        return op("where", c.x[0], c.x[1], c.x[2])
    overload = c.call.overload
    if len(c.x) == 2 and len(c.nums) == 1 and overload in ("ScalarOther", "ScalarSelf"):
        a, b = (c.x[1], const(c.nums[0])) if overload == "ScalarOther" else (const(c.nums[0]), c.x[1])
        return op("where", c.x[0], a, b)
    if len(c.x) == 1 and len(c.nums) == 2 and overload == "Scalar":
        return op("where", c.x[0], const(c.nums[0]), const(c.nums[1]))
    return None


def masked_fill(c: ChainCtx) -> Expr | None:
    if len(c.x) < 2:
        return None
    # the fill of a bool tensor is a Python bool (level2/22: mask.masked_fill(cond, False)): as
    # a value it is the number 0 or 1, not a flag
    value = c.nums or [float(v) for v in c.scalars if isinstance(v, bool)]
    fill: Expr | None = c.x[2] if len(c.x) == 3 else (const(value[0]) if value else None)
    return op("where", c.x[1], fill, c.x[0]) if fill is not None else None


def threshold(c: ChainCtx) -> Expr | None:
    """threshold(x, th, value) = x where x > th else value."""
    if len(c.x) != 1 or len(c.nums) != 2:
        return None
    return op("where", op("gt", c.x[0], c.nums[0]), c.x[0], c.nums[1])


def floor_divide(c: ChainCtx) -> Expr | None:
    ab = _operands(c)
    if not ab:
        return None
    return _floor_quotient(c, ab)


def _floor_quotient(c: ChainCtx, ab: tuple[Expr, Expr]) -> Expr:
    """floor(a / b) for floor_divide and div(rounding_mode="floor"). An integer quotient over
    a divisor of the output's shape keeps floor(a / b) on top, which the int store's Cast
    floors itself (CAST_FLOOR): the vector Div of two exact integers is correctly rounded,
    so it floors right. A divisor that is a number or broadcast (a [1] tensor, a row the
    tile reads once) may reach the kernel as a scalar, which divides through its reciprocal
    (Muls by 1/b): -18 * (1/3) is -6.0000005 in float32 and floors to -7 where torch says
    -6 (level0/2_floor_divide, int8..int64 over a [1] divisor). That one gets the
    remainder-sign correction the float quotient has."""
    if c.call.outputs[0].dtype in _FLOAT_DTYPES:
        return floored_quotient(*ab)
    a, b = ab
    whole = len(c.x) == 2 and not c.folded[1] and c.metas[1].numel == c.call.outputs[0].numel
    return op("floor", op("div", a, b)) if whole else floored_quotient(a, b)


_FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})


def floored_quotient(a: Expr, b: Expr) -> Expr:
    """floor(a / b) corrected by exact remainder signs, as torch's div_floor corrects by
    fmod: a divisor the kernel holds as a scalar divides by multiplying with its reciprocal,
    and a * (1/b) can land just past an exact integer quotient (-6 read as -6.0000005 floors
    to -7; level0/2_floor_divide, bfloat16 over a [1] divisor). With f = floor(q): the
    quotient is f + 1 when a - (f+1)*b has the divisor's sign or is zero, f - 1 when
    a - f*b has the other sign. Only signs are tested: (f+1)*b is exact for small integer
    quotients and a rounded subtraction keeps the exact difference's sign (testing the
    remainder's size instead fails on -1e-30 // 5, whose a + 5 rounds to 5). A zero divisor
    makes both differences NaN: no test holds and f (+-inf or NaN) stays."""
    f = op("floor", op("div", a, b))
    above = op("sub", a, op("mul", op("add", f, 1.0), b))
    below = op("sub", a, op("mul", f, b))
    up = _signed(b, op("ge", above, 0.0), op("le", above, 0.0))
    down = _signed(b, op("lt", below, 0.0), op("gt", below, 0.0))
    return op("where", up, op("add", f, 1.0), op("where", down, op("sub", f, 1.0), f))


def _signed(b: Expr, if_positive: Expr, if_negative: Expr) -> Expr:
    """`if_positive` where the divisor b > 0, else `if_negative` (chosen here for a constant)."""
    if isinstance(b, Const):
        return if_positive if b.value > 0 else if_negative
    return op("where", op("gt", b, 0.0), if_positive, if_negative)


def div_rounding(c: ChainCtx) -> Expr | None:
    """div with rounding_mode floor or trunc."""
    mode = c.kwargs.get("rounding_mode")
    ab = _operands(c)
    if mode not in ("floor", "trunc") or ab is None:
        return None
    if mode == "floor":
        return _floor_quotient(c, ab)
    return op(mode, op("div", *ab))


def remainder(c: ChainCtx) -> Expr | None:
    """Python's modulo (the divisor's sign): a - b * floor(a / b)."""
    ab = _operands(c)
    if ab is None:
        return None
    a, b = ab
    return op("sub", a, op("mul", b, op("floor", op("div", a, b))))


def fmod(c: ChainCtx) -> Expr | None:
    """C's fmod (the dividend's sign): a - b * trunc(a / b)."""
    ab = _operands(c)
    if ab is None:
        return None
    a, b = ab
    return op("sub", a, op("mul", b, op("trunc", op("div", a, b))))


def sign(c: ChainCtx) -> Expr | None:
    return op("sub", op("gt", c.x[0], 0.0), op("lt", c.x[0], 0.0)) if len(c.x) == 1 else None


def pow_base(c: ChainCtx) -> Expr | None:
    """pow.Scalar: a Python base to a tensor power, exp(x * ln(base)) (base > 0)."""
    if len(c.x) != 1 or not c.nums or c.nums[0] <= 0:
        return None
    return op("exp", op("mul", c.x[0], math.log(c.nums[0])))


def log_base(base: float) -> ChainRule:
    return lambda c: op("mul", op("log", c.x[0]), 1.0 / math.log(base)) if len(c.x) == 1 else None


def exp_base(base: float) -> ChainRule:
    return lambda c: op("exp", op("mul", c.x[0], math.log(base))) if len(c.x) == 1 else None


def expm1(c: ChainCtx) -> Expr | None:
    return op("sub", op("exp", c.x[0]), 1.0) if len(c.x) == 1 else None


def floor(c: ChainCtx) -> Expr | None:
    return op("floor", c.x[0]) if len(c.x) == 1 else None

