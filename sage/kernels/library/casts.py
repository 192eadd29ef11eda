"""Conversions between any two dtypes as chains of legal Cast instructions.

The A2 Cast page lists few direct pairs (no float -> uint8, no uint8 -> float, no
int32 -> half); every other conversion goes through intermediates. `cast_route` finds the
shortest chain in the instruction table (sage.npu.isa), `cast_lines` writes it with the
intermediates in caller-provided scratch tensors. bool travels as its 0/1 bytes (uint8).

uint16 and uint32 have no row in the A2 Cast table at all: their bytes are read as int16 /
int32 (ReinterpretCast), cast to float32 (int16 -> float exactly; int32 -> float rounds
beyond 2^24, as torch's own conversion of a uint32 does), and the values the signed view
made negative get 2^16 / 2^32 back with float32 vector arithmetic (`_UNSIGNED`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from functools import cache

from sage.kernels.library.source import DTYPE_SIZE

SCRATCH_SLOT_BYTES = 4       # each intermediate slot holds up to 4-byte elements


@cache
def _pairs() -> dict[tuple[str, str], frozenset[str]]:
    from sage.npu.isa.table import cast_modes

    return {(s.name, d.name): m for (s, d), m in cast_modes().items()}


def _as_table(dtype: str) -> str:
    return "uint8" if dtype == "bool" else dtype


@cache
def cast_route(src: str, dst: str) -> tuple[str, ...]:
    """The dtypes a value passes through from `src` to `dst`, both ends included."""
    a, b = _as_table(src), _as_table(dst)
    if a == b:
        return (src, dst)
    prev: dict[str, str] = {a: a}
    todo = deque([a])
    while todo:
        cur = todo.popleft()
        # wider intermediates first: int16 -> int32 through float32, not through half
        for d in sorted((d for (s, d) in _pairs() if s == cur), key=lambda d: (-DTYPE_SIZE[d], d)):
            if d not in prev:
                prev[d] = cur
                todo.append(d)
    if b not in prev:
        raise ValueError(f"no chain of Cast instructions converts {src} to {dst}")
    path = [b]
    while path[-1] != a:
        path.append(prev[path[-1]])
    route = list(reversed(path))
    route[0], route[-1] = src, dst
    return tuple(route)


# unsigned dtype -> (the signed dtype its bytes are read as, 2^bits)
_UNSIGNED = {"uint16": ("int16", 65536.0), "uint32": ("int32", 4294967296.0)}


def hops(src: str, dst: str) -> int:
    """Scratch slots a conversion needs (0 for a single Cast)."""
    if src in _UNSIGNED:
        # the float32 value and the correction (or the value, then the rest of the route)
        return 1 + (0 if dst == "float32" else max(1, hops("float32", dst)))
    return len(cast_route(src, dst)) - 2


def _mode(src: str, dst: str) -> str:
    """torch's conversion: to int truncates, widening is exact, narrowing rounds to nearest."""
    modes = _pairs()[(_as_table(src), _as_table(dst))]
    if dst.startswith(("int", "uint")) or dst == "bool":
        want = ("CAST_TRUNC", "CAST_NONE")
    elif DTYPE_SIZE[dst] >= DTYPE_SIZE[src] and not src.startswith(("int", "uint")) and src != "bool":
        want = ("CAST_NONE", "CAST_RINT")
    else:
        want = ("CAST_RINT", "CAST_NONE")
    return next((m for m in want if m in modes), sorted(modes)[0])


def direct_modes(src: str, dst: str) -> frozenset[str]:
    """The round modes of a single Cast from `src` to `dst` (empty: no direct Cast)."""
    return _pairs().get((_as_table(src), _as_table(dst)), frozenset())


def _view(name: str, dtype: str) -> str:
    return f"{name}.ReinterpretCast(uint8)" if dtype == "bool" else name


def cast_lines(dst: str, src: str, src_dtype: str, dst_dtype: str, count: str,
               scratch: Callable[[int, str], str] | None = None) -> list[str]:
    """Cast instructions converting `count` elements; `scratch(k, dtype)` names the tensor
    that holds intermediate k (slots of SCRATCH_SLOT_BYTES per element)."""
    if src_dtype == dst_dtype:
        raise ValueError("no conversion needed")
    if src_dtype in _UNSIGNED:
        return _unsigned_lines(dst, src, src_dtype, dst_dtype, count, scratch)
    route = cast_route(src_dtype, dst_dtype)
    if len(route) > 2 and scratch is None:
        raise ValueError(f"{src_dtype} -> {dst_dtype} needs {len(route) - 2} scratch slot(s)")
    names = [_view(src, src_dtype)]
    names += [scratch(k, route[k + 1]) for k in range(len(route) - 2)]  # type: ignore[misc]
    names.append(_view(dst, dst_dtype))
    return [f"Cast({names[k + 1]}, {names[k]}, RoundMode.{_mode(route[k], route[k + 1])}, {count})"
            for k in range(len(route) - 1)]


def _unsigned_lines(dst: str, src: str, src_dtype: str, dst_dtype: str, count: str,
                    scratch: Callable[[int, str], str] | None) -> list[str]:
    """uint16 / uint32 -> any dtype (see the module docstring): v = signed(v) + 2^bits * [signed(v) < 0],
    the indicator as min(max(-v, 0), 1) (whole numbers: no compare, no mask buffer)."""
    if scratch is None:
        raise ValueError(f"{src_dtype} -> {dst_dtype} needs scratch slots")
    signed, wrap = _UNSIGNED[src_dtype]
    value = dst if dst_dtype == "float32" else scratch(1, "float32")
    fix = scratch(0, "float32")
    lines = [f"Cast({value}, {src}.ReinterpretCast({signed}), RoundMode.{_mode(signed, 'float32')}, {count})",
             f"Muls({fix}, {value}, -1.0, {count})", f"Maxs({fix}, {fix}, 0.0, {count})",
             f"Mins({fix}, {fix}, 1.0, {count})", f"Muls({fix}, {fix}, {wrap!r}, {count})",
             f"Add({value}, {value}, {fix}, {count})"]
    if dst_dtype != "float32":
        lines += cast_lines(dst, value, "float32", dst_dtype, count,
                            lambda k, d: scratch(k if k != 1 else 0, d) if scratch else "")
    return lines
