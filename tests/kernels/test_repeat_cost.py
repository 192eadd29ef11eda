"""The repeat form of a tile's broadcast or row reduction follows its cost (sage/kernels/repeat_cost.py).

The figures are worked by hand from the ascend910b2 preset's tables: issue 2 cycles per
instruction ([scalar] issue_cycles), and per repeat vadd 2.07, vmul 2.13, vadds 1.0, vcadd 7
cycles ([vector.costs], the b32 column for float32); one instruction of r repeats among
back-to-back ones takes max(2, slope x r). float32: 64 lanes per 256 B repeat."""

from __future__ import annotations

import pytest

from sage.kernels.repeat_cost import FormChoice, FormCost, RepeatCosts
from sage.kernels.symbolic import Trace, evaluate, formula_of, guard_holds, tracing
from sage.npu.hardware import load_preset

F32 = 4


@pytest.fixture
def costs() -> RepeatCosts:
    return RepeatCosts(load_preset("ascend910b2"), F32)


def test_a_sum_over_two_rows_of_1024_folds_by_columns(costs):
    # level2/14's tile of 2 rows x 1024 (16 chunks). Column form: 15 Adds-folds of 2 repeats,
    # 15 x max(2, 2.07 x 2) = 62.1, then WholeReduceSum over 2 rows, max(2, 7 x 2) = 14: 76.1
    # in 16 instructions. Row form: per row one WholeReduceSum of 16 repeats, max(2, 7 x 16) =
    # 112, twice, then the same 14: 238 in 3 instructions.
    forms = costs.reduce("WholeReduceSum", "Add", False, 2, 1024)
    assert forms["cols"] == FormCost(pytest.approx(76.1), 16)
    assert forms["rows"] == FormCost(pytest.approx(238.0), 3)
    choice = FormChoice(costs, 2, 1024)
    assert choice.reduce("WholeReduceSum", "Add", False) == "cols"
    assert choice.instructions == 16


def test_a_copy_of_one_row_of_1000_goes_by_rows(costs):
    # 1 row x 1000 = 15 full chunks + 40 lanes. Column form: 16 Adds of 1 repeat, each
    # issue-bound, 16 x max(2, 1.0) = 32. Row form: one Adds of 15 repeats, max(2, 15) = 15,
    # and one of the partial chunk, max(2, 1) = 2: 17 in 2 instructions.
    forms = costs.broadcast("Adds", 1, 1000)
    assert forms["cols"] == FormCost(pytest.approx(32.0), 16)
    assert forms["rows"] == FormCost(pytest.approx(17.0), 2)
    assert FormChoice(costs, 1, 1000).broadcast("Adds") == "rows"


def test_equal_cycles_go_to_fewer_instructions_and_the_record_mode_counts_instructions(costs):
    # a product over 2 x 1024: 16 x max(2, 2.13 x 2) = 68.16 = 2 x max(2, 2.13 x 16), so the
    # row form's 2 instructions beat 16
    forms = costs.broadcast("Mul", 2, 1024)
    assert forms["cols"].cycles == pytest.approx(forms["rows"].cycles)
    assert FormChoice(costs, 2, 1024).broadcast("Mul") == "rows"
    # by records, the 2-row sum takes the row form of 3 instructions at 238 cycles
    choice = FormChoice(costs, 2, 1024, by="records")
    assert choice.reduce("WholeReduceSum", "Add", False) == "rows"
    assert choice.instructions == 3


def test_the_row_form_only_where_its_repeats_fit(costs):
    # a broadcast row form needs a whole chunk and at most 255 repeats a row; a reduction's
    # row partials must fit one repeat (64 x 64 columns); within one chunk there is one form
    assert set(costs.broadcast("Add", 1, 63)) == {"cols"}
    assert set(costs.broadcast("Add", 1, 255 * 64)) == {"cols", "rows"}
    assert set(costs.broadcast("Add", 1, 255 * 64 + 1)) == {"cols"}
    assert set(costs.reduce("WholeReduceMax", "Max", False, 1, 64 * 64)) == {"cols", "rows"}
    assert set(costs.reduce("WholeReduceMax", "Max", False, 1, 64 * 64 + 1)) == {"cols"}
    assert costs.reduce("WholeReduceSum", "Add", True, 3, 64) == {"cols": FormCost(7.0 * 3, 1)}   # max(2, 7 x 3)


def test_a_symbolic_tile_guards_the_row_forms_range_and_counts_its_instructions(costs):
    # on a shape-generic kernel the cycles are compared on the traced sizes (1 row of 1000:
    # the row form, 17 < 32 cycles); what the text depends on is recorded: the row form needs
    # 64 <= nc <= 255 x 64, and its nr x (1 + 1) instructions (a partial last chunk: nc % 64
    # is not 0) are a formula of the sizes
    with tracing(Trace()) as trace:
        nr, nc = trace.param(1), trace.param(1000)
        choice = FormChoice(costs, nr, nc)
        assert choice.broadcast("Adds") == "rows"
    holds = lambda *params: all(guard_holds(g, out, list(params)) for g, out in trace.guards.items())  # noqa: E731
    assert holds(1, 1000) and holds(4, 1000)
    assert not holds(1, 255 * 64 + 1) and not holds(1, 63)
    assert evaluate(formula_of(choice.instructions), [3, 1000]) == 6
    assert not holds(3, 1024)        # no partial chunk: another text (no second instruction)
