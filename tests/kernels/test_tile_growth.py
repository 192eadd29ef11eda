"""A tile program whose tiles would make more GM copies than a run's distinct records allow
grows its tile (tile.py `_written`): each copy is a distinct record to the replay
(sage/npu/sim/caps.py), and public level1/24's zero fill of a bf16 [128256, 8192] gradient
made 256 K of them at the knob's 4096 elements. Shape-generic: the budget's comparison is a
guard, so a traced small case's kernel is not taken by a case that needs the bigger tile."""

from __future__ import annotations

from sage.kernels import Knobs, tile_geometry
from sage.kernels.chain import Inp, Op
from sage.kernels.library.tile import DISTINCT_BUDGET
from sage.kernels.library.tile_spec import Access, TileOutput, TileSpec
from sage.kernels.symbolic import Trace, guard_holds, tracing
from sage.kernels.target import target_for

TARGET = target_for("ascend910b2")


def _copy(n):  # noqa: ANN001 - an int or a symbolic size
    """y = x over n bf16 elements, one row: a tile is NC elements, one copy in and one out."""
    return TileSpec(name="c", dims=(n,), row=None, compute="float32",
                    leaves=(Access(arg="x", dtype="bfloat16", numel=n, strides=(1,)),),
                    outputs=(TileOutput(expr=Op("identity", (Inp(0),)),
                                        access=Access(arg="y", dtype="bfloat16", numel=n, strides=(1,))),))


def test_a_small_program_keeps_the_knobs_tile():
    geo = tile_geometry(_copy(1 << 20), Knobs(), target=TARGET)
    assert geo.nc == 4096 and geo.tiles == 256


def test_a_billion_elements_take_the_biggest_tile_that_fits_or_one_within_the_budget():
    n = 1 << 30
    geo = tile_geometry(_copy(n), Knobs(), target=TARGET)
    assert geo.nc > 4096 and geo.tiles == -(-n // geo.nc)
    within = geo.tiles * 2 <= DISTINCT_BUDGET
    # not within: twice the tile does not fit UB (the layout halves it back)
    assert within or tile_geometry(_copy(n), Knobs(tile_len=2 * geo.nc), target=TARGET).nc < 2 * geo.nc
    # a quarter of the elements at that tile would have been within: the growth stopped at
    # the first tile that is, or at UB
    assert not (-(-n // (geo.nc // 2)) * 2 <= DISTINCT_BUDGET)


def _traced(n: int) -> tuple[Trace, int]:
    """The tiling of the copy of n elements traced with its sizes as parameters, as the
    compiler lifts a launch (generic/lift.py): the trace and the tile's columns."""
    from sage.agent.compiler.generic.lift import lift, lifting

    with tracing(Trace()) as trace, lifting(trace, lambda name: name in ("x", "y")):
        nc = int(tile_geometry(lift(_copy(n)), Knobs(), target=TARGET).nc)
    return trace, nc


def test_the_budget_is_a_guard_of_the_traced_tiling():
    small, nc = _traced(1 << 20)
    big, big_nc = _traced(1 << 30)
    assert nc == 4096 and big_nc > 4096 and len(small.values) == len(big.values)
    # the small case's tiling holds for itself and refuses the billion (its tile too small)
    holds = [all(guard_holds(g, out, t.values) for g, out in small.guards.items()) for t in (small, big)]
    assert holds == [True, False]
    # and the billion's holds for the billion only
    assert [all(guard_holds(g, out, t.values) for g, out in big.guards.items()) for t in (small, big)] == \
        [False, True]


def _constants(formula) -> set:  # noqa: ANN001 - a nested formula tuple
    if isinstance(formula, tuple):
        if formula and formula[0] == "c":
            return {formula[1]}
        return set().union(*(_constants(f) for f in formula)) if formula else set()
    return set()


def test_a_tile_ub_already_bounds_records_no_copy_budget():
    # a 32768-element tile does not fit UB with its buffers and is halved: a bigger knob could
    # not grow it, so its copies are not tested (a guard, and a variant of its own, for nothing)
    from sage.agent.compiler.generic.lift import lift, lifting

    with tracing(Trace()) as trace, lifting(trace, lambda name: name in ("x", "y")):
        geo = tile_geometry(lift(_copy(1 << 30)), Knobs(tile_len=32768), target=TARGET)
    assert int(geo.nc) < 32768
    seen = set().union(*(_constants(g) for g in trace.guards))
    assert not seen & {DISTINCT_BUDGET, DISTINCT_BUDGET + 1}
