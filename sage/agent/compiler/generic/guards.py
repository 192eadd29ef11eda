"""A tiling variant's guards as few conditions as say the same, for the host tiling function.

A generator's comparisons come out as many overlapping guards (`p2 != 0`, `p2 == 1`,
`not (p2 == 0)`; `not (p0 < 1)`, `not (p0 <= 0)`, `p0 <= 4096`). Over integer sizes
each comparison with a constant is a bound, and the bounds of one formula meet in one
interval (`1 <= p0 < 4097`); a parameter an equality pins down decides every guard on it
alone. What is left is ordered shortest first: a guard dividing by a size comes after the
guard that size is positive (the host evaluates them left to right and stops at the first
that fails).
"""

from __future__ import annotations

import math
from typing import Any

from sage.kernels.symbolic import Formula, evaluate, params_of

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_NEGATE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}


def simplified(guards: list[tuple[Formula, bool]], values: list[Any]) -> list[Formula]:
    """Conditions (formulas that must be true) equivalent to `guards` (each a comparison and
    the outcome it must have) for parameter values like `values` (a case that recorded them:
    which formulas are integers)."""
    conds: list[Formula] = []
    for g, outcome in guards:
        op, a, b = g
        if not outcome:
            op = _NEGATE[op] if _integral(a, values) and _integral(b, values) else op
            if op == g[0]:                   # a float comparison: NaN makes `not <` differ from `>=`
                conds.append(("not", g))
                continue
        if a[0] == "c" and b[0] != "c":
            op, a, b = _FLIP[op], b, a
        conds.append((op, a, b))
    fixed = {f[1][1]: f[2][1] for f in conds if f[0] == "==" and f[1][0] == "p" and f[2][0] == "c"}
    kept: list[Formula] = []
    bounds: dict[Formula, list[float]] = {}
    for f in conds:
        if f[0] != "not" and (f[0], f[1][0], f[2][0]) != ("==", "p", "c") and params_of(f) <= set(fixed):
            continue                          # decided by the equalities
        if f[0] in ("<", "<=", ">", ">=", "==") and f[2][0] == "c" and isinstance(f[2][1], int) \
                and not isinstance(f[2][1], bool) and _integral(f[1], values):
            lo, hi = bounds.setdefault(f[1], [-math.inf, math.inf])
            c = f[2][1]
            lo, hi = {"<": (lo, min(hi, c)), "<=": (lo, min(hi, c + 1)), ">": (max(lo, c + 1), hi),
                      ">=": (max(lo, c), hi), "==": (max(lo, c), min(hi, c + 1))}[f[0]]
            bounds[f[1]] = [lo, hi]
            continue
        kept.append(f)
    for x, (lo, hi) in bounds.items():
        if lo == hi - 1:
            kept.append(("==", x, ("c", int(lo))))
        elif lo > -math.inf and hi < math.inf:
            kept.append(("<=<", ("c", int(lo)), x, ("c", int(hi))))
        elif lo > -math.inf:
            kept.append((">=", x, ("c", int(lo))))
        elif hi < math.inf:
            kept.append(("<", x, ("c", int(hi))))
    return sorted(dict.fromkeys(kept), key=lambda f: (_size(f), repr(f)))


def _integral(f: Formula, values: list[Any]) -> bool:
    try:
        v = evaluate(f, values)
    except (ZeroDivisionError, OverflowError, ValueError, IndexError):
        return False
    return isinstance(v, int) and not isinstance(v, bool)


def _size(f: Formula) -> int:
    return 1 if f[0] in ("p", "c") else 1 + sum(_size(a) for a in f[1:] if isinstance(a, tuple))


__all__ = ["simplified"]
