"""The vector ops an elementwise chain is made of, each with its instruction recipe.

A recipe is data: the DSL vector instructions that compute the op, in order, over symbolic
operands. `lowering.Lowerer` binds them to buffers and writes one kernel line per step:

- `D` the destination buffer, `X` the operand (unary), `A`/`B` the operands (composite
  binary), `T0..T2` temporary buffers of the destination's kind (taken in order before
  the first step, given back after the last);
- `N` the element count of the destination's kind, `PN` that count rounded up to whole
  comparison repeats (`Compare*` instructions work on whole 256 B repeats);
- `V` the scalar operand of a tensor-scalar form, `NEG_V` its negation as the scalar unit
  computes it;
- `Param(key)` a parameter of the op node (elu's alpha), written with `repr`;
- a plain number is a literal (`repr`), a plain string a DSL name written as is (`"mk"`,
  the comparison mask buffer; `"ti"`, the int32 buffer; enum members).

Ops with parameters that change the instruction sequence pick one recipe by the
parameter (`ByParam`: pow's exponent) or by which parameters are present
(`ByParamsPresent`: clamp's bounds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sage.kernels.chain import Op


@dataclass(frozen=True)
class Reg:
    name: str            # "d", "x", "a", "b": bound by the lowering to buffer expressions


@dataclass(frozen=True)
class Temp:
    index: int


@dataclass(frozen=True)
class Param:
    key: str
    default: float | None = None


@dataclass(frozen=True)
class Count:
    padded: bool = False


@dataclass(frozen=True)
class ScalarOf:
    template: str        # the scalar operand `{v}` inside an expression the scalar unit evaluates


Operand = Reg | Temp | Param | Count | ScalarOf | str | float | int
Step = tuple[str, tuple[Operand, ...]]
Recipe = tuple[Step, ...]

V, NEG_V = ScalarOf("{v}"), ScalarOf("-({v})")

D, X, A, B = Reg("d"), Reg("x"), Reg("a"), Reg("b")
T0, T1, T2 = Temp(0), Temp(1), Temp(2)
N, PN = Count(), Count(padded=True)
MASK, INT_BUF = "mk", "ti"


def ins(instr: str, *operands: Operand) -> Step:
    return (instr, operands)


@dataclass(frozen=True)
class ByParam:
    """One recipe per value of a parameter, `default` for any other value."""

    key: str
    table: dict[float, Recipe]
    default: Recipe


@dataclass(frozen=True)
class ByParamsPresent:
    """One recipe per set of parameters present on the node (in `keys` order)."""

    keys: tuple[str, ...]
    table: dict[tuple[str, ...], Recipe]


AnyRecipe = Recipe | ByParam | ByParamsPresent


@dataclass(frozen=True)
class VectorOp:
    name: str
    arity: int
    recipe: AnyRecipe | None = None       # unary and composite binary ops
    scalar: str | None = None             # the op on scalar operands ({x}, or {a} and {b}), for the scalar unit
    vector: str | None = None             # binary: the instruction on two buffers of one kind
    scalar_right: Recipe | None = None    # binary: buffer X op scalar V
    scalar_left: Recipe | None = None     # binary: scalar V op buffer X
    compare: str | None = None            # comparison: its CMPMODE member
    swapped: str | None = None            # comparison: the same relation with its operands swapped
    py: str | None = None                 # comparison: the Python operator, for two scalars
    int32: bool = False                   # the vector unit computes it on int32 operands
    via_float: bool = False               # int32 operands compute in float32 (exact below 2**24)
    needs: frozenset[str] = field(default_factory=frozenset)   # extra buffers: "mask" (mk), "int" (ti)


# -- shared pieces of recipes -----------------------------------------------------------------
def _sigmoid(d: Operand, x: Operand, scale: float) -> Recipe:
    """d = 1 / (1 + exp(-scale*x))."""
    return (ins("Muls", d, x, -scale, N), ins("Exp", d, d, N), ins("Adds", d, d, 1.0, N), ins("Reciprocal", d, d, N))


def _hardsigmoid(d: Operand, x: Operand) -> Recipe:
    return (ins("Muls", d, x, 1.0 / 6.0, N), ins("Adds", d, d, 0.5, N), ins("Maxs", d, d, 0.0, N),
            ins("Mins", d, d, 1.0, N))


# softplus(x) = max(x, 0) + log(1 + exp(-|x|)), stable for large |x|: the log term in T0.
# The scalar forms (a rank-0 operand, on the scalar unit) follow the same formulas.
_SOFTPLUS_SCALAR = "max({x}, 0.0) + math.log1p(math.exp(-abs({x})))"
_SOFTPLUS_TAIL = (ins("Abs", T0, X, N), ins("Muls", T0, T0, -1.0, N), ins("Exp", T0, T0, N),
                  ins("Adds", T0, T0, 1.0, N), ins("Ln", T0, T0, N))

# Abramowitz & Stegun 7.1.26: erf(z) = 1 - t*P(t)*exp(-z^2), t = 1/(1+p*z), |error| <= 1.5e-7.
_AS_P = 0.3275911
_AS_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def _gelu_erf() -> Recipe:
    # gelu(x) = x/2 * (1 + erf(x/sqrt2)); x*erf(x/sqrt2) is even, so
    # gelu(x) = (x + |x| - |x| * q(|x|)) / 2 with q = t*P(t)*exp(-x^2/2): no sign needed.
    a, t, q = T0, T1, T2
    steps = [ins("Abs", a, X, N), ins("Muls", t, a, _AS_P / math.sqrt(2.0), N), ins("Adds", t, t, 1.0, N),
             ins("Reciprocal", t, t, N), ins("Muls", q, t, _AS_A[4], N)]
    for coef in reversed(_AS_A[:4]):
        steps += [ins("Adds", q, q, coef, N), ins("Mul", q, q, t, N)]
    steps += [ins("Mul", t, X, X, N), ins("Muls", t, t, -0.5, N), ins("Exp", t, t, N), ins("Mul", q, q, t, N),
              ins("Mul", q, q, a, N), ins("Add", a, X, a, N), ins("Sub", a, a, q, N), ins("Muls", D, a, 0.5, N)]
    return tuple(steps)


_GELU_TANH_K = 2.0 * math.sqrt(2.0 / math.pi)
# Magnitudes from 2^23 up are whole numbers in float32 (and beyond int32's range): floor
# leaves them as they are.
_FLOAT_INTEGRAL = 8388608.0


def _to_integral(mode: str) -> Recipe:
    """Through int32 with a rounding mode and back; magnitudes past 2^23 are already whole
    (and may not fit int32), so a select keeps them."""
    return (ins("Abs", T0, X, N), ins("CompareScalar", MASK, T0, _FLOAT_INTEGRAL, "CMPMODE.LT", PN),
            ins("Cast", INT_BUF, X, f"RoundMode.{mode}", N), ins("Cast", T0, INT_BUF, "RoundMode.CAST_NONE", N),
            ins("Select", D, MASK, T0, X, "SELMODE.VSEL_TENSOR_TENSOR_MODE", N))


# sin and cos: reduce to r in [-pi, pi] (x - 2 pi round(x / 2 pi), the 2 pi split in a head
# exact in float32 and a tail), then Taylor series in r^2 to r^17 / r^18 (error < 1e-6 there).
_TWO_PI_HI, _TWO_PI_LO = 6.28125, 6.283185307179586 - 6.28125


def _sin_cos(cos: bool) -> Recipe:
    r, r2, p = T0, T1, T2
    steps = [ins("Muls", r, X, 1.0 / (2 * math.pi), N), ins("Cast", INT_BUF, r, "RoundMode.CAST_RINT", N),
             ins("Cast", r, INT_BUF, "RoundMode.CAST_NONE", N), ins("Muls", p, r, -_TWO_PI_HI, N),
             ins("Add", p, p, X, N), ins("Muls", r, r, -_TWO_PI_LO, N), ins("Add", r, r, p, N),
             ins("Mul", r2, r, r, N)]
    terms = 9
    coefs = [(-1) ** k / math.factorial(2 * k + (0 if cos else 1)) for k in range(terms)]
    steps.append(ins("Muls", p, r2, coefs[-1], N))
    for c in reversed(coefs[1:-1]):
        steps += [ins("Adds", p, p, c, N), ins("Mul", p, p, r2, N)]
    steps.append(ins("Adds", p, p, coefs[0], N))
    steps.append(ins("Adds", D, p, 0, N) if cos else ins("Mul", D, p, r, N))
    return tuple(steps)


def _unary(name: str, recipe: AnyRecipe, scalar: str | None = None, **kw) -> VectorOp:
    return VectorOp(name, 1, recipe=recipe, scalar=scalar, **kw)


def _primitive(name: str, instr: str, scalar: str, **kw) -> VectorOp:
    return _unary(name, (ins(instr, D, X, N),), scalar, **kw)


def _binary(name: str, vector: str, right: Recipe, left: Recipe, scalar: str, **kw) -> VectorOp:
    return VectorOp(name, 2, vector=vector, scalar_right=right, scalar_left=left, scalar=scalar, **kw)


def _compare(name: str, mode: str, swapped: str, py: str) -> VectorOp:
    # Atlas A2 compares int32 for equality only (CANN Compare/CompareScalar, sage/npu/isa): the
    # other comparisons of int32 operands run in float32, exact below 2**24.
    on_int = mode == "EQ"
    return VectorOp(name, 2, compare=mode, swapped=swapped, py=py, int32=on_int, via_float=not on_int)


_OPS = [
    # -- unary ---------------------------------------------------------------------------------
    _primitive("relu", "Relu", "max({x}, 0.0)", int32=True),
    _primitive("exp", "Exp", "math.exp({x})"),
    _primitive("log", "Ln", "math.log({x})"),
    _primitive("abs", "Abs", "abs({x})", via_float=True),     # A2's Abs takes half/float only
    _primitive("sqrt", "Sqrt", "math.sqrt({x})"),
    _primitive("rsqrt", "Rsqrt", "1.0 / math.sqrt({x})"),
    _primitive("reciprocal", "Reciprocal", "1.0 / ({x})"),
    _unary("neg", (ins("Muls", D, X, -1.0, N),), "-({x})", int32=True),
    _unary("identity", (ins("Adds", D, X, 0, N),), "{x}", int32=True),
    _unary("square", (ins("Mul", D, X, X, N),), "({x}) * ({x})", int32=True),
    _unary("sigmoid", _sigmoid(D, X, 1.0), "1.0 / (1.0 + math.exp(-({x})))"),
    # tanh(x) = 2 / (1 + exp(-2x)) - 1: saturates cleanly at both ends (no inf/inf).
    _unary("tanh", _sigmoid(D, X, 2.0) + (ins("Muls", D, D, 2.0, N), ins("Adds", D, D, -1.0, N)), "math.tanh({x})"),
    _unary("silu", _sigmoid(T0, X, 1.0) + (ins("Mul", D, X, T0, N),), "({x}) / (1.0 + math.exp(-({x})))"),
    _unary("hardswish", _hardsigmoid(T0, X) + (ins("Mul", D, X, T0, N),),
           "({x}) * min(max(({x}) * (1.0 / 6.0) + 0.5, 0.0), 1.0)"),
    _unary("hardsigmoid", _hardsigmoid(D, X), "min(max(({x}) * (1.0 / 6.0) + 0.5, 0.0), 1.0)"),
    # x * sigmoid(2*sqrt(2/pi)*(x + 0.044715 x^3)) = x / (1 + exp(-k*(x + 0.044715 x^3)))
    _unary("gelu_tanh", (ins("Mul", T0, X, X, N), ins("Muls", T0, T0, 0.044715, N), ins("Adds", T0, T0, 1.0, N),
                         ins("Mul", T0, T0, X, N), ins("Muls", T0, T0, -_GELU_TANH_K, N), ins("Exp", T0, T0, N),
                         ins("Adds", T0, T0, 1.0, N), ins("Div", D, X, T0, N))),
    _unary("gelu", _gelu_erf()),
    _unary("softplus", _SOFTPLUS_TAIL + (ins("Maxs", D, X, 0.0, N), ins("Add", D, D, T0, N)),
           _SOFTPLUS_SCALAR),
    # mish(x) = x * tanh(softplus(x))
    _unary("mish", _SOFTPLUS_TAIL + (ins("Maxs", D, X, 0.0, N), ins("Add", T0, D, T0, N)) + _sigmoid(T0, T0, 2.0)
           + (ins("Muls", T0, T0, 2.0, N), ins("Adds", T0, T0, -1.0, N), ins("Mul", D, X, T0, N)),
           f"({{x}}) * math.tanh({_SOFTPLUS_SCALAR})"),
    _unary("elu", (ins("Mins", T0, X, 0.0, N), ins("Exp", T0, T0, N), ins("Adds", T0, T0, -1.0, N),
                   ins("Muls", T0, T0, Param("alpha", 1.0), N), ins("Maxs", D, X, 0.0, N), ins("Add", D, D, T0, N))),
    _unary("leaky_relu", (ins("Mins", T0, X, 0.0, N), ins("Muls", T0, T0, Param("slope", 0.01), N),
                          ins("Maxs", D, X, 0.0, N), ins("Add", D, D, T0, N))),
    _unary("log1p", (ins("Adds", D, X, 1.0, N), ins("Ln", D, D, N)), "math.log1p({x})"),
    _unary("clamp", ByParamsPresent(("min", "max"), {
        (): (ins("Adds", D, X, 0, N),),
        ("min",): (ins("Maxs", D, X, Param("min"), N),),
        ("max",): (ins("Mins", D, X, Param("max"), N),),
        ("min", "max"): (ins("Maxs", D, X, Param("min"), N), ins("Mins", D, D, Param("max"), N)),
    })),
    _unary("pow_scalar", ByParam("exponent", {
        1.0: (ins("Adds", D, X, 0, N),),
        2.0: (ins("Mul", D, X, X, N),),
        3.0: (ins("Mul", D, X, X, N), ins("Mul", D, D, X, N)),
        0.5: (ins("Sqrt", D, X, N),),
        -0.5: (ins("Rsqrt", D, X, N),),
        -1.0: (ins("Reciprocal", D, X, N),),
    }, default=(ins("Ln", D, X, N), ins("Muls", D, D, Param("exponent"), N), ins("Exp", D, D, N)))),
    # Cast to int32 rounding down and back; magnitudes past 2^23 are already whole (and may
    # not fit int32), so a select keeps them.
    _unary("floor", _to_integral("CAST_FLOOR"), "float(math.floor({x}))", via_float=True, needs=frozenset({"mask", "int"})),
    _unary("ceil", _to_integral("CAST_CEIL"), "float(math.ceil({x}))", via_float=True, needs=frozenset({"mask", "int"})),
    _unary("trunc", _to_integral("CAST_TRUNC"), "float(math.trunc({x}))", via_float=True,
           needs=frozenset({"mask", "int"})),
    # torch.round: half to even, as CAST_RINT
    _unary("round", _to_integral("CAST_RINT"), "float(round({x}))", via_float=True, needs=frozenset({"mask", "int"})),
    _unary("sin", _sin_cos(False), "math.sin({x})", needs=frozenset({"int"})),
    _unary("cos", _sin_cos(True), "math.cos({x})", needs=frozenset({"int"})),
    # -- binary --------------------------------------------------------------------------------
    _binary("add", "Add", (ins("Adds", D, X, V, N),), (ins("Adds", D, X, V, N),), "({a}) + ({b})", int32=True),
    _binary("sub", "Sub", (ins("Adds", D, X, NEG_V, N),), (ins("Muls", D, X, -1.0, N), ins("Adds", D, D, V, N)),
            "({a}) - ({b})", int32=True),
    _binary("mul", "Mul", (ins("Muls", D, X, V, N),), (ins("Muls", D, X, V, N),), "({a}) * ({b})", int32=True),
    # x / v and v / x divide, as torch does: x * (1 / v) is off by an ulp for most v (127: a
    # dynamic quantisation's scale rounds the other way, and round(y / scale) with it). A2 has
    # no tensor-scalar Div (Adds, Muls, Maxs, Mins, LeakyRelu are its scalar forms), so v is
    # spread to a temp first; a temp never aliases D or X, so D may be X.
    _binary("div", "Div", (ins("Duplicate", T0, V, N), ins("Div", D, X, T0, N)),
            (ins("Duplicate", T0, V, N), ins("Div", D, T0, X, N)), "({a}) / ({b})", via_float=True),
    _binary("maximum", "Max", (ins("Maxs", D, X, V, N),), (ins("Maxs", D, X, V, N),), "max({a}, {b})", int32=True),
    _binary("minimum", "Min", (ins("Mins", D, X, V, N),), (ins("Mins", D, X, V, N),), "min({a}, {b})", int32=True),
    # log(e^a + e^b) = max(a, b) + log(1 + exp(-|a - b|)); both operands at the output's kind
    VectorOp("log_add_exp", 2, recipe=(ins("Sub", T0, A, B, N), ins("Abs", T0, T0, N), ins("Muls", T0, T0, -1.0, N),
                                       ins("Exp", T0, T0, N), ins("Adds", T0, T0, 1.0, N), ins("Ln", T0, T0, N),
                                       ins("Max", D, A, B, N), ins("Add", D, D, T0, N)),
             scalar="max({a}, {b}) + math.log1p(math.exp(-abs(({a}) - ({b}))))"),
    # Comparisons give 1 where the relation holds and 0 elsewhere, in the compute dtype: a
    # bool value inside a chain is a 0/1 number (the kernel casts it to bytes when it stores one).
    _compare("gt", "GT", "lt", ">"),
    _compare("lt", "LT", "gt", "<"),
    _compare("ge", "GE", "le", ">="),
    _compare("le", "LE", "ge", "<="),
    _compare("eq", "EQ", "eq", "=="),
    _compare("ne", "NE", "ne", "!="),
    # -- ternary -------------------------------------------------------------------------------
    VectorOp("where", 3, via_float=True),  # where(cond, a, b); A2's Select takes half/float only
]

VECTOR_OPS: dict[str, VectorOp] = {v.name: v for v in _OPS}
INT_OPS = {n for n, v in VECTOR_OPS.items() if v.int32}


def vector_op(name: str) -> VectorOp:
    if name not in VECTOR_OPS:
        raise ValueError(f"unknown elementwise op {name!r}; known: {sorted(VECTOR_OPS)}")
    return VECTOR_OPS[name]


def select_recipe(recipe: AnyRecipe, node: Op) -> Recipe:
    """The instruction sequence for an op node with its parameters."""
    if isinstance(recipe, ByParam):
        return recipe.table.get(node.param(recipe.key), recipe.default)
    if isinstance(recipe, ByParamsPresent):
        present = dict(node.params)
        return recipe.table[tuple(k for k in recipe.keys if k in present)]
    return recipe


def inplace_safe(recipe: AnyRecipe | None) -> bool:
    """The destination may be the operand's own buffer: no step reads the operand after a
    step has written the destination (every instruction's first operand is its destination)."""
    if recipe is None:
        return False
    variants = list(recipe.table.values()) + ([recipe.default] if isinstance(recipe, ByParam) else []) \
        if isinstance(recipe, (ByParam, ByParamsPresent)) else [recipe]
    for steps in variants:
        written = False
        for _, operands in steps:
            if written and any(o == X for o in operands[1:]):
                return False
            written = written or (bool(operands) and operands[0] == D)
    return True


def temps_of(recipe: Recipe) -> int:
    return max((op.index + 1 for _, ops in recipe for op in ops if isinstance(op, Temp)), default=0)
