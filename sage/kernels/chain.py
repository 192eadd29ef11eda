"""Elementwise op chains: the expression a fused elementwise kernel computes.

A chain is a small expression tree over the kernel's inputs (`Inp(i)`), scalar constants
(`Const`) and named ops (`Op`). Each input has a broadcast kind relative to the output,
viewed as a 2-D [R, C] array:

- ``full``   the input has the output's shape;
- ``row``    one row of C values broadcast down the R rows (e.g. a bias [N] over [M, N]);
- ``col``    one value per row broadcast along C (e.g. [M, 1] over [M, N]);
- ``scalar`` a single value (a 1-element tensor) broadcast everywhere.

A chain may use the ops of `vector_ops.VECTOR_OPS`; each entry there has its arity and its
instruction recipe (`lowering.py` applies them). Constant operands lower to the scalar
forms (`Adds`, `Muls`, ...), so `x * 0.5 + 1` costs two instructions, not four.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Literal, Union

from sage.kernels.vector_ops import vector_op

Kind = Literal["full", "row", "col", "scalar", "grp", "mod"]
# Grouped broadcast ([B, G, C] outputs, see elementwise.py): `grp` is one row of C per group
# of G output rows ([B, 1, C]), `mod` one [G, C] slab repeated for every group ([1, G, C]).
# Inside a tile (which never crosses a group) they are a row and a full operand.
COMPUTE_KIND = {"grp": "row", "mod": "full"}


@dataclass(frozen=True)
class Inp:
    index: int


@dataclass(frozen=True)
class Const:
    value: float


def _cached_hash(self) -> int:
    """The hash of a frozen expression node, computed once. Lowering keys dicts by whole
    expression trees (uses, memo), and a dataclass hash walks the tree every time: a
    lowering of n nodes hashed O(n^2) nodes. The cached value is left out when pickling
    (`_state`), since str hashes differ between processes."""
    h = self.__dict__.get("_hash")
    if h is None:
        h = hash(tuple(self.__dict__[name] for name in self.__dataclass_fields__))
        object.__setattr__(self, "_hash", h)
    return h


def _state(self) -> dict:
    return {k: v for k, v in self.__dict__.items() if k != "_hash"}


@dataclass(frozen=True)
class Op:
    name: str
    args: tuple["Expr", ...]
    params: tuple[tuple[str, float], ...] = field(default=())
    __hash__ = _cached_hash        # (defined in the class body, so the dataclass keeps it)
    __getstate__ = _state

    def param(self, key: str, default: float | None = None) -> float:
        for k, v in self.params:
            if k == key:
                return v
        if default is None:
            raise KeyError(f"op {self.name} needs parameter {key!r}")
        return default


@dataclass(frozen=True)
class Reduce:
    """A reduction of a full-shape value over the columns of each row (the tile program's
    inner axes): one value per row, a `col` value. `kind` is sum, max or min."""

    kind: str
    arg: "Expr"
    __hash__ = _cached_hash
    __getstate__ = _state


Expr = Union[Inp, Const, Op, Reduce]

def inp(index: int) -> Inp:
    return Inp(index)


def const(value: float) -> Const:
    return Const(float(value))


def op(name: str, *args: Expr | float | int, **params: float) -> Op:
    """Build an op node; bare numbers become constants."""
    arity = vector_op(name).arity
    if len(args) != arity:
        raise ValueError(f"op {name} takes {arity} operand(s), got {len(args)}")
    wrapped = tuple(a if isinstance(a, (Inp, Const, Op, Reduce)) else Const(float(a)) for a in args)
    return Op(name, wrapped, tuple(sorted((k, float(v)) for k, v in params.items())))


def inputs_of(expr: Expr) -> set[int]:
    return set(_inputs(expr))


# Cached: a traced program is a DAG written out as a tree (a shared sub-expression is a
# subtree under every parent), and lowering asks the same trees for every schedule.
@functools.lru_cache(maxsize=1 << 16)
def _inputs(expr: Expr) -> frozenset[int]:
    if isinstance(expr, Inp):
        return frozenset((expr.index,))
    if isinstance(expr, Const):
        return frozenset()
    if isinstance(expr, Reduce):
        return _inputs(expr.arg)
    return frozenset().union(*(_inputs(a) for a in expr.args))


def op_names(expr: Expr) -> set[str]:
    """The names of the ops a chain uses."""
    if isinstance(expr, Reduce):
        return op_names(expr.arg)
    if not isinstance(expr, Op):
        return set()
    return {expr.name}.union(*(op_names(a) for a in expr.args))


def kind_of(expr: Expr, kinds: list[Kind]) -> Kind:
    """The broadcast kind of a sub-expression's value."""
    if isinstance(expr, Inp):
        return COMPUTE_KIND.get(kinds[expr.index], kinds[expr.index])
    if isinstance(expr, Const):
        return "scalar"
    if isinstance(expr, Reduce):
        return "col"
    ks = {kind_of(a, kinds) for a in expr.args} - {"scalar"}
    if not ks:
        return "scalar"
    if "full" in ks or ks == {"row", "col"}:
        return "full"
    return ks.pop()


@functools.lru_cache(maxsize=1 << 16)
def render(expr: Expr) -> str:
    """A readable one-line form, used in kernel comments and reports."""
    if isinstance(expr, Inp):
        return f"x{expr.index}"
    if isinstance(expr, Const):
        return repr(expr.value)
    if isinstance(expr, Reduce):
        return f"reduce_{expr.kind}({render(expr.arg)})"
    extra = "".join(f", {k}={v!r}" for k, v in expr.params)
    return f"{expr.name}({', '.join(render(a) for a in expr.args)}{extra})"
