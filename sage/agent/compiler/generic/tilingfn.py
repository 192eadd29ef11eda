"""A kernel's host tiling function (Ascend C's host tiling function and its TilingData):
from the launch's parameters p0, p1, ..., the first tiling variant whose guards hold gives
the tiling struct, with sub-formulas written more than once as locals (e0 = ...). Split from
hostcode.py; the text is written with only the parentheses precedence needs (pytext.py),
as a long sum nested past Python's parser limit when bracketed."""

from __future__ import annotations

from sage.agent.compiler.generic.alternatives import Variant, flat, guard, merged, total
from sage.agent.compiler.generic.guards import simplified
from sage.agent.compiler.generic.intsums import collapsed, is_int
from sage.agent.compiler.generic.casemodel import Tilings
from sage.agent.compiler.generic.pytext import tight
from sage.kernels.symbolic import Formula, evaluate


def tiling_function(kernel: str, tilings: Tilings) -> str:
    """The kernel's host tiling function `tiling` over its launch parameters p0, p1, ...: the
    first variant whose guards hold gives the tiling struct. The conditions every variant
    shares are tested once before them where that makes the text shorter."""
    n = tilings.counts[kernel]
    ps = [("p", i) for i in range(n)]
    variants = []
    for variant in tilings.variants[kernel]:
        guards, fields = variant
        subbed = [(_sub(g, ps), outcome) for g, outcome in guards]
        # decided without the parameters (x < x, constants alone): true by construction
        subbed = [(g, o) for g, o in subbed if g[0] != "c" and g[1] != g[2]]
        variants.append((simplified(subbed, tilings.values[(kernel, variant)]), [_sub(f, ps) for f in fields]))
        if not variants[-1][0]:
            break             # the variants after one without conditions are never reached
    ints = frozenset(k for k in range(n) if all(is_int(tilings.values[(kernel, v)][k]) for v in tilings.variants[kernel]))
    return tiling_text(n, [([collapsed(c, ints) for c in conds], [collapsed(f, ints) for f in fields])
                           for conds, fields in variants])


def tiling_text(n: int, variants: list[tuple[list[Formula], list[Formula]]]) -> str:
    """`def tiling(p0, ..., p<n-1>)` returning the fields of the first variant (conditions,
    fields) whose conditions all hold, tested left to right, else None; it may return None
    where that test would raise (a division by a size a later variant's guard leaves 0)."""
    head = f"def tiling({', '.join(f'p{i}' for i in range(n))}):"
    grouped = merged(variants)
    plain = _body(grouped, [])
    common = _shared_conditions([alt for alts, _ in grouped for alt in alts])
    hoisted = _body(grouped, common) if common else plain
    return "\n".join([head] + min(plain, hoisted, key=lambda lines: sum(map(len, lines)))) + "\n"


def _body(variants: list[Variant], common: list[Formula]) -> list[str]:
    lines: list[str] = []
    if common:
        shared = _common_terms(common)
        lines += [f"    e{j} = {formula_text(t, params=True, shared=shared, define=True)}" for t, j in shared.items()]
        lines.append("    if not (" + " and ".join(_cond_text(c, shared) for c in common) + "):")
        lines.append("        return None")
    written: list[list[str]] = []
    for alts, fields in variants:
        conds = guard([[c for c in alt if c not in common] for alt in alts])
        shared = _common_terms(flat(conds or []) + fields)
        ret = "return " + tuple_text([formula_text(f, params=True, shared=shared) for f in fields])
        locals_ = [f"    e{j} = {formula_text(t, params=True, shared=shared, define=True)}" for t, j in shared.items()]
        if not conds:
            return lines + locals_ + ["    " + ret]
        block = locals_ + ["    if " + " and ".join(_cond_text(c, shared) for c in conds) + ":", "        " + ret]
        if block in written:
            continue          # guards that differ only in what simplified away: the same test
        written.append(block)
        lines += block
    return lines + ["    return None"]


def _shared_conditions(variants: list[list[Formula]]) -> list[Formula]:
    """Conditions every variant has (in the first one's order), tested once before any of
    them: a kernel's variants differ in a few guards (how many times a tile halved) and share
    the rest (each size's 0 / 1 / many pattern, its bounds), which each branch wrote out again.
    Only conditions that cannot raise are taken (no division by a size): the ones that can
    stay behind the guard, in the variant's own order, that makes their divisor positive.
    Failing a shared one, no variant holds, as before."""
    if len(variants) < 2 or not all(variants):
        return []
    rest = [set(v) for v in variants[1:]]
    return [c for c in variants[0] if total(c) and all(c in r for r in rest)]


