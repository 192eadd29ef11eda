"""A host tiling function's variants with the same fields are written once (generic/tilingfn.py,
`tiling_text`): `if A: return F` then `if B: return F` becomes `if A or B: return F`, a later
variant joins an earlier one past variants it excludes, alternatives that differ in one test
and its negation lose it, and a test every alternative shares is written once.

The property: whatever the variants, the written function returns what testing them in order
returns, wherever that test does not raise; where it raises (a division by a size that a
variant's guard left at 0), the function may raise, return None, or return the fields of a
variant whose conditions all hold."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sage.agent.compiler.generic.tilingfn import tiling_text
from sage.kernels.symbolic import evaluate

P0, P1 = ("p", 0), ("p", 1)


def c(v):
    return ("c", v)


# conditions over two sizes: bounds and ranges of each, a parity test and its negation,
# a comparison of the two, and tests that divide by a size (raise where it is 0)
CONDITIONS = [
    ("<=<", c(1), P0, c(5)), ("<=<", c(5), P0, c(9)), (">=", P0, c(3)), ("<", P0, c(3)), ("==", P1, c(0)),
    ("!=", P1, c(0)), ("==", ("%", P0, c(2)), c(0)), ("!=", ("%", P0, c(2)), c(0)), ("<=<", c(0), P1, c(4)),
    ("not", ("<", P0, P1)), ("<", P0, P1), (">=", ("//", c(8), P1), c(2)), ("<", ("//", c(12), P0), c(3)),
    (">=", ("+", P0, ("//", c(6), P1)), c(4)),
]
FIELDS = [[P0], [("+", P0, P1), c(7)], [c(3)], [("*", P1, c(2))]]
GRID = [(a, b) for a in range(-1, 11) for b in range(-1, 6)]


def _test(f, params):
    """One condition's truth (a range lo <= x < hi and a negation are the tiling's own forms)."""
    if f[0] == "not":
        return not _test(f[1], params)
    if f[0] == "<=<":
        return evaluate(f[1], params) <= evaluate(f[2], params) < evaluate(f[3], params)
    return evaluate(f, params)


def _in_order(variants, params):
    """The reference: each variant's conditions left to right, the first that all hold."""
    for conds, fields in variants:
        if all(_test(f, params) for f in conds):
            return tuple(evaluate(f, params) for f in fields)
    return None


def _holds(conds, params):
    try:
        return all(_test(f, params) for f in conds)
    except ZeroDivisionError:
        return False


variant = st.tuples(st.lists(st.sampled_from(CONDITIONS), min_size=0, max_size=4, unique=True),
                    st.sampled_from(range(len(FIELDS))))


@settings(max_examples=400, deadline=None)
@given(st.lists(variant, min_size=1, max_size=6))
def test_the_written_function_answers_as_the_variants_in_order(raw):
    variants = [(conds, FIELDS[k]) for conds, k in raw]
    text = tiling_text(2, variants)
    scope: dict = {}
    exec(text, scope)                      # noqa: S102 (the compiler's own output, in a test)
    fn = scope["tiling"]
    for params in GRID:
        try:
            want = _in_order(variants, list(params))
        except ZeroDivisionError:
            try:
                got = fn(*params)
            except ZeroDivisionError:
                continue
            allowed = [None] + [tuple(evaluate(f, list(params)) for f in fields)
                                for conds, fields in variants if _holds(conds, list(params))]
            assert got in allowed, (text, params, got)
            continue
        assert fn(*params) == want, (text, params)


def test_variants_with_the_same_fields_are_written_once():
    # a tile that fits whole and one that halved, both giving (p0,): one return
    text = tiling_text(2, [([("<=<", c(1), P0, c(5))], [P0]), ([("<=<", c(5), P0, c(9))], [P0])])
    assert text.count("return (p0,)") == 1


def test_a_variant_joins_an_earlier_one_past_a_variant_it_excludes():
    text = tiling_text(2, [([("<", P0, c(3))], [P0]), ([("<=<", c(3), P0, c(5))], [c(3)]),
                           ([(">=", P0, c(5))], [P0])])
    assert text.count("return (p0,)") == 1
    scope: dict = {}
    exec(text, scope)                      # noqa: S102
    assert [scope["tiling"](p, 0) for p in (1, 3, 4, 6)] == [(1,), (3,), (3,), (6,)]


def test_a_test_and_its_negation_as_the_only_difference_cancel():
    even, odd = ("==", ("%", P0, c(2)), c(0)), ("!=", ("%", P0, c(2)), c(0))
    big = (">=", ("//", c(64), P1), c(2))
    text = tiling_text(2, [([(">=", P1, c(1)), even, big], [P0]), ([(">=", P1, c(1)), odd, big], [P0])])
    assert "% 2" not in text and text.count("64 // p1") == 1


# sums of buffer sizes: the same terms once per input leaf (public level1/31_iou)
TERMS = [P0, P1, ("*", P0, c(4)), ("//", ("+", P1, c(31)), c(32)), ("-", P0, P1), c(7)]


def _sum_of(picks):
    f = TERMS[picks[0]]
    for k in picks[1:]:
        f = ("+", f, TERMS[k])
    return f


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(range(len(TERMS))), min_size=1, max_size=12),
       st.integers(-50, 5000), st.integers(-50, 5000))
def test_an_int_sum_with_repeated_terms_keeps_its_value(picks, a, b):
    from sage.agent.compiler.generic.intsums import collapsed as _collapsed
    from sage.agent.compiler.generic.tilingfn import formula_text

    f = ("<", ("*", c(2), _sum_of(picks)), c(194561))
    g = _collapsed(f, frozenset({0, 1}))
    assert evaluate(g[1], [a, b]) == evaluate(f[1], [a, b])
    if len(set(picks)) < len(picks):
        assert len(formula_text(g, params=True)) <= len(formula_text(f, params=True))
    # float parameters' sums are not regrouped (float addition does not regroup exactly)
    floats = [a / 7 + 0.1, b / 3 + 0.2]
    assert evaluate(_collapsed(f, frozenset())[1], floats) == evaluate(f[1], floats)


def test_a_double_negation_is_its_operand():
    from sage.agent.compiler.generic.tilingfn import _sub

    assert _sub(("neg", ("neg", ("p", 0))), [("p", 3)]) == ("p", 3)
    assert _sub(("neg", ("//", ("neg", ("p", 0)), c(8))), [P1]) == ("neg", ("//", ("neg", P1), c(8)))
