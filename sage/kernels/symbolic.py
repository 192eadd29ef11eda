"""Symbolic sizes: ints and floats that remember how they were computed from a kernel's
shape parameters, as torch's SymInt does for dynamic shapes.

A kernel generator is ordinary Python over ints. Run it on a spec whose sizes are `SymInt`s
(`lift.py`) and every size it derives carries its formula in the parameters: the tile's
rows, the queue bytes, the number of tiles. Where a derived size is written into kernel
text it becomes a field of the tiling struct (`td3`), whose formula the host evaluates per
case (Ascend C's TilingData); where the generator compares sizes (`if cols <= tile_len`)
the outcome is taken from the traced case's values and recorded as a guard, so the text is
valid for every shape on which all the guards come out the same. A value the generator
turns into a plain int (`range(n)`, `int(n)`, a numpy call) loses its formula: it is
written as a literal, which only makes the text specific to that value, never wrong for
the case traced (and the classes are verified against every case, `rules.py`).

A generator marks its tiling decisions with `pin(value, name)` (the tile's rows and
columns): a pinned value is a field of the tiling struct whatever formula chose it (the
knob's 4096 columns, or all of a short row's), so shapes that take different branches of
the same tiling rule still share one kernel text and differ only in the host's tiling.

Formulas are small trees of tuples: ("p", k) parameter k, ("c", v) a constant, (op, a, b),
("k", name, f) a pinned decision whose value is f's.
"""

from __future__ import annotations

import contextvars
import math
from dataclasses import dataclass, field
from typing import Any, Callable

from sage.kernels.host_helpers import HOST_HELPERS

Formula = tuple

