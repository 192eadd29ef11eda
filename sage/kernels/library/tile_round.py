"""Rounded stores: a float result rounded and stored as an integer dtype.

`x.round().int()`, floor_divide, or a quantiser's `round(x / scale).to(int8)`: the rounding
is a Cast mode of the float -> int32 conversion (CAST_RINT rounds half to even, as
torch.round does; CAST_FLOOR, CAST_CEIL, CAST_TRUNC). Lowered on its own in float, a
rounding is a magnitude guard, two casts and a select (|x| >= 2**23 is already integral and
must not go through int32); done by the store's conversion it is one Cast to int32 with that
mode, then the ordinary route to the output dtype (int8: int32 -> float32 -> float16 ->
int8, exact for values inside int8's range; outside it torch's own conversion is undefined).
A rounding of a value another rounding made integral changes nothing: trunc(round(x)) (what
`.to(int8)` of a rounded value records) is round(x).
"""

from __future__ import annotations

from collections.abc import Callable

from sage.kernels.chain import Expr, Op
from sage.kernels.library.casts import cast_lines, direct_modes, hops

CAST_MODES = {"floor": "CAST_FLOOR", "ceil": "CAST_CEIL", "round": "CAST_RINT", "trunc": "CAST_TRUNC"}
INT_OUTPUTS = ("int8", "uint8", "int16", "int32")


def _unwrap(e: Expr) -> Expr:
    while isinstance(e, Op) and e.name == "identity":
        e = e.args[0]
    return e


def rounded_store(e: Expr, compute: str, out_dtype: str) -> tuple[Expr, str] | None:
    """(what to lower, the store's cast mode) for an output `rounding(x)` stored as an int."""
    e = _unwrap(e)
    if compute != "float32" or out_dtype not in INT_OUTPUTS or not isinstance(e, Op) or e.name not in CAST_MODES:
        return None
    inner = _unwrap(e.args[0])
    while isinstance(inner, Op) and inner.name in CAST_MODES:
        e, inner = inner, _unwrap(inner.args[0])
    return e.args[0], CAST_MODES[e.name]


def rounded_slots(out_dtype: str) -> int:
    """Scratch slots a rounded store to `out_dtype` needs."""
    return 0 if direct_cast(out_dtype) else min(2, 1 + hops("int32", out_dtype))


def direct_cast(out_dtype: str, mode: str = "CAST_RINT") -> bool:
    return mode in direct_modes("float32", out_dtype)


def rounded_lines(target: str, ref: str, out_dtype: str, mode: str, count: str,
                  scratch: Callable[[int, str], str]) -> list[str]:
    """The store's conversion of float32 `ref` into `target`, rounding in `mode`."""
    if direct_cast(out_dtype, mode):
        return [f"Cast({target}, {ref}, RoundMode.{mode}, {count})"]
    whole = scratch(0, "int32")
    # the intermediates alternate between two slots: each Cast reads one and writes the other
    return [f"Cast({whole}, {ref}, RoundMode.{mode}, {count})",
            *cast_lines(target, whole, "int32", out_dtype, count, lambda k, d: scratch((k + 1) % 2, d))]
