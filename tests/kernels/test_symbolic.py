"""Symbolic sizes (sage/kernels/symbolic.py): formulas, guards, tiling fields and pins, checked
by evaluating what was recorded on other values and comparing with plain Python."""

from __future__ import annotations

import functools

from sage.kernels.symbolic import SymFloat, SymInt, evaluate, guard_holds, pin, render, tracing


def _tile(cols: int, rows: int, tile_len: int = 4096) -> tuple[int, int]:
    """A generator's sizing rule, written as plain Python over ints."""
    nc = cols if cols <= tile_len else tile_len
    nr = max(1, min(rows, 255, tile_len // (-(-nc // 8) * 8)))
    return pin(nc, "nc"), pin(nr, "nr")


def test_arithmetic_keeps_the_formula_and_the_value():
    with tracing() as t:
        n, m = t.param(37), t.param(5)
        x = -(-n // 8) * 8 + m * 2
        assert isinstance(x, SymInt) and x == 50
        assert evaluate(x.formula, [100, 1]) == -(-100 // 8) * 8 + 2
        assert render(x.formula, lambda k: f"p{k}") == "(((-((-p0) // 8)) * 8) + (p1 * 2))"


def test_comparisons_are_guards_that_hold_exactly_for_the_same_outcomes():
    with tracing() as t:
        cols, rows = t.param(300), t.param(7)
        _tile(cols, rows)
    guards = t.guards
    assert guards, "the sizing rule compared sizes"
    same = [(1000, 3), (17, 3), (8, 100)]
    other = [(5000, 7), (300, 1000), (1000, 40)]
    for values in same:
        assert all(guard_holds(g, o, list(values)) for g, o in guards.items()), values
    for values in other:
        assert not all(guard_holds(g, o, list(values)) for g, o in guards.items()), values


def test_fields_are_what_text_writes_and_evaluate_to_the_rule_on_other_sizes():
    with tracing() as t:
        cols, rows = t.param(300), t.param(7)
        nc, nr = _tile(cols, rows)
        text = f"NC = {nc}\nNR = {nr}\nS = {-(-nc // 8) * 8}"
    fields = {f"td{k}": f for f, k in t.fields.items()}
    assert text == "NC = td0\nNR = td1\nS = td2"
    # the same branch of the rule on other sizes: the fields give what plain Python gives
    for c, r in ((1000, 3), (17, 3)):
        nc, nr = _tile(c, r)
        assert [evaluate(fields[f"td{k}"], [c, r]) for k in range(3)] == [nc, nr, -(-nc // 8) * 8]


def test_a_pin_is_a_field_even_when_the_rule_chose_a_constant():
    with tracing() as t:
        nc, _ = _tile(t.param(5000), t.param(7))
        assert f"{nc}" == "td0" and nc == 4096
    assert evaluate(next(iter(t.fields)), [5000, 7]) == 4096


def test_outside_a_trace_everything_is_plain():
    assert _tile(300, 7) == (300, 7) and type(_tile(300, 7)[0]) is int


def test_a_symbolic_float_does_not_hit_a_cache_of_an_equal_constant():
    calls = []

    @functools.lru_cache
    def cached(x):
        calls.append(x)
        return f"Muls(y, x, {x}, n)"

    assert cached(0.5) == "Muls(y, x, 0.5, n)"
    with tracing() as t:
        alpha = t.param(0.5)
        assert isinstance(alpha, SymFloat)
        assert cached(alpha) == "Muls(y, x, td0, n)"      # written for the parameter, not the cached 0.5
    assert not t.guards                                   # and no equality with 0.5 was recorded


def test_an_infinite_size_constant_is_written_as_its_field_in_a_trace_and_as_float_inf_outside():
    # A masked softmax's -inf fill scaled by a tiling value: in kernel text it is the field the
    # host fills (float("td4") would be a string, the kernel's ValueError), outside a trace the value.
    from sage.kernels.lowering import literal

    inf = SymFloat(float("-inf"), ("k", "fill", ("c", float("-inf"))))
    assert literal(inf) == 'float("-inf")' and literal(float("nan")) == 'float("nan")' and literal(0.5) == "0.5"
    with tracing() as t:
        text = literal(pin(float("-inf"), "fill"))
    assert text.startswith("td") and text[2:].isdigit() and t is not None
