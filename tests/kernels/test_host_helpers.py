"""Host helpers (sage/kernels/host_helpers.py): a tiling search traced as one formula the
host evaluates by calling the same function, with no guard per candidate it tried."""

from __future__ import annotations

from sage.kernels.host_helpers import helper_source, square_side
from sage.kernels.symbolic import Trace, evaluate, helper_call, tracing


def test_a_search_on_symbolic_sizes_is_one_formula_and_no_guards():
    with tracing(Trace()) as trace:
        cols = trace.param(2117)
        side = helper_call("square_side", 4096, 16, cols)
    assert int(side) == 112 and trace.guards == {}
    # the formula gives the search's answer for other sizes, as the function does: 2048
    # columns of 8 (a divisor near sqrt(4096) = 64), 37 columns (none divides: 8 rounds up)
    assert side.formula == ("square_side", ("c", 4096), ("c", 16), ("p", 0))
    assert evaluate(side.formula, [2048]) == square_side(4096, 16, 2048) == 64
    assert evaluate(side.formula, [37]) == square_side(4096, 16, 37) == 16


def test_outside_a_trace_the_helper_is_the_plain_function():
    assert helper_call("square_side", 4096, 8, 2048) == 64
    assert square_side(4096, 8, 4) == 0          # no candidate: cols below the alignment


def test_the_helper_source_runs_in_the_sandbox_language():
    from sage.npu.restricted import compile_kernel

    compile_kernel("import math\n" + helper_source("square_side"), filename="helpers.py")
