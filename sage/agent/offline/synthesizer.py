"""The offline synthesizer: library kernel templates, searched over schedule knobs.

It reads the reference's aten trace (every case: dtypes and scalar arguments can change
the kernel), picks a template, starts from plain knobs, applies the knob hints of some of
the rules and experiences it was shown (explore/exploit, seeded) and reports exactly those
as adopted. Each refinement changes one knob, chosen from the feedback: a failed kernel
gets the fix for its error class, a correct one the move its profile suggests, and a move
that made things slower is undone. When nothing is left to try it repeats its best
kernel, which ends the episode. Its answers are kernel source text in the answer contract,
evaluated exactly like an LLM's.
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from sage.agent.offline import schedule
from sage.agent.offline.analysis import NoTemplate
from sage.agent.offline.kernelfile import kernel_file
from sage.agent.offline.templates import CasePlan, plan_case
from sage.kernels import CubeKnobs, Knobs, Target, elementwise_source, matmul_source, row_source, trace_graph

HALF = {"float16", "bfloat16"}
# Adoption probability by what is known of an item: resident rules proved themselves on
# several operators; a positive utility is exploited, an untried one explored.
P_RULE, P_GOOD, P_UNTRIED, P_BAD = 0.95, 0.85, 0.5, 0.15
ROOFLINE_DONE = 0.97


class TaskAnalysis(BaseModel):
    model_config = {"arbitrary_types_allowed": True}

    op_class: str
    plans: list[Any]          # CasePlan per case
    n_args: int
    params: list[str]
    half_inputs: bool
    describe: str


def analyse(task: Any) -> TaskAnalysis:
    """Traces every case; raises NoTemplate when any case falls outside the templates."""
    model = task.make_model()
    plans: list[CasePlan] = []
    n_args, params = 0, []
    for case in task.cases():
        graph = trace_graph(model, case)
        if not graph.outputs:
            raise NoTemplate("the forward returns no tensor")
        plans += [plan_case(graph, j) for j in range(len(graph.outputs))]
        n_args, params = len(case), sorted(graph.params.values())
    classes = {p.op_class for p in plans}
    if len(classes) != 1:
        raise NoTemplate(f"the cases need different kernel classes ({', '.join(sorted(classes))})")
    half = any(d in HALF for p in plans for (_, what, d) in p.signature if what == "dtype")
    return TaskAnalysis(op_class=plans[0].op_class, plans=plans, n_args=n_args, params=params,
                        half_inputs=half, describe=plans[0].describe)


@dataclass
class Step:
    knobs: Knobs | CubeKnobs
    move: tuple[str, Any] | None
    adopted: list[str]
    feedback: dict[str, Any] | None = None


@dataclass
class Synthesizer:
    analysis: TaskAnalysis
    target: Target            # the preset the kernels are written for
    seed: int
    task_key: str
    steps: list[Step] = field(default_factory=list)
    hints_of: dict[str, dict[str, Any]] = field(default_factory=dict)   # adopted id -> {knob field: value}

    @property
    def cube(self) -> bool:
        return self.analysis.op_class == "matmul"

    # -- the first answer -------------------------------------------------------------
    def first(self, rules: list[dict], experiences: list[dict]) -> tuple[str, list[str], str]:
        knobs: Knobs | CubeKnobs = schedule.plain_cube_knobs() if self.cube else schedule.plain_knobs()
        rng = random.Random(zlib.crc32(f"{self.seed}:{self.task_key}".encode()))
        taken: dict[str, Any] = {}
        items = [(r, P_RULE) for r in rules] + [(e, _p_adopt(e.get("utility", 0.0))) for e in experiences]
        # Best first, so that when two items set one knob the more useful one wins; among
        # equals a whole schedule goes before single-knob advice, which then only adds to it.
        items.sort(key=lambda it: (-it[1], -len(it[0].get("hints", {})), -float(it[0].get("utility", 0.0)),
                                   it[0]["id"]))
        for item, p in items:
            hints = self._applicable(item.get("hints", {}))
            if not hints or any(f in taken and taken[f] != v for f, v in hints.items()):
                continue
            if all(getattr(knobs, f) == v for f, v in hints.items()):
                continue  # it would change nothing: not an adoption
            if rng.random() >= p:
                continue
            try:
                knobs = knobs.model_copy(update=hints)
                type(knobs).model_validate(knobs.model_dump())
            except ValueError:
                continue
            taken.update(hints)
            self.hints_of[item["id"]] = hints
        step = Step(knobs=knobs, move=None, adopted=self._in_effect(knobs))
        self.steps.append(step)
        return self._write(step)

    # -- refinement -------------------------------------------------------------------
    def refine(self, feedback: dict[str, Any]) -> tuple[str, list[str], str]:
        last = self.steps[-1]
        last.feedback = feedback
        best = self.best()
        if feedback.get("kind") == "correct" and best is not None:
            base = best
        elif feedback.get("kind") in ("error", "incorrect"):
            base = last
        else:
            base = best or last
        tried = {_key(s.knobs) for s in self.steps}
        if base is best and (best.feedback or {}).get("roofline_fraction", 0.0) >= ROOFLINE_DONE:
            moves: list[tuple[str, Any]] = []  # at the roofline: no schedule change can pay off
        else:
            moves = schedule.next_moves(base.knobs, base.feedback or {}, self.analysis.half_inputs,
                                        cores=self.target.cube_cores if self.cube else self.target.vector_cores,
                                        row=self.analysis.op_class == "row")
        for knob, value in moves:
            try:
                candidate = type(base.knobs).model_validate({**base.knobs.model_dump(), **schedule.expand(knob, value)})
            except ValueError:
                continue
            if _key(candidate) in tried:
                continue
            step = Step(knobs=candidate, move=(knob, value), adopted=self._in_effect(candidate))
            self.steps.append(step)
            return self._write(step)
        # Nothing left to try: the best kernel again (the loop ends on a repeated kernel).
        final = best or last
        step = Step(knobs=final.knobs, move=None, adopted=final.adopted)
        self.steps.append(step)
        return self._write(step)

    def best(self) -> Step | None:
        correct = [s for s in self.steps if s.feedback and s.feedback.get("kind") == "correct"]
        return max(correct, key=lambda s: s.feedback.get("speedup") or 0.0) if correct else None

    # -- helpers ----------------------------------------------------------------------
    def _applicable(self, hints: dict[str, Any]) -> dict[str, Any]:
        allowed = schedule.CUBE_HINTS if self.cube else schedule.VECTOR_HINTS
        out: dict[str, Any] = {}
        if "op_class" in hints:
            if hints["op_class"] != self.analysis.op_class:
                return {}  # a whole schedule measured on another kind of kernel
            hints = {k: v for k, v in hints.items() if k != "op_class"}
        for key, value in hints.items():
            if key not in allowed or (key in schedule.ROW_ONLY_HINTS and self.analysis.op_class != "row"):
                return {}  # advice for another kind of kernel: not this one's to adopt
            try:
                out[schedule.knob_field(key)] = schedule.hint_value(key, value)
            except (ValueError, TypeError):
                return {}
        return out

    def _in_effect(self, knobs: Knobs | CubeKnobs) -> list[str]:
        return [i for i, h in self.hints_of.items() if all(getattr(knobs, f) == v for f, v in h.items())]

    def _write(self, step: Step) -> tuple[str, list[str], str]:
        generate = {"elementwise": elementwise_source, "row": row_source,
                    "matmul": matmul_source}[self.analysis.op_class]
        specs: list[Any] = []
        for plan in self.analysis.plans:
            if plan.spec not in specs:
                specs.append(plan.spec)
        sources = {v: generate(spec, step.knobs, target=self.target) for v, spec in enumerate(specs)}
        title = f"{self.analysis.describe}; schedule: {schedule.describe(step.knobs)}"
        source = kernel_file(self.analysis.plans, sources, self.analysis.n_args, self.analysis.params, title)
        change = ""
        if step.move:
            knob, value = step.move
            shown = "x".join(map(str, value)) if isinstance(value, tuple) else schedule.hint_json(knob, value)
            change = f" Changed {knob} to {shown}."
        adopted = f" Applied the knob hints of {', '.join(step.adopted)}." if step.adopted else ""
        plan = f"{change.strip()}{adopted} {self.analysis.describe} ({len(specs)} variant(s)); {schedule.describe(step.knobs)}."
        return source, list(step.adopted), plan


def _p_adopt(utility: float) -> float:
    if utility > 0.05:
        return P_GOOD
    if utility < -0.05:
        return P_BAD
    return P_UNTRIED


def _key(knobs: Knobs | CubeKnobs) -> tuple:
    return tuple(sorted(knobs.model_dump().items()))