def tuple_text(items: list[str]) -> str:
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _cond_text(c: Formula, shared: dict[Formula, int]) -> str:
    if c[0] == "or":
        return "(" + " or ".join(" and ".join(_cond_text(x, shared) for x in alt) for alt in c[1:]) + ")"
    if c[0] == "not":
        return f"not {formula_text(c[1], params=True, shared=shared)}"
    if c[0] == "<=<":
        a, b, c3 = (formula_text(x, params=True, shared=shared, operand=True) for x in c[1:4])
        return f"{a} <= {b} < {c3}"
    return formula_text(c, params=True, shared=shared)


def _common_terms(formulas: list[Formula]) -> dict[Formula, int]:
    """Sub-formulas written more than once that are worth a local (e0 = ...), in an order each
    can be computed in; only ones that divide by constants, so computing them before the
    guards cannot divide by zero. The deepest repeated one first, counted again after each
    pick (a part repeated only inside a picked one is written once, in its definition)."""
    picked: list[Formula] = []
    while True:
        done = set(picked)
        count: dict[Formula, int] = {}

        def walk(f: Formula) -> None:
            if not isinstance(f, tuple) or f[0] in ("p", "c", "v") or f in done:
                return                 # a leaf, or a local's name
            count[f] = count.get(f, 0) + 1
            for a in f[1:]:
                walk(a)

        for f in formulas:
            walk(f)
        for d in picked:               # each local's definition, written once
            for a in d[1:]:
                walk(a)
        best = [f for f, n in count.items() if n > 1 and _depth(f) >= 2 and total(f, compares=False) and f[0] != "k"]
        if not best:
            break
        picked.append(max(best, key=lambda f: (_depth(f), repr(f))))
    # definitions in an order each one's parts come first
    order = sorted(picked, key=lambda f: _depth(f))
    return {f: j for j, f in enumerate(order)}


def _depth(f: Formula) -> int:
    return 0 if not isinstance(f, tuple) or f[0] in ("p", "c", "v") else 1 + max(_depth(a) for a in f[1:])


def _sub(f: Formula, local: list[Formula]) -> Formula:
    """Formula `f` over a launch's parameters, with each parameter replaced by its host term,
    constant sub-formulas folded."""
    kind = f[0]
    if kind == "p":
        return local[f[1]]
    if kind in ("c", "v"):
        return f
    if kind == "k":
        return _sub(f[2], local)
    args = [_sub(a, local) for a in f[1:]]
    if kind == "neg" and args[0][0] == "neg":
        return args[0][1]           # --x (a ceiling of a ceiling's negation): x, exactly
    out = (kind, *args)
    if all(a[0] == "c" for a in args):
        try:
            return ("c", evaluate(out, []))
        except (ZeroDivisionError, OverflowError, ValueError):
            return out
    if len(args) == 2:
        (ka, va), (kb, vb) = (args[0][0], args[0][1] if args[0][0] == "c" else None), \
            (args[1][0], args[1][1] if args[1][0] == "c" else None)
        if kind in ("*", "//", "/") and kb == "c" and vb == 1 or kind in ("+", "-") and kb == "c" and vb == 0:
            return args[0]
        if kind == "*" and ka == "c" and va == 1 or kind == "+" and ka == "c" and va == 0:
            return args[1]
    return out


def formula_text(f: Formula, params: bool = False, shared: dict[Formula, int] | None = None, define: bool = False,
                 operand: bool = False) -> str:
    """Python text of a host formula: ("v", name) leaves are the rule's variables; with
    `params`, ("p", k) leaves are the tiling function's parameters p<k>, and sub-formulas
    in `shared` its locals e<j>. Only the parentheses precedence needs; with `operand`,
    bracketed if it is a comparison (an operand of a chained comparison)."""
    if shared:
        f = _replaced(f, shared, top=define)
    if params:
        return tight(f, lambda k: f"p{k}" if k >= 0 else f"e{-k - 1}", operand)
    names: dict[int, str] = {}
    return tight(_numbered(f, names), lambda k: names[k], operand)


def _replaced(f: Formula, shared: dict[Formula, int], top: bool = False) -> Formula:
    """`f` with the shared sub-formulas as parameters -1-j (rendered e<j>); a shared formula
    itself is written out when it is `f` (its own definition)."""
    if not isinstance(f, tuple) or f[0] in ("p", "c", "v"):
        return f
    if f in shared and not top:
        return ("p", -1 - shared[f])
    return (f[0], *(_replaced(a, shared) for a in f[1:]))


def _numbered(f: Formula, names: dict[int, str]) -> Formula:
    """("v", name) leaves as parameters `render` can name."""
    if f[0] == "v":
        k = len(names)
        names[k] = f[1]
        return ("p", k)
    if f[0] in ("c", "p"):
        return f
    return (f[0], *(_numbered(a, names) for a in f[1:]))


__all__ = ["formula_text", "tiling_function", "tiling_text", "tuple_text"]