# Binary operators and how they render (all rendered with parentheses: the formulas are
# machine-written and evaluated by restricted Python on the host).
_BINARY = {"+": "+", "-": "-", "*": "*", "//": "//", "%": "%", "/": "/", "**": "**",
           "<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "==", "!=": "!="}
_CALLS = {"neg": "-", "abs": "abs", "floor": "math.floor", "ceil": "math.ceil"}


@dataclass
class Trace:
    """What one generator run made symbolic: its parameters (with the traced case's values),
    the guards its comparisons recorded, and the formulas written into its text as fields."""

    values: list[int | float] = field(default_factory=list)       # parameter k's value in the traced case
    guards: dict[Formula, bool] = field(default_factory=dict)     # comparison -> its outcome
    fields: dict[Formula, int] = field(default_factory=dict)      # formula -> field number

    def param(self, value: int | float) -> SymInt | SymFloat:
        k = len(self.values)
        self.values.append(value)
        return wrap(value, ("p", k))

    def field_name(self, formula: Formula) -> str:
        k = self.fields.setdefault(formula, len(self.fields))
        return f"td{k}"


_TRACE: contextvars.ContextVar[Trace | None] = contextvars.ContextVar("sage_sym_trace", default=None)


class tracing:
    """`with tracing() as t:` — Syms made inside belong to `t`."""

    def __init__(self, trace: Trace | None = None) -> None:
        self.trace = trace or Trace()
        self._token: contextvars.Token | None = None

    def __enter__(self) -> Trace:
        self._token = _TRACE.set(self.trace)
        return self.trace

    def __exit__(self, *exc: object) -> None:
        assert self._token is not None
        _TRACE.reset(self._token)


def active() -> Trace | None:
    return _TRACE.get()


def pin(value: Any, name: str) -> Any:
    """`value` as the tiling decision `name`: inside a trace, a field of the tiling struct
    whatever its formula (see the module docstring); outside one, `value` itself."""
    if active() is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    plain = value_of(value)
    return (SymInt if isinstance(plain, int) else SymFloat)(plain, ("k", name, formula_of(value)))


def helper_call(name: str, *args: Any) -> Any:
    """Host helper `name` (sage.kernels.host_helpers) of `args`: its value for the traced
    case, computed on plain values (its loop records no guard), carrying the formula
    (name, *args) the host evaluates by calling the same function."""
    fn = HOST_HELPERS[name]
    value = fn(*(value_of(a) for a in args))
    if active() is None or not any(is_sym(a) for a in args):
        return value
    return wrap(value, (name, *(formula_of(a) for a in args)))


def formula_of(x: Any) -> Formula:
    f = getattr(x, "formula", None)
    if f is not None and isinstance(x, (SymInt, SymFloat)):
        return f
    return ("c", x)


def is_sym(x: Any) -> bool:
    return isinstance(x, (SymInt, SymFloat))


def value_of(x: Any) -> Any:
    """A size's value in the traced case, used without recording a guard (`x` itself when it
    is not symbolic)."""
    return x.plain() if is_sym(x) else x


def wrap(value: Any, formula: Formula) -> Any:
    """`value` carrying `formula`; a constant formula gives the plain value."""
    if formula[0] == "c" or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return SymInt(value, formula)
    if isinstance(value, float):
        return SymFloat(value, formula)
    return value


def _simplify(op: str, a: Formula, b: Formula) -> Formula | None:
    """Identities that keep the formulas short (x + 0, x * 1, 0 * x ...)."""
    ca, cb = a[0] == "c", b[0] == "c"
    if op in ("+", "-") and cb and b[1] == 0:
        return a
    if op == "+" and ca and a[1] == 0:
        return b
    if op == "*" and cb and b[1] == 1 or op in ("//", "/") and cb and b[1] == 1:
        return a
    if op == "*" and ca and a[1] == 1:
        return b
    if op == "*" and (ca and a[1] == 0 or cb and b[1] == 0):
        return ("c", 0)
    return None


def _binary(op: str, a: Any, b: Any, value: Any) -> Any:
    fa, fb = formula_of(a), formula_of(b)
    if fa[0] == "c" and fb[0] == "c":
        return value
    simple = _simplify(op, fa, fb)
    if simple is not None:
        return wrap(value, simple) if simple[0] != "c" else value
    return wrap(value, (op, fa, fb))


def _compare(op: str, a: Any, b: Any, outcome: bool) -> bool:
    trace = active()
    if trace is not None:
        fa, fb = formula_of(a), formula_of(b)
        if fa != fb and (fa[0] != "c" or fb[0] != "c"):      # x == x holds for every shape
            trace.guards[(op, fa, fb)] = outcome
    return outcome


def _render_field(x: Any) -> str:
    trace = active()
    if trace is None:
        return repr(x.plain())
    return trace.field_name(x.formula)


def _number(x: Any) -> bool:
    return isinstance(x, (int, float))


def _make_ops(base: type) -> dict[str, Callable]:
    """The operator methods shared by SymInt and SymFloat, over the plain `base` arithmetic."""
    ops: dict[str, Callable] = {}

    def arith(name: str, sym: str, reflected: bool = False) -> Callable:
        plain = getattr(base, name)

        def method(self, other):
            if not _number(other):
                return NotImplemented
            value = plain(self, other)
            if value is NotImplemented and isinstance(other, float):
                value = getattr(float, name)(float(self.plain()), other)   # an int op a float
            if value is NotImplemented:
                return NotImplemented
            a, b = (other, self) if reflected else (self, other)
            return _binary(sym, a, b, value)
        return method

    for name, sym in (("add", "+"), ("sub", "-"), ("mul", "*"), ("floordiv", "//"), ("mod", "%"),
                      ("truediv", "/"), ("pow", "**")):
        ops[f"__{name}__"] = arith(f"__{name}__", sym)
        ops[f"__r{name}__"] = arith(f"__r{name}__", sym, reflected=True)

    def compare(name: str, sym: str) -> Callable:
        plain = getattr(base, name)

        def method(self, other):
            if not _number(other):
                return NotImplemented
            outcome = plain(self, other)
            if outcome is NotImplemented:
                # int vs float: compare as floats
                outcome = getattr(float, name)(float(self), float(other))
            return _compare(sym, self, other, bool(outcome))
        return method

    for name, sym in (("__lt__", "<"), ("__le__", "<="), ("__gt__", ">"), ("__ge__", ">="), ("__eq__", "=="),
                      ("__ne__", "!=")):
        ops[name] = compare(name, sym)

    def unary(name: str, sym: str) -> Callable:
        plain = getattr(base, name)

        def method(self):
            return wrap(plain(self), (sym, self.formula))
        return method

    ops["__neg__"] = unary("__neg__", "neg")
    ops["__abs__"] = unary("__abs__", "abs")
    ops["__pos__"] = lambda self: self
    ops["__hash__"] = lambda self: base.__hash__(self)

    def boolean(self) -> bool:
        return _compare("!=", self, 0, base.__bool__(self))
    ops["__bool__"] = boolean

    def fmt(self, spec: str) -> str:
        return _render_field(self) if not spec else format(self.plain(), spec)
    ops["__format__"] = fmt
    ops["__str__"] = _render_field
    ops["__repr__"] = _render_field
    return ops


class SymInt(int):
    """An int with the formula it was computed by (see the module docstring)."""

    formula: Formula

    def __new__(cls, value: int, formula: Formula) -> SymInt:
        obj = int.__new__(cls, value)
        obj.formula = formula
        return obj

    def plain(self) -> int:
        return int.__int__(self)

    def __round__(self, ndigits: int | None = None) -> SymInt:
        return self

    def __reduce__(self) -> tuple:
        return (int, (self.plain(),))         # pickled (to a worker, a cache): the value only


class SymFloat(float):
    """A float with the formula it was computed by."""

    formula: Formula

    def __new__(cls, value: float, formula: Formula) -> SymFloat:
        obj = float.__new__(cls, value)
        obj.formula = formula
        return obj

    def plain(self) -> float:
        return float.__float__(self)

    def __floor__(self) -> Any:
        return wrap(math.floor(self.plain()), ("floor", self.formula))

    def __ceil__(self) -> Any:
        return wrap(math.ceil(self.plain()), ("ceil", self.formula))

    def __reduce__(self) -> tuple:
        return (float, (self.plain(),))


def _float_hash(self: SymFloat) -> int:
    # Not the plain float's hash: a symbolic constant must not find a cached entry of an equal
    # concrete one (an lru_cache or memo keyed by expression trees), where the lookup's
    # equality test would record a guard on its value and return text written for that value.
    return hash(("sym", float.__float__(self), self.formula))


for _name, _fn in _make_ops(int).items():
    setattr(SymInt, _name, _fn)
for _name, _fn in _make_ops(float).items():
    setattr(SymFloat, _name, _fn)
SymFloat.__hash__ = _float_hash


# -- formulas as text and as values -------------------------------------------------------------
def render(f: Formula, name: Callable[[int], str]) -> str:
    """Python text of formula `f`, parameter k written as `name(k)`."""
    kind = f[0]
    if kind == "p":
        return name(f[1])
    if kind == "c":
        return _literal(f[1])
    if kind == "k":
        return render(f[2], name)
    if kind in HOST_HELPERS:
        return f"{kind}({', '.join(render(a, name) for a in f[1:])})"
    if kind in _CALLS:
        inner = render(f[1], name)
        return f"(-{inner})" if kind == "neg" else f"{_CALLS[kind]}({inner})"
    return f"({render(f[1], name)} {_BINARY[kind]} {render(f[2], name)})"


def _literal(v: Any) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "float('nan')"
        if math.isinf(v):
            return "float('inf')" if v > 0 else "float('-inf')"
    return repr(value_of(v))


def evaluate(f: Formula, params: list[Any]) -> Any:
    """The value of formula `f` for parameter values `params`."""
    kind = f[0]
    if kind == "p":
        return params[f[1]]
    if kind == "c":
        return f[1]
    if kind == "k":
        return evaluate(f[2], params)
    if kind == "neg":
        return -evaluate(f[1], params)
    if kind == "abs":
        return abs(evaluate(f[1], params))
    if kind == "floor":
        return math.floor(evaluate(f[1], params))
    if kind == "ceil":
        return math.ceil(evaluate(f[1], params))
    if kind in HOST_HELPERS:
        return HOST_HELPERS[kind](*(evaluate(a, params) for a in f[1:]))
    a, b = evaluate(f[1], params), evaluate(f[2], params)
    return _APPLY[kind](a, b)


_APPLY: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "//": lambda a, b: a // b,
    "%": lambda a, b: a % b, "/": lambda a, b: a / b, "**": lambda a, b: a ** b,
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
}


def guard_holds(guard: Formula, outcome: bool, params: list[Any]) -> bool:
    """Whether a recorded comparison comes out as it did, for these parameter values
    (a comparison that cannot be evaluated, a division by zero, does not hold)."""
    try:
        return bool(evaluate(guard, params)) == outcome
    except (ZeroDivisionError, OverflowError, ValueError):
        return False


def params_of(f: Formula) -> set[int]:
    if f[0] == "p":
        return {f[1]}
    if f[0] == "c":
        return set()
    if f[0] == "k":
        return params_of(f[2])
    return set().union(*(params_of(a) for a in f[1:]))


__all__ = ["Formula", "SymFloat", "SymInt", "Trace", "active", "evaluate", "formula_of", "guard_holds", "helper_call",
           "is_sym", "params_of", "pin", "render", "tracing", "value_of", "wrap"]
