"""A host tiling function's variants as few guards as test the same (tilingfn.py).

A kernel's variants come in the order its cases brought them, each a list of conditions and
the tiling fields it gives. Variants with the same fields are one (`merged`), their guard
lists alternatives: a tile that fits whole and one that halved give one struct once written
over the sizes (public level2/10's tiling functions: 89.6 KB -> 76 KB). `guard` writes one
variant's alternatives as one condition list: identical ones once, two that differ only in a
test and its negation without it, and the tests every alternative shares outside an `or`.
Every rewrite keeps the answer of testing the variants in order, left to right, wherever
that test does not raise (tests/agent/compiler/test_tiling_variants.py checks it on random
variants).
"""

from __future__ import annotations

import math

from sage.kernels.symbolic import Formula

Variant = tuple[list[list[Formula]], list[Formula]]   # alternative guard lists, tiling fields


def merged(variants: list[tuple[list[Formula], list[Formula]]]) -> list[Variant]:
    """Variants that give the same tiling fields as one, whose guard lists are alternatives:
    `if A: return F` then `if B: return F` is `if A or B: return F` (B still tested only
    when A fails). A later variant joins an earlier one only past variants it excludes (no
    case meets both), so no case that took one of those takes the joined one instead. A
    tile that fits whole and one that halved give one struct once written over the sizes."""
    out: list[Variant] = []
    for conds, fields in variants:
        for k in range(len(out) - 1, -1, -1):
            if out[k][1] == fields:
                out[k][0].append(conds)
                break
            if not all(_excluded_early(conds, alt) for alt in out[k][0]):
                out.append(([conds], fields))
                break
        else:
            out.append(([conds], fields))
    return out


def _excluded_early(a: list[Formula], b: list[Formula]) -> bool:
    """No parameters meet both `a` and `b`, and where `b` holds, `a` fails on a condition
    that contradicts one of `b`'s before any that could raise: tested ahead of `b`, `a`
    neither takes a case `b` took nor raises on one (a test and its negation, bounds of one
    formula that do not meet)."""
    for x in a:
        if any(_contradict(x, y) for y in b):
            return True
        if not total(x):
            return False
    return False


def _complement(x: Formula, y: Formula) -> bool:
    """Exactly one of `x` and `y` holds, whatever the parameters."""
    return x == ("not", y) or y == ("not", x) or {x[0], y[0]} == {"==", "!="} and x[1:] == y[1:]


def _contradict(x: Formula, y: Formula) -> bool:
    if _complement(x, y):
        return True
    bx, by = _bounds(x), _bounds(y)
    return bx is not None and by is not None and bx[0] == by[0] and (bx[2] <= by[1] or by[2] <= bx[1])


def _bounds(f: Formula) -> tuple[Formula, float, float] | None:
    """(formula, lo, hi): `f` says lo <= formula < hi (simplified()'s integer bounds)."""
    if f[0] == "<=<" and f[1][0] == "c" and f[3][0] == "c":
        return f[2], f[1][1], f[3][1]
    if f[0] in (">=", "<", "==") and f[2][0] == "c" and isinstance(f[2][1], int) and not isinstance(f[2][1], bool):
        c = f[2][1]
        return {">=": (f[1], c, math.inf), "<": (f[1], -math.inf, c), "==": (f[1], c, c + 1)}[f[0]]
    return None


def guard(alts: list[list[Formula]]) -> list[Formula] | None:
    """One variant's alternatives as conditions that must all hold, the last of which may be
    ("or", [conds], [conds], ...); None when one alternative has no condition left (always
    true). Alternatives the same but for one test and its negation are one without it;
    conditions every alternative has are tested first where they cannot raise."""
    alts = _joined(list(dict.fromkeys(tuple(a) for a in alts)))
    if any(not a for a in alts):
        return None
    if len(alts) == 1:
        return list(alts[0])
    common = [c for c in alts[0] if total(c) and all(c in a for a in alts[1:])]
    rest = [[c for c in a if c not in common] for a in alts]
    # `P and A and S or P and B and S` is `P and (A or B) and S`: the same tests decide, and
    # B is evaluated only where the alternatives' own tests are (it may raise no more often)
    head = 0
    while all(len(r) > head and r[head] == rest[0][head] for r in rest):
        head += 1
    tail = 0
    while all(len(r) - tail > head and r[-1 - tail] == rest[0][-1 - tail] for r in rest):
        tail += 1
    before, after = rest[0][:head], rest[0][len(rest[0]) - tail:]
    middles = [r[head:len(r) - tail] for r in rest]
    if any(not m for m in middles):
        return common + before + after or None
    return common + before + [("or", *middles)] + after


def _joined(alts: list[tuple]) -> list[tuple]:
    """`X and c and Y` or `X and not c and Y` is `X and Y`: whichever of c and its negation
    holds, the same tests are evaluated in the same order, and one of the two holds."""
    while (pair := _complementary_pair(alts)) is not None:
        i, j, k = pair
        alts[i] = alts[i][:k] + alts[i][k + 1:]
        del alts[j]
        alts = list(dict.fromkeys(alts))
    return alts


def _complementary_pair(alts: list[tuple]) -> tuple[int, int, int] | None:
    """(i, j, k): alternatives i < j the same but at position k, a test and its negation."""
    for i, a in enumerate(alts):
        for j in range(i + 1, len(alts)):
            b = alts[j]
            if len(a) != len(b):
                continue
            diff = [k for k in range(len(a)) if a[k] != b[k]]
            if len(diff) == 1 and _complement(a[diff[0]], b[diff[0]]):
                return i, j, diff[0]
    return None


def flat(conds: list[Formula]) -> list[Formula]:
    """Every condition formula in `conds`, those inside an ("or", ...) too."""
    out: list[Formula] = []
    for c in conds:
        out += [x for alt in c[1:] for x in alt] if c[0] == "or" else [c]
    return out


def total(f: Formula, compares: bool = True) -> bool:
    """No division by a non-constant anywhere in `f`, so it evaluates for any sizes (and,
    without `compares`, no comparison in it either: a local worth hoisting)."""
    if not isinstance(f, tuple) or f[0] in ("p", "c", "v"):
        return True
    if f[0] in ("//", "%", "/") and f[2][0] != "c":
        return False
    if not compares and f[0] in ("<", "<=", ">", ">=", "==", "!=", "not", "<=<"):
        return False
    # a host helper (sage.kernels.host_helpers) never raises: safe with any arguments
    return all(total(a, compares) for a in f[1:] if isinstance(a, tuple))


__all__ = ["Variant", "flat", "guard", "merged", "total"]
