"""The offline agent: the compiler, its schedule search, and what memory teaches it.

First answer: trace and partition the task (`sage.agent.compiler`), take the shown rules
and experiences (explore/exploit, seeded: proven items usually, untried ones sometimes)
and set the start schedule of every group their hints apply to; an item not yet proven
goes on trial (the search times its start against the start without it, and keeps it
only on the groups where it was faster). Spend the simulator budget on the search, write
the kernel file. It reports as adopted exactly the items whose knobs are in effect in the
kernel it answers with, says why each other shown item is not, and hands the trials'
measured effects to the memory.

Refinement, one evaluated attempt per turn: a failure gets the fix for its error class (an
alignment error: DataCopyPad everywhere; UB capacity: halve the tiles; a wrong result on
half inputs: float32 arithmetic), a correct kernel the next move the cost model ranks best
on the slowest group; a move that made things slower is undone.
"""

from __future__ import annotations

import random
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sage.agent.compiler.compiler import CaseProgram, CompiledTask, compile_cases, trace_cases
from sage.agent.compiler.schedule import GroupKey, Schedule
from sage.agent.compiler.search import DEFAULT_BUDGET, SearchState, knob_diff, measure, next_move, rank
from sage.agent.offline import hints as H
from sage.kernels import Target, flat_args

# Adoption probability by what is known of an item: resident rules proved themselves on
# several operators; a positive utility is exploited, an untried one explored (_p_adopt).
P_RULE, P_GOOD, P_UNTRIED, P_BAD = 0.95, 0.85, 0.5, 0.15


@dataclass
class Attempt:
    schedules: dict[str, Schedule]
    move: tuple[str, str] | None          # (group id, move) of a refinement
    adopted: list[str]
    feedback: dict[str, Any] | None = None


