"""Scalars read from tensor data, followed through the kernel's Python (the export's recording).

A kernel that normalises a row reads the row's maximum or sum back as a scalar
(`red.GetValue(0)`), computes with it in Python (`-row_max`, `1.0 / s`, `math.sqrt(v / d + eps)`)
and hands the result to a vector call (`Adds`, `Muls`). While the export records, GetValue
on a float tensor returns a `Traced`: a float (so the run goes on with the right value) that
also carries how it was computed, as an expression over the loads. The emitter writes that
expression as `memref.load` of UB + `arith`/`math` ops feeding the vector op's scalar operand.

What the IR cannot follow is noted instead of followed: a comparison, a truth test or a
conversion to int of a traced value (control flow or indexing on tensor data), or a `math`
function without an MLIR counterpart. The export then refuses in one line.
"""

from __future__ import annotations

import math
import sys
from typing import Any, Callable

# math functions of a kernel (`import math`) with an MLIR `math` dialect counterpart
MATH = {"sqrt": "math.sqrt", "exp": "math.exp", "log": "math.log", "fabs": "math.absf"}


class Taint:
    """The first use of a traced value the IR cannot follow: (what, kernel line), or None. Only the
    kernel's own uses count: the simulator converts the scalar of a vector call with float() too."""

    def __init__(self, filename: str, line: Callable[[], int | None]) -> None:
        self.first: tuple[str, int | None] | None = None
        self.filename, self.line = filename, line

    def note(self, what: str) -> None:
        if self.first is None:
            self.first = (what, self.line())


_taint: Taint | None = None


def set_taint(taint: Taint | None) -> None:
    global _taint
    _taint = taint


def _expr(v: Any) -> tuple:
    if isinstance(v, Traced):
        return v._sage_expr
    return ("const", float(v))


def _value(v: Any) -> float:
    """The plain float (a Traced's own float() would note a conversion)."""
    return float.__float__(v) if isinstance(v, Traced) else float(v)


def _binary(op: str, swap: bool = False) -> Callable:
    fn = {"add": float.__add__, "sub": float.__sub__, "mul": float.__mul__, "div": float.__truediv__,
          "pow": float.__pow__}[op]

    def method(self, other):
        if isinstance(other, bool) or not isinstance(other, (int, float)):
            return NotImplemented
        a, b = (_value(other), _value(self)) if swap else (_value(self), _value(other))
        result = fn(a, b)
        if result is NotImplemented:
            return result
        ea, eb = (_expr(other), self._sage_expr) if swap else (self._sage_expr, _expr(other))
        return Traced(result, (op, ea, eb))
    return method


def _control(what: str, fn: Callable) -> Callable:
    def method(self, *args):
        if _taint is not None and sys._getframe(1).f_code.co_filename == _taint.filename:
            _taint.note(what)
        return fn(float.__float__(self), *(float.__float__(a) if isinstance(a, Traced) else a for a in args))
    return method


class Traced(float):
    """A float read from tensor data, with its expression (`_sage_expr`: kernel code cannot read it)."""

    def __new__(cls, value: float, expr: tuple) -> Traced:
        obj = super().__new__(cls, value)
        obj._sage_expr = expr
        return obj

    __add__, __radd__ = _binary("add"), _binary("add", True)
    __sub__, __rsub__ = _binary("sub"), _binary("sub", True)
    __mul__, __rmul__ = _binary("mul"), _binary("mul", True)
    __truediv__, __rtruediv__ = _binary("div"), _binary("div", True)
    __pow__, __rpow__ = _binary("pow"), _binary("pow", True)

    def __neg__(self) -> Traced:
        return Traced(-float.__float__(self), ("neg", self._sage_expr))

    def __pos__(self) -> Traced:
        return self

    def __abs__(self) -> Traced:
        return Traced(abs(float.__float__(self)), ("math.absf", self._sage_expr))

    __bool__ = _control("a truth test", float.__bool__)
    __lt__, __le__ = _control("a comparison", float.__lt__), _control("a comparison", float.__le__)
    __gt__, __ge__ = _control("a comparison", float.__gt__), _control("a comparison", float.__ge__)
    __eq__, __ne__ = _control("a comparison", float.__eq__), _control("a comparison", float.__ne__)
    __int__, __trunc__ = _control("a conversion to int", float.__int__), _control("a conversion to int", float.__trunc__)
    __floor__, __ceil__ = _control("a conversion to int", float.__floor__), _control("a conversion to int", float.__ceil__)
    __round__ = _control("a conversion to int", float.__round__)
    __floordiv__, __rfloordiv__ = _control("floor division", float.__floordiv__), _control("floor division", float.__rfloordiv__)
    __mod__, __rmod__ = _control("a remainder", float.__mod__), _control("a remainder", float.__rmod__)
    __float__ = _control("float()", float.__float__)
    __hash__ = float.__hash__


def traced_math(name: str, fn: Callable) -> Callable:
    """A kernel's `math.<name>`: followed for the functions of MATH, noted for the others."""
    def call(*args, **kwargs):
        traced = [a for a in args if isinstance(a, Traced)]
        if not traced:
            return fn(*args, **kwargs)
        plain = [float.__float__(a) if isinstance(a, Traced) else a for a in args]
        if name in MATH and len(args) == 1 and not kwargs:
            return Traced(getattr(math, name)(plain[0]), (MATH[name], traced[0]._sage_expr))
        if _taint is not None:
            _taint.note(f"math.{name}")
        return fn(*plain, **kwargs)
    call.__name__ = name
    return call


def loads_of(expr: tuple) -> list:
    """The ("load", ...) leaves of an expression."""
    if expr[0] == "load":
        return [expr]
    if expr[0] == "const":
        return []
    return [leaf for sub in expr[1:] for leaf in loads_of(sub)]
