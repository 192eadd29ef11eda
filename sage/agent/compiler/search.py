"""The schedule search: per group, from a start (memory's advice or the default), the cost
model ranks single-knob moves; the simulator measures the most promising within a budget
of runs, and the faster measured schedule wins.

The budget is small on purpose (default 4 runs for a whole task): which group gets the
runs follows the estimate (the slowest groups first), so where the search starts decides
what it can still improve, and a good start from memory leaves the runs for the rest.
Advice not yet proven is put on trial: the group's start with it is timed against the
start without it (a duel, two runs, before anything else); it stays only where it was
strictly faster, and the ratio is the advice's measured effect, which the memory credits
it by.
Every choice is recorded as a `Decision` - {op class, dtype, shape regime, bottleneck}
-> knobs - the shape of what an experience can hold and a later search can start from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel

from sage.agent.compiler.build import Unsupported
from sage.agent.compiler.compiler import CaseProgram
from sage.agent.compiler.costmodel import Estimate, estimate_tile
from sage.agent.compiler.harness import RunStats, run_group
from sage.agent.compiler.lowerings import lower_group
from sage.agent.compiler.schedule import GroupKey, Schedule
from sage.agent.compiler.tilelower import tile_spec
from sage.kernels import Target

DEFAULT_BUDGET = 4
# The cost model is a per-pipe roofline: it ranks moves that change the bytes or the work,
# but tile and buffer moves mostly come out within a few percent of the start, ties it
# cannot break. A move estimated no worse than this over the start is measured.
TIE = 1.05
KNOB_FIELDS = ("tile_len", "buffer_num", "block_dim", "copy_mode", "fp32_compute", "row_axis", "row_split")


class Decision(BaseModel):
    key: GroupKey
    knobs: dict[str, Any]          # the chosen schedule's knobs that differ from the default
    start: str                     # "memory" | "default"
    estimated_us: float | None
    measured_us: float | None = None
    start_measured_us: float | None = None
    bottleneck: str | None = None
    move: str | None = None        # the knob change the search made, if any


@dataclass
class SearchState:
    """What the search knows of one task, kept across the agent's attempts."""

    cases: list[CaseProgram]
    target: Target
    budget: int = DEFAULT_BUDGET
    stats: RunStats = field(default_factory=RunStats)
    ranked: dict[str, list[tuple[float, Schedule, str]]] = field(default_factory=dict)   # group id -> candidates
    chosen: dict[str, Schedule] = field(default_factory=dict)
    decisions: dict[str, Decision] = field(default_factory=dict)
    tried: dict[str, set] = field(default_factory=dict)
    unmeasured: set[str] = field(default_factory=set)     # groups the evaluation's time does not include
    duels: dict[str, Schedule] = field(default_factory=dict)   # group id -> its start without the items on trial
    duel_times: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)  # (without, with) us
    _bottlenecks: dict[str, str | None] = field(default_factory=dict)
    where: dict[str, tuple[int, int]] = field(default_factory=dict)   # group id -> (case, group) it is ranked on

    def schedule_for(self, key: GroupKey) -> Schedule:
        return self.chosen.get(key.id, Schedule())

    def bottleneck_of(self, key: GroupKey) -> str | None:
        """What bounds the group under the default schedule, as the cost model sees it (MTE2,
        V, MTE3 or HBM; None for a group it does not estimate): the fourth fact a decision is
        remembered under, the same for a group whatever start memory gives it."""
        if key.id not in self._bottlenecks:
            c, g = _locate(self, key.id)
            est = _estimate(self.cases[c].plan.groups[g], self.cases[c].built.program, Schedule(), self.target)
            self._bottlenecks[key.id] = est.bottleneck if est else None
        return self._bottlenecks[key.id]


def knob_diff(s: Schedule) -> dict[str, Any]:
    base = Schedule()
    return {f: getattr(s, f) for f in KNOB_FIELDS if getattr(s, f) != getattr(base, f)}