@dataclass
class CompilerAgent:
    task: Any
    target: Target
    preset: str
    seed: int = 0
    budget: int = DEFAULT_BUDGET
    evaluated: int | list[int] | None = None     # the cases the kernel is judged on (None: all)
    compact: bool = False                        # decompositions in compact form (sage/kernels/compact.py)
    cases: list[CaseProgram] = field(default_factory=list)
    state: SearchState | None = None
    knobs_of: dict[str, dict[str, Any]] = field(default_factory=dict)   # adopted id -> its knobs
    scope_of: dict[str, dict[str, Any]] = field(default_factory=dict)
    attempts: list[Attempt] = field(default_factory=list)
    sources: set[str] = field(default_factory=set)                      # every kernel answered
    on_trial: dict[str, list[str]] = field(default_factory=dict)        # item id -> groups it is timed on
    rejections: dict[str, str] = field(default_factory=dict)            # shown item id -> why it is not applied

    # -- the first answer ----------------------------------------------------------------------
    def first(self, rules: list[dict], experiences: list[dict]) -> tuple[str, list[str], str]:
        self.cases = trace_cases(self.task, self.evaluated, compact=self.compact)
        self.state = SearchState(self.cases, self.target, budget=self.budget)
        starts = self._starts(rules, experiences)
        rank(self.state, starts)
        from sage.bench.tasks import kernel_args, parameter_kwargs

        # one group runs alone on the program's inputs: a list argument's tensors one by one
        args = [kernel_args(flat_args(c.case)) for c in self.cases]
        measure(self.state, args, parameter_kwargs(self.task.make_model()), self.preset)
        return self._answer(Attempt(dict(self.state.chosen), None, []))

    def _starts(self, rules: list[dict], experiences: list[dict]) -> dict[str, tuple[Schedule, str]]:
        """Memory's start schedules. An item proven (a resident rule, or positive utility) is
        applied; one not yet proven is put on trial when the coin says so: its groups' starts
        are timed against the starts without it (`SearchState.duels`)."""
        rng = random.Random(zlib.crc32(f"{self.seed}:{self.task.key}".encode()))
        items = [(r, P_RULE) for r in rules] + [(e, _p_adopt(e.get("utility", 0.0), e.get("trials", 0)))
                                                 for e in experiences]
        items.sort(key=lambda it: (-it[1], -float(it[0].get("utility", 0.0)), it[0]["id"]))
        starts: dict[str, tuple[Schedule, str]] = {}
        trusted: dict[str, Schedule] = {}          # the starts from proven items alone
        keys = [k for c in self.cases for k in c.keys]
        for item, p in items:
            hints = item.get("hints") or {}
            knobs = H.knobs_of(hints)
            if knobs is None:
                self.rejections[item["id"]] = "its advice sets nothing this agent schedules"
                continue
            # cube knobs shape only matrix-product groups: on others they would be claimed
            # as adopted while the kernel does not use them
            matching = [k for k in keys if self._in_scope(hints, k) and (k.op_class == "matmul" or not set(knobs) & H.CUBE)]
            changed = {k.id: H.apply(starts.get(k.id, (Schedule(), ""))[0], knobs) for k in matching}
            changed = {gid: s for gid, s in changed.items() if s is not None}
            if not changed:
                self.rejections[item["id"]] = "no group of this task is in its scope, or it is in effect already"
                continue
            if rng.random() >= p:
                measured = f", measured {item['trials']}x" if item.get("trials") else ""
                self.rejections[item["id"]] = f"not drawn this time, utility {float(item.get('utility', 0.0)):+.2f}{measured}"
                continue
            proven = p >= P_GOOD
            for gid, sched in changed.items():
                starts[gid] = (sched, "memory")
                if proven:
                    base = trusted.get(gid, Schedule())
                    trusted[gid] = H.apply(base, knobs) or base
                else:
                    self.on_trial.setdefault(item["id"], []).append(gid)
            self.knobs_of[item["id"]] = knobs
            self.scope_of[item["id"]] = {k: v for k, v in hints.items() if k in H.SCOPE}
        assert self.state is not None
        self.state.duels = {gid: trusted.get(gid, Schedule()) for gids in self.on_trial.values() for gid in gids}
        return starts

    def _in_scope(self, hints: dict[str, Any], key: GroupKey) -> bool:
        assert self.state is not None
        return H.applies(hints, key, self.state.bottleneck_of(key))

    def trials(self) -> list[tuple[str, float, str]]:
        """The items on trial whose duel ran: (id, time without / time with, what was timed)."""
        assert self.state is not None
        out = []
        for item, gids in self.on_trial.items():
            for gid in gids:
                t_without, t_with = self.state.duel_times.get(gid, (None, None))
                if t_without and t_with:
                    out.append((item, t_without / t_with, f"search: group {gid} timed with its advice "
                                f"({t_with:.1f} us) and without ({t_without:.1f} us)"))
        return out

    # -- refinement -------------------------------------------------------------------------
    def refine(self, feedback: dict[str, Any]) -> tuple[str, list[str], str]:
        assert self.state is not None
        last = self.attempts[-1]
        last.feedback = feedback
        kind = feedback.get("kind")
        scheds = dict(last.schedules)
        move = None
        if kind == "error":
            fix = {"AlignmentError": {"copy_mode": "pad"}, "CapacityError": None}.get(feedback.get("error_type"))
            if feedback.get("error_type") == "CapacityError":
                scheds = {g: s.model_copy(update={"tile_len": max(512, s.tile_len // 2), "buffer_num": 1})
                          for g, s in scheds.items()}
                move = ("all", "tile_len halved, buffer_num 1")
            elif fix:
                scheds = {g: s.model_copy(update=fix) for g, s in scheds.items()}
                move = ("all", "copy_mode pad")
        elif kind == "incorrect":
            if any(not s.fp32_compute for s in scheds.values()):
                scheds = {g: s.model_copy(update={"fp32_compute": True}) for g, s in scheds.items()}
                move = ("all", "fp32_compute True")
        elif kind == "correct":
            base = self._best() or last
            before = next((a for a in reversed(self.attempts[:-1]) if a.feedback is not None), None)
            if last.move is not None and last.move[0] != "all" and before is not None and \
                    feedback.get("speedup") is not None and feedback.get("speedup") == before.feedback.get("speedup"):
                # the very same speedup (the simulator is deterministic): the evaluation does not run this group (a case it does not
                # judge), so further moves on it cannot show
                self.state.unmeasured.add(last.move[0])
            # a move the kernel does not show (a tile already covering the data) is skipped:
            # the same source again would only be judged a repeat
            while (found := next_move(self.state)) is not None:
                gid, name, sched = found
                self.state.tried.setdefault(gid, set()).add(sched)
                trial = {**base.schedules, gid: sched}
                if self._compile(trial).source not in self.sources:
                    scheds, move = trial, (gid, name)
                    break
        if move is None:
            best = self._best() or last
            return self._answer(Attempt(best.schedules, None, best.adopted))
        return self._answer(Attempt(scheds, move, []))

    def _best(self) -> Attempt | None:
        ok = [a for a in self.attempts if (a.feedback or {}).get("kind") == "correct"]
        return max(ok, key=lambda a: a.feedback.get("speedup") or 0.0) if ok else None

    # -- writing an answer ---------------------------------------------------------------------
    def _answer(self, attempt: Attempt) -> tuple[str, list[str], str]:
        assert self.state is not None
        scheds = attempt.schedules
        compiled = self._compile(scheds)
        self.sources.add(compiled.source)
        keys = [k for c in self.cases for k in c.keys]
        attempt.adopted = [i for i, knobs in self.knobs_of.items()
                           if any(self._in_scope(self.scope_of[i], k) and H.in_effect(knobs, scheds.get(k.id, Schedule()))
                                  for k in keys)]
        trials = self.trials()
        for item in self.knobs_of:
            if item not in attempt.adopted:
                self.rejections[item] = _why_dropped(item, self.on_trial, trials)
        by_reason: dict[str, list[str]] = {}
        for i, why in self.rejections.items():
            if i not in attempt.adopted:
                by_reason.setdefault(why, []).append(i)
        dropped = [f"{', '.join(ids)} ({why})" for why, ids in by_reason.items()]
        self.attempts.append(attempt)
        runs = self.state.stats.runs
        label = group_labels(self.state.decisions)
        moved = [f"{label[gid]}: {d.move}" for gid, d in self.state.decisions.items() if d.move]
        plan = (f"{compiled.describe()}; search: {runs} simulator run(s) of {self.state.budget}"
                + (f", moves kept: {', '.join(moved)}" if moved else "")
                + (f"; refinement: {attempt.move[1]} on {label.get(attempt.move[0], _every(attempt.move[0]))}"
                   if attempt.move else "")
                + (f"; applied the knob hints of {', '.join(attempt.adopted)}" if attempt.adopted else "")
                + (f"; not applied: {'; '.join(dropped)}" if dropped else "") + ".")
        return compiled.source, list(attempt.adopted), plan

    def _compile(self, scheds: dict[str, Schedule]) -> CompiledTask:
        return compile_cases(self.cases, lambda key: scheds.get(key.id, Schedule()), self.target,
                             f"compiled from the aten graph of {self.task.key}")

    def stats(self) -> dict[str, Any]:
        if self.state is None:
            return {"simulator_runs": 0}
        return {"simulator_runs": self.state.stats.runs, "simulator_failures": self.state.stats.failed,
                "launches": max((len(c.plan.groups) for c in self.cases), default=0),
                "decisions": [d.model_dump(mode="json") for d in self.state.decisions.values()]}


def group_labels(decisions: dict[str, Any]) -> dict[str, str]:
    """A readable name per group class for the attempt's note ("reduction float32", numbered
    when two classes read alike): the class id is a hash a user cannot map to anything."""
    bases = {gid: f"{d.key.op_class} {d.key.dtype}" for gid, d in decisions.items()}
    counts = Counter(bases.values())
    seen: Counter[str] = Counter()
    labels = {}
    for gid, base in bases.items():
        seen[base] += 1
        labels[gid] = f"{base} #{seen[base]}" if counts[base] > 1 else base
    return labels


def _every(gid: str) -> str:
    return "every group" if gid == "all" else gid


def _why_dropped(item: str, on_trial: dict[str, list[str]], trials: list[tuple[str, float, str]]) -> str:
    effects = [e for i, e, _ in trials if i == item]
    if effects:
        return (f"timed {max(effects):.2f}x the speed of the start without it; advice on trial stays only "
                "where it is faster")
    if item in on_trial:
        return "on trial, but the search budget ran out before its duel"
    return "the search or a refinement moved its knobs to a faster schedule"


def _p_adopt(utility: float, trials: int = 0) -> float:
    """Proven (positive utility): exploit; harmful: rarely. An item whose effect was measured
    and came out no faster (utility <= 0: a tie, most often) is not worth another duel's two
    runs, and is drawn as rarely as a harmful one; only one never measured, or measured
    faster but not yet proven, is explored at even odds."""
    if utility > 0.05:
        return P_GOOD
    if utility < -0.05 or (trials and utility <= 0):
        return P_BAD
    return P_UNTRIED


__all__ = ["CompilerAgent", "knob_diff"]
