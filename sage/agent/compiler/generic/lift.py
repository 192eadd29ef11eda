"""A generator's spec with its sizes made symbolic (`sym.py`), for one traced launch.

Every int of a spec (sizes, strides, offsets, element counts) and every float (a chain's
constants, a histogram's range, a scatter's value) becomes a parameter of the launch: the
generator then writes its kernel in terms of them, and the host passes their values at
launch. A string naming a GM buffer is renamed to its place among the spec's buffers
(`b0`, `b1`, ...), so that two cases whose programs number their temporaries differently
still write the same kernel text. Outside a trace (`sym.tracing`) specs pass unchanged:
the search's timing runs and the cost model see the concrete generators as before.

Which fields are structure rather than size is data (`STRUCTURAL`): an axis number, a
convolution's window geometry (model constants that shape the generated loops).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from sage.kernels.symbolic import Trace, active, is_sym
from sage.kernels import Const, Inp, Op, Reduce

# Fields that say how a kernel is built, not how large its data is: never parameters.
STRUCTURAL = frozenset({"row", "stride", "padding", "dilation", "kernel", "kh", "kw", "name", "dtype",
                        "index_dtype", "out_dtype", "compute", "values_only"})


@dataclasses.dataclass
class Lifting:
    """One launch's lifting: the trace its parameters belong to and the buffer renaming."""

    trace: Trace
    is_buffer: Callable[[str], bool]               # whether a name is a GM buffer of the program
    renamed: dict[str, str] = dataclasses.field(default_factory=dict)   # program name -> kernel name
    consts: dict[str, Any] = dataclasses.field(default_factory=dict)    # repr of an expression's constant -> its parameter


_LIFTING: list[Lifting] = []


class lifting:
    """`with lifting(trace, is_buffer):` — `lift` makes specs symbolic in `trace`."""

    def __init__(self, trace: Trace, is_buffer: Callable[[str], bool]) -> None:
        self.state = Lifting(trace, is_buffer)

    def __enter__(self) -> Lifting:
        _LIFTING.append(self.state)
        return self.state

    def __exit__(self, *exc: object) -> None:
        _LIFTING.pop()


def lift(spec: Any) -> Any:
    """`spec` with its sizes as parameters of the active trace (unchanged outside one)."""
    if not _LIFTING or active() is not _LIFTING[-1].trace:
        return spec
    return _lift(spec, _LIFTING[-1], None)


def canonical(names: list[str]) -> list[str]:
    """Buffer names as the lifted kernels call them (unchanged outside a lifting): for a
    lowering that writes a host launcher of its own around several lifted kernels."""
    if not _LIFTING:
        return list(names)
    st = _LIFTING[-1]
    return [st.renamed.setdefault(n, f"b{len(st.renamed)}") if st.is_buffer(n) else n for n in names]


def canonical_call(call: str) -> str:
    """`name(a0, t11)` with its buffer arguments as `canonical` names them."""
    head, _, rest = call.partition("(")
    args = [a.strip() for a in rest.rstrip(")").split(",") if a.strip()]
    return f"{head}({', '.join(canonical(args))})"


def _lift(x: Any, st: Lifting, field: str | None) -> Any:
    if field in STRUCTURAL:
        return x
    if isinstance(x, bool) or x is None:
        return x
    if isinstance(x, (int, float)):
        return st.trace.param(x)
    if isinstance(x, str):
        if st.is_buffer(x):
            return st.renamed.setdefault(x, f"b{len(st.renamed)}")
        return x
    if isinstance(x, tuple):
        return tuple(_lift(v, st, None) for v in x)
    if isinstance(x, list):
        return [_lift(v, st, None) for v in x]
    if isinstance(x, Const):
        plain = isinstance(x.value, (int, float)) and not isinstance(x.value, bool) and not is_sym(x.value)
        return Const(_const_param(x.value, st) if plain else _lift(x.value, st, None))
    if isinstance(x, Inp):
        return x
    if isinstance(x, Op):
        return Op(x.name, tuple(_lift(a, st, None) for a in x.args),
                  tuple((k, _lift(v, st, None)) for k, v in x.params))
    if isinstance(x, Reduce):
        return Reduce(x.kind, _lift(x.arg, st, None))
    if isinstance(x, BaseModel):
        values = {name: _lift(getattr(x, name), st, name) for name in type(x).model_fields}
        return type(x).model_construct(**values)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        values = {f.name: _lift(getattr(x, f.name), st, f.name) for f in dataclasses.fields(x) if f.init}
        return dataclasses.replace(x, **values)
    return x


def _const_param(x: int | float, st: Lifting) -> Any:
    """An expression tree's constant as a parameter; one equal to an earlier constant of the
    launch is that constant's parameter, guarded equal to a parameter of its own. A chain that
    repeats a constant (softcapping's `tanh(x / cap) * cap` taken twice; a mean's 1/n four
    times) then keeps its common subexpressions: the lowering's memo finds equal trees only
    when their constants are the same parameter (`SymFloat`'s hash is its formula's), and a
    kernel that recomputes each copy does up to twice the vector work and may lose double
    buffering (issue 31: level2/15 device 11.0 -> 18.6 us). The guard keeps a case whose
    copies differ off this text (the host computes both parameters)."""
    key = repr(x)                                  # -0.0 is not 0.0, 2 is not 2.0
    first = st.consts.get(key) if x == x else None  # NaN shares nothing: `==` would not hold
    own = st.trace.param(x)
    if first is None:
        st.consts[key] = own
        return own
    st.trace.guards[("==", own.formula, first.formula)] = True
    return first


def shape_free(spec: Any, buffers: set[str]) -> Any:
    """`spec` with its sizes as what a code path depends on (0, 1 or many; a constant as a
    float) and its buffers renamed in order: equal for two cases that can share a schedule."""
    trace = Trace()
    lifted = _lift(spec, Lifting(trace, lambda name: name in buffers), None)
    return _categories(lifted, trace.values)


def _categories(x: Any, values: list[Any]) -> Any:
    from sage.kernels.symbolic import SymFloat, SymInt

    if isinstance(x, SymInt):
        v = values[x.formula[1]]
        return ("n", min(v, 2) if v >= 0 else -1)
    if isinstance(x, SymFloat):
        return ("f",)
    if isinstance(x, (tuple, list)):
        return tuple(_categories(v, values) for v in x)
    if isinstance(x, Const):
        return ("const", _categories(x.value, values))
    if isinstance(x, Op):
        return (x.name, _categories(x.args, values), _categories(tuple(v for _, v in x.params), values))
    if isinstance(x, Reduce):
        return ("reduce", x.kind, _categories(x.arg, values))
    if isinstance(x, BaseModel):
        return (type(x).__name__, tuple((k, _categories(getattr(x, k), values)) for k in type(x).model_fields))
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return (type(x).__name__, tuple((f.name, _categories(getattr(x, f.name), values)) for f in dataclasses.fields(x)))
    return x


__all__ = ["STRUCTURAL", "canonical", "canonical_call", "lift", "lifting", "shape_free"]
