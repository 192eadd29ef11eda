"""The tile's rows: the first of nr, nr // 2, ..., 1 whose buffers fit UB, searched on the
traced case's values with only its outcome recorded as guards (tile_layout._rows_that_fit).
The guards must say exactly when another shape makes the same choice: wherever they hold,
the plain search gives the row count the traced formula does."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sage.kernels.library.tile_layout import TileLayout
from sage.kernels.symbolic import Trace, evaluate, guard_holds, tracing


def _layout(per_row: int, fixed: int) -> TileLayout:
    """A layout whose tile takes `per_row` bytes a row (rounded up to 64 rows, as a column
    buffer is) plus `fixed` bytes: the shapes of TileLayout._bytes, growing with the rows."""
    layout = object.__new__(TileLayout)
    layout._bytes = lambda nr, nc, s, made, masked, int_temp: per_row * nr + 4 * (-(-nr // 64) * 64) + fixed
    return layout


def _plain(rows: int, per_row: int, fixed: int, budget: int) -> int | None:
    layout = _layout(per_row, fixed)
    nr = rows
    while nr >= 1:
        if layout._bytes(nr, 0, 0, {}, False, False) <= budget:
            return nr
        nr = nr // 2 if nr > 1 else 0
    return None


def _traced(rows: int, per_row: int, fixed: int, budget: int):
    """The search on symbolic rows and fixed bytes (parameters 0 and 1)."""
    with tracing(Trace()) as trace:
        p, q = trace.param(rows), trace.param(fixed)
        got = _layout(per_row, q)._rows_that_fit(p, 0, 0, budget, {}, False, False)
    return got, trace


def test_halving_four_times_records_three_guards_not_five():
    # 4096 rows of 400 B: 4096 -> 2048 -> 1024 -> 512 -> 256 rows (105,472 B within 190 KB)
    got, trace = _traced(4096, 400, 1024, 190 * 1024)
    assert int(got) == 256 and got.formula == ("//", ("//", ("//", ("//", ("p", 0), ("c", 2)), ("c", 2)), ("c", 2)),
                                               ("c", 2))
    # 256 fits, 512 does not, 256 >= 1: the three it needs (the loop compared at every step)
    assert len(trace.guards) == 3


def test_not_even_one_row_is_one_guard():
    got, trace = _traced(100, 300_000, 0, 190 * 1024)
    assert got is None and list(trace.guards.values()) == [False]
    # the guard is that one row does not fit: true for any fixed bytes, any rows
    (guard,) = trace.guards
    assert all(guard_holds(guard, False, [rows, 5]) for rows in (1, 7, 100_000))


@settings(max_examples=300, deadline=None)
@given(traced=st.integers(1, 20_000), other=st.integers(1, 20_000), per_row=st.integers(1, 2000),
       fixed=st.integers(0, 100_000), other_fixed=st.integers(0, 100_000))
def test_where_the_guards_hold_the_search_makes_the_traced_choice(traced, other, per_row, fixed, other_fixed):
    budget = 190 * 1024
    got, trace = _traced(traced, per_row, fixed, budget)
    if got is None:
        return
    # the traced case itself, and any other shape the guards let in
    for rows, extra in ((traced, fixed), (other, other_fixed), (other, fixed)):
        if all(guard_holds(g, outcome, [rows, extra]) for g, outcome in trace.guards.items()):
            assert evaluate(got.formula, [rows, extra]) == _plain(rows, per_row, extra, budget)
