"""Host formulas are written with only the parentheses precedence needs (generic/pytext.py):
the text evaluates to what the formula's value is (symbolic.evaluate), and a long sum, which
the fully bracketed text nested past Python's parser limit (level1/26_avg_pool3d: "too many
nested parentheses"), stays flat."""

from __future__ import annotations

import ast
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from sage.agent.compiler.generic.pytext import tight
from sage.kernels.symbolic import evaluate, render

NAMES = ["a", "b", "c"]
VALUES = {"a": 7, "b": -3, "c": 12}

leaves = st.one_of(st.sampled_from([("p", 0), ("p", 1), ("p", 2)]),
                   st.integers(-9, 9).map(lambda v: ("c", v)))


def _extend(children):
    binary = st.tuples(st.sampled_from(["+", "-", "*", "//", "%", "<", "<=", "==", "!="]), children, children)
    unary = st.tuples(st.sampled_from(["neg", "abs"]), children)
    power = st.tuples(st.just("**"), children, st.integers(0, 3).map(lambda v: ("c", v)))
    return st.one_of(binary, unary, power)


formulas = st.recursive(leaves, _extend, max_leaves=12)


def _value(text: str):
    try:
        return eval(text, {"math": math}, dict(VALUES))  # noqa: S307 - our own formula text
    except ZeroDivisionError:
        return ZeroDivisionError


def _truth(f):
    try:
        return evaluate(f, [VALUES[n] for n in NAMES])
    except ZeroDivisionError:
        return ZeroDivisionError


@settings(max_examples=400, deadline=None)
@given(formulas)
def test_tight_text_has_the_formulas_value(f) -> None:
    text = tight(f, lambda k: NAMES[k])
    assert _value(text) == _truth(f), text
    # and no more brackets than the fully bracketed text
    assert text.count("(") <= render(f, lambda k: NAMES[k]).count("(")


def test_a_long_sum_is_flat() -> None:
    f = ("p", 0)
    for _ in range(300):
        f = ("+", f, ("*", ("p", 1), ("c", 4)))
    guard = (">=", ("+", f, ("c", 12800)), ("c", 194561))
    text = tight(guard, lambda k: NAMES[k])
    ast.parse(text, mode="eval")          # the bracketed text raised SyntaxError here
    assert "(" not in text
    assert _value(text) == (7 + 300 * -3 * 4 + 12800 >= 194561)
    assert _value(text) == _truth(guard)


def test_chained_comparison_operand_is_bracketed() -> None:
    # (a < b) <= c is not a < b <= c
    f = ("<", ("p", 0), ("p", 1))
    assert tight(f, lambda k: NAMES[k], operand=True) == "(a < b)"
    assert tight(("<=", f, ("p", 2)), lambda k: NAMES[k]) == "(a < b) <= c"
