"""Int sums with repeated terms, written once times their count (tilingfn.py).

A UB footprint guard sums the same buffers once per input leaf (`e3 + e7 + e3 + e7 + ...`):
public level1/31_iou's tiling functions shrank from 110 KB to 87 KB with each repeated term
written once times its count. Only sums whose every leaf is an int parameter or constant
are regrouped: int addition regroups exactly, float addition does not.
"""

from __future__ import annotations

from collections import Counter
from functools import reduce

from sage.kernels.symbolic import Formula


def is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


_INTEGER_OPS = frozenset({"+", "-", "*", "//", "%", "neg"})


def _integral_formula(f: Formula, ints: frozenset[int]) -> bool:
    """`f` is an int for any int values of parameters `ints` (so its sums may be regrouped)."""
    if f[0] == "p":
        return f[1] in ints
    if f[0] == "c":
        return is_int(f[1])
    return f[0] in _INTEGER_OPS and all(_integral_formula(a, ints) for a in f[1:])


def collapsed(f: Formula, ints: frozenset[int]) -> Formula:
    """`f` with each integer sum's repeated terms written once times their count: a UB
    footprint sums the same buffers once per input (`e3 + e7 + e3 + e7 + ...`, public
    level1/31_iou's tiling functions); int sums regroup exactly."""
    if not isinstance(f, tuple) or f[0] in ("p", "c", "v"):
        return f
    if f[0] != "+" or not _integral_formula(f, ints):
        return (f[0], *(collapsed(a, ints) if isinstance(a, tuple) else a for a in f[1:]))
    terms: list[Formula] = []
    stack = [f]
    while stack:                       # the sum's terms, left to right
        node = stack.pop()
        if node[0] == "+":
            stack += [node[2], node[1]]
        else:
            terms.append(collapsed(node, ints))
    counts = Counter(terms)            # in first-seen order
    return reduce(lambda a, b: ("+", a, b), [t if k == 1 else ("*", ("c", k), t) for t, k in counts.items()])


__all__ = ["collapsed", "is_int"]