def moves(start: Schedule, outer_axes: int, half: bool, row_mode: bool = False,
          cores: int | None = None) -> list[tuple[str, Schedule]]:
    """Single-knob moves from `start`, named (`row_mode`: the group reduces over rows, where
    splitting the rows across blocks or narrowing the column chunks is a choice; `cores`:
    the vector cores, half of which is the other split of the work a move tries). The
    ranking is stable, so among moves the model cannot tell apart the earlier ones are
    measured first: the block count comes last (tried first, it took the budget of 4 runs
    from better moves and lost on 7 tasks of the suite)."""
    out = []
    if start.tile_len < 16384:
        out.append((f"tile_len {start.tile_len * 2}", start.model_copy(update={"tile_len": start.tile_len * 2})))
    if start.tile_len > 1024:
        out.append((f"tile_len {start.tile_len // 2}", start.model_copy(update={"tile_len": start.tile_len // 2})))
    out.append((f"buffer_num {3 - min(start.buffer_num, 2)}",
                start.model_copy(update={"buffer_num": 3 - min(start.buffer_num, 2)})))
    out.append((f"copy_mode {'auto' if start.copy_mode == 'pad' else 'pad'}",
                start.model_copy(update={"copy_mode": "auto" if start.copy_mode == "pad" else "pad"})))
    if half and start.fp32_compute:
        out.append(("fp32_compute False", start.model_copy(update={"fp32_compute": False})))
    for axis in range(outer_axes):
        if axis != start.row_axis:
            out.append((f"row_axis {axis}", start.model_copy(update={"row_axis": axis})))
    if row_mode:
        out.append((f"row_split {not start.row_split}", start.model_copy(update={"row_split": not start.row_split})))
    if cores and cores > 1:
        dim = cores // 2 if start.block_dim is None else None
        out.append((f"block_dim {dim or 'all'}", start.model_copy(update={"block_dim": dim})))
    return out


def rank(state: SearchState, starts: dict[str, tuple[Schedule, str]]) -> None:
    """Estimate the start and its moves for every tile group. Groups of one class (one id:
    one schedule serves them all) are ranked and timed on the one estimated slowest under
    the start: ranked on the last one, a cast of 16 K elements stood for one of 4 M in the
    same case (level2/06), and the search measured the small one late or not at all."""
    slowest: dict[str, tuple[float, int, int]] = {}
    for c, case in enumerate(state.cases):
        for g, (group, key) in enumerate(zip(case.plan.groups, case.keys)):
            est = _estimate(group, case.built.program, starts.get(key.id, (Schedule(), ""))[0], state.target)
            t = est.time_us if est else -1.0
            if key.id not in slowest or t > slowest[key.id][0]:
                slowest[key.id] = (t, c, g)
    for gid, (_, c, g) in slowest.items():
        state.where[gid] = (c, g)
        case = state.cases[c]
        start, origin = starts.get(gid, (Schedule(), "default"))
        _rank_group(state, case, case.plan.groups[g], case.keys[g], start, origin)


def _rank_group(state: SearchState, case: CaseProgram, group, key: GroupKey, start: Schedule, origin: str) -> None:
    prog = case.built.program
    state.chosen[key.id] = start
    est = _estimate(group, prog, start, state.target)
    state.decisions[key.id] = Decision(key=key, knobs=knob_diff(start), start=origin,
                                       estimated_us=est.time_us if est else None,
                                       bottleneck=est.bottleneck if est else None)
    if est is None:
        state.ranked.pop(key.id, None)
        return
    spec = tile_spec(group, prog, "g", fp32=start.fp32_compute, row_axis=start.row_axis)
    half = bool({l.dtype for l in spec.leaves if hasattr(l, "dtype")} & {"float16"}) and \
        spec.compute == "float32" and not spec.reduce_rows
    cands = [(est.time_us, start, "start")]
    for name, cand in moves(start, len(spec.dims) - 1, half, spec.reduce_rows, state.target.vector_cores):
        e = _estimate(group, prog, cand, state.target)
        if e is not None:
            cands.append((e.time_us, cand, name))
    cands.sort(key=lambda c: c[0])
    state.ranked[key.id] = cands


def _estimate(group, prog, sched: Schedule, target: Target) -> Estimate | None:
    if group.kind != "tile" or not group.stores:
        return None
    try:
        spec = tile_spec(group, prog, "g", fp32=sched.fp32_compute, row_axis=sched.row_axis)
        return estimate_tile(spec, sched.knobs(), target)
    except (Unsupported, ValueError):
        return None


def measure(state: SearchState, case_args: list[list], params: dict[str, np.ndarray], preset: str) -> None:
    """Spend the budget: first the duels (a start from memory on trial against the start
    without it), then the slowest estimated groups, each the start against the best
    estimated move; the faster measured schedule is kept. Advice on trial stays only on the
    groups where it won its duel."""
    _spend(state, case_args, params, preset)
    _settle_trials(state)


def _spend(state: SearchState, case_args: list[list], params: dict[str, np.ndarray], preset: str) -> None:
    order = sorted(state.ranked, key=lambda gid: (gid not in state.duels, -state.ranked[gid][0][0]))
    for gid in order:
        if state.stats.runs >= state.budget:
            break
        c, g = _locate(state, gid)
        case, group = state.cases[c], state.cases[c].plan.groups[g]
        t_start = _duel(state, gid, case, group, case_args[c], params, preset) if gid in state.duels else None
        if state.stats.runs >= state.budget:
            break
        cands = state.ranked.get(gid, [])
        dec = state.decisions[gid]
        start = state.chosen[gid]
        # A timing run does not judge correctness, so it only compares schedules that compute
        # the same numbers; a precision move waits for a refinement turn's evaluation.
        best = next(((t, s, n) for t, s, n in cands if s != start and s.fp32_compute == start.fp32_compute), None)
        if best is None or best[0] > (dec.estimated_us or 0) * TIE:
            continue                            # the model expects the move to lose
        if t_start is None:
            t_start = _run(state, case, group, start, case_args[c], params, preset)
            if state.stats.runs >= state.budget:
                dec.start_measured_us = t_start
                break
        t_best = _run(state, case, group, best[1], case_args[c], params, preset)
        dec.start_measured_us, dec.measured_us = t_start, t_best
        if t_best is not None and (t_start is None or t_best < t_start):
            state.chosen[gid] = best[1]
            dec.knobs, dec.move, dec.measured_us = knob_diff(best[1]), best[2], t_best
        else:
            dec.measured_us = t_start
        state.tried.setdefault(gid, set()).update({start, best[1]})


def _duel(state: SearchState, gid: str, case: CaseProgram, group, args: list, params, preset: str) -> float | None:
    """Time memory's start of `gid` against the start without the items on trial (two runs,
    when the budget has them). The advice must be strictly faster to stay: a tie is no
    reason to carry it, and it may hurt a group no duel timed. Returns the kept start's
    measured time (None when no duel ran)."""
    if state.budget - state.stats.runs < 2:
        return None
    memory_start, without = state.chosen[gid], state.duels[gid]
    t_memory = _run(state, case, group, memory_start, args, params, preset)
    t_without = _run(state, case, group, without, args, params, preset)
    state.duel_times[gid] = (t_without, t_memory)
    state.tried.setdefault(gid, set()).update({memory_start, without})
    if t_memory is not None and (t_without is None or t_memory < t_without):
        state.decisions[gid].start_measured_us = t_memory
        return t_memory
    _revert(state, gid)
    state.decisions[gid].start_measured_us = t_without
    return t_without


def _revert(state: SearchState, gid: str) -> None:
    c, g = _locate(state, gid)
    without = state.duels[gid]
    _rank_group(state, state.cases[c], state.cases[c].plan.groups[g], state.decisions[gid].key, without,
                "default" if without == Schedule() else "memory")


def _settle_trials(state: SearchState) -> None:
    """Advice on trial is not carried into groups whose duel did not run: unmeasured, it
    could only be a guess (a schedule that ties on one group can cost another 1.6x)."""
    for gid in [g for g in state.duels if g not in state.duel_times]:
        _revert(state, gid)
        del state.duels[gid]


def _locate(state: SearchState, gid: str) -> tuple[int, int]:
    if gid in state.where:
        return state.where[gid]
    for c, case in enumerate(state.cases):
        for g, key in enumerate(case.keys):
            if key.id == gid:
                return c, g
    raise KeyError(gid)


def _run(state: SearchState, case: CaseProgram, group, sched: Schedule, args: list, params, preset: str) -> float | None:
    launch = lower_group(group, case.built.program, "g", sched, state.target)
    if launch is None:
        return None
    return run_group(launch, case.built.program, args, params, preset, state.stats).time_us


def next_move(state: SearchState) -> tuple[str, str, Schedule] | None:
    """For a refinement turn: the untried candidate the model ranks best, on the group with
    the largest estimated time (group id, move name, schedule)."""
    order = sorted((g for g in state.ranked if g not in state.unmeasured), key=lambda gid: -state.ranked[gid][0][0])
    for gid in order:
        tried = state.tried.setdefault(gid, {state.chosen[gid]})
        for _, sched, name in state.ranked[gid]:
            if sched not in tried:
                return gid, name, sched
    return None
