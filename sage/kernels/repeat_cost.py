"""Which repeat form a tile's broadcast or row reduction takes (`repeat_rows.py` writes both),
chosen on what each costs: cycles from the simulator's own cost table, instructions against
the record cap.

The simulator's V pipe runs a vector instruction in `head + slope x repeats` cycles, the
head hidden while the pipe is busy, and the scalar unit issues one instruction every
`issue_cycles` (sage/npu/sim/engine_stream.py; the numbers are the preset's [vector.costs]
and [scalar] tables). A run of back-to-back instructions therefore takes about
sum(max(issue, slope x repeats)): pipe-bound when each instruction has enough repeats,
issue-bound when they are short. For a tile of `nr` rows and `k = ceil(nc / LANES)` chunks:

- a broadcast does nr x k repeats of the same instruction in either form, so the row form
  (nr instructions of k repeats) wins only where the column form's k instructions of nr
  repeats are issue-bound (few rows);
- a row reduction's column form folds the chunks with k - 1 vector adds of nr repeats
  (vadd: slope 2.07 on the 910B2) then one WholeReduce; the row form puts every chunk
  through WholeReduce (vcadd: slope 7), 3.4x the V time of the folds, for nr + 1
  instructions instead of k + 1.

The column form was the only one until level1/10_layer_norm's fp16 [16, 1024, 4096] case
(one row of 4096 per tile, 16,384 tiles) made 2.5 M records in one launch; a fixed ratio
then picked the row form for level2/14's 2-row tiles too, where case 0 took 13,504 cycles
against 11,141 with column-form reductions. Now each site takes its cheaper form, and a
program whose tiles would make more records than `RECORD_BUDGET` is written again with the
form of fewer instructions at every site (`tile.py`).

The estimate is per site and leaves out how the V pipe overlaps the copies: on
level2/19's fp32 [1024, 1024] case (4-row tiles) it picks the column folds, and the
simulator runs that case in 51,700 cycles against 48,907 with every site in the row form
(the task's other two cases are faster than before); level2/18's bf16 and fp16 cases run
1-3 % slower than with the fixed rule (26,659 against 26,383 and 12,814 against 12,477).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

from sage.kernels.symbolic import value_of
from sage.npu import ascendc
from sage.npu.hardware import HardwareSpec
from sage.npu.sim.caps import MAX_DISTINCT_RECORDS, MAX_RECORDS_PER_LAUNCH

Form = Literal["cols", "rows"]
By = Literal["cycles", "records"]

# A tile program's records per launch may take half the cap: the estimate counts the tiles'
# instructions only (not each block's setup), and a launch may run other programs' blocks too.
RECORD_BUDGET = MAX_RECORDS_PER_LAUNCH // 2
# A run may make MAX_DISTINCT_RECORDS distinct records (the replay holds each once), and a GM
# copy is distinct by its address: one program's copies may take an eighth of them, as a run
# has a few launches of a few programs each.
DISTINCT_BUDGET = MAX_DISTINCT_RECORDS // 8


# cycles within this are equal: both forms sum the same repeats in another order (2.13 x 3 x 12
# and 2.13 x 12 x 3 differ in the last bit), and a tie goes to the form of fewer instructions
_SAME = 1e-6


class FormCost(NamedTuple):
    cycles: float         # V-pipe / issue time of the site on one tile
    instructions: int     # records the site makes per tile


@dataclass(frozen=True)
class RepeatCosts:
    """Both forms' cost on one tile of `nr` rows of `nc` columns of a compute dtype of
    `itemsize` bytes (the tile's full size: a last partial tile takes the same form)."""

    spec: HardwareSpec
    itemsize: int

    @property
    def lanes(self) -> int:
        return self.spec.vector.repeat_bytes // self.itemsize

    def _run(self, op: str, repeats) -> float:  # noqa: ANN001 - an int or a symbolic size
        """One instruction `op` (a DSL name) of `repeats` repeats among back-to-back ones."""
        cost = self.spec.vector.costs[getattr(ascendc, op).cost_key]
        slope = cost.b32 if self.itemsize >= 4 else cost.b16
        return max(self.spec.scalar.issue_cycles, slope[1] * repeats)

    def broadcast(self, op: str, nr, nc) -> dict[Form, FormCost]:  # noqa: ANN001
        lanes = self.lanes
        k = (nc + lanes - 1) // lanes
        forms: dict[Form, FormCost] = {"cols": FormCost(k * self._run(op, nr), k)}
        if lanes <= nc <= self.spec.vector.max_repeat * lanes:
            part = 1 if nc % lanes else 0
            forms["rows"] = FormCost(nr * (self._run(op, nc // lanes) + part * self._run(op, 1)), nr * (1 + part))
        return forms

    def reduce(self, whole: str, fold: str, copy: bool, nr, nc) -> dict[Form, FormCost]:  # noqa: ANN001
        """`whole` (WholeReduceSum/Max/Min) of each row, folding chunks with `fold` (Add/Max/Min)
        in the column form, after an `Adds` copy of the first chunk when `copy`."""
        lanes = self.lanes
        last = self._run(whole, nr)                         # the one WholeReduce over the rows
        if nc <= lanes:
            return {"cols": FormCost(last, 1)}
        k = (nc + lanes - 1) // lanes
        first = self._run("Adds", nr) if copy else 0.0
        forms: dict[Form, FormCost] = {
            "cols": FormCost(first + (k - 1) * self._run(fold, nr) + last, k + (1 if copy else 0))}
        if nc <= lanes * lanes:                             # one row's partials fit one repeat
            part = 1 if nc % lanes else 0
            forms["rows"] = FormCost(nr * (self._run(whole, nc // lanes) + part * self._run(whole, 1)) + last,
                                     nr * (1 + part) + 1)
        return forms


@dataclass
class FormChoice:
    """The form of every site of one tile's compute: the cheaper in cycles (`by="cycles"`,
    ties to fewer instructions) or the one of fewer instructions (`by="records"`, ties to
    fewer cycles). Sums the instructions the chosen forms make per tile.

    On a shape-generic kernel (`nr`, `nc` symbolic, symbolic.py) the cycles are compared on
    the traced case's sizes, unrecorded: the form changes what a tile costs, never what it
    computes, and a guard per comparison (each max() of the estimate is one) grew the public
    level1/10_layer_norm file's tiling functions from 17 KB to 42 KB. What does bound the
    text is recorded: that the row form's repeats fit (its range), and the instruction count
    the record budget is checked on."""

    costs: RepeatCosts
    nr: object            # the tile's rows and columns: ints, or symbolic sizes
    nc: object
    by: By = "cycles"
    instructions: int = 0

    def broadcast(self, op: str) -> Form:
        lanes, nr, nc = self.costs.lanes, self.nr, self.nc
        form = self._take(self.costs.broadcast(op, value_of(nr), value_of(nc)))
        if form == "rows" and not lanes <= nc <= self.costs.spec.vector.max_repeat * lanes:
            form = "cols"                                    # (only on a symbolic size: a guard)
        part = 1 if nc % lanes else 0
        self.instructions += (nc + lanes - 1) // lanes if form == "cols" else nr * (1 + part)
        return form

    def reduce(self, whole: str, fold: str, copy: bool) -> Form:
        lanes, nr, nc = self.costs.lanes, self.nr, self.nc
        form = self._take(self.costs.reduce(whole, fold, copy, value_of(nr), value_of(nc)))
        if form == "rows" and not nc <= lanes * lanes:
            form = "cols"
        if nc <= lanes:
            self.instructions += 1
        elif form == "cols":
            self.instructions += (nc + lanes - 1) // lanes + (1 if copy else 0)
        else:
            self.instructions += nr * (1 + (1 if nc % lanes else 0)) + 1
        return form

    def _take(self, forms: dict[Form, FormCost]) -> Form:
        if "rows" not in forms:
            return "cols"
        c, r = forms["cols"], forms["rows"]
        cheaper, dearer = r.cycles < c.cycles - _SAME, c.cycles < r.cycles - _SAME
        if self.by == "cycles":
            rows = cheaper or (not dearer and r.instructions < c.instructions)
        else:
            rows = r.instructions < c.instructions or (r.instructions == c.instructions and cheaper)
        return "rows" if rows else "cols"


__all__ = ["DISTINCT_BUDGET", "RECORD_BUDGET", "FormChoice", "FormCost", "RepeatCosts"]
