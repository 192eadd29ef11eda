"""The `offline` backend: the built-in compiler-agent behind the chat interface.

It answers the same messages an LLM gets, in the same answer contract; it reads the
messages' `facts` (the shown rules and experiences with their knob hints, the evaluation
of its last kernel) instead of their prose. Its kernels go through the same sandbox and
evaluation as any other answer.
"""

from __future__ import annotations

import json
from typing import Any

from sage.agent.answer import render_answer
from sage.agent.backends.base import BackendError, Completion, MeasuredTrial, Message

OFFLINE = "offline"


class NoKernel(BackendError):
    """The backend cannot write a kernel for this task at all (an op it cannot lower)."""


class OfflineBackend:
    name = OFFLINE

    def __init__(self, task: Any, *, preset: str = "ascend910b2", seed: int = 0, budget: int | None = None) -> None:
        self.task, self.preset, self.seed, self.budget = task, preset, seed, budget
        self._agent = None

    def complete(self, messages: list[Message]) -> Completion:
        facts = messages[-1].facts
        if "reflect" in facts:
            return Completion(text=json.dumps({"experiences": self._reflect(facts["reflect"])}))
        if "feedback" in facts and self._agent is not None:
            source, adopted, plan = self._agent.refine(facts["feedback"])
            return Completion(text=render_answer(source, adopted, plan))
        source, adopted, plan = self._start(facts.get("rules", []), facts.get("experiences", []), facts.get("cases"))
        trials = [MeasuredTrial(item=i, effect=e, note=n) for i, e, n in self._agent.trials()]
        return Completion(text=render_answer(source, adopted, plan), trials=trials)

    def _start(self, rules: list[dict], experiences: list[dict],
               cases: int | list[int] | None = None) -> tuple[str, list[str], str]:
        from sage.agent.compiler.build import SourceTooLarge, Unsupported
        from sage.agent.compiler.search import DEFAULT_BUDGET
        from sage.agent.offline.agent import CompilerAgent
        from sage.kernels import target_for

        def agent(compact: bool) -> CompilerAgent:
            return CompilerAgent(self.task, target_for(self.preset), self.preset, seed=self.seed,
                                 budget=DEFAULT_BUDGET if self.budget is None else self.budget, evaluated=cases,
                                 compact=compact)

        try:
            try:
                self._agent = agent(compact=False)
                return self._agent.first(rules, experiences)
            except SourceTooLarge:       # the fast forms' kernels overflow the file: the compact ones
                self._agent = agent(compact=True)
                return self._agent.first(rules, experiences)
        except Unsupported as exc:
            raise NoKernel(f"cannot compile: {exc}") from exc

    def _reflect(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        from sage.agent.offline.distill import distil

        if self._agent is None:
            return []
        last = request.get("last_feedback")
        if last is not None and self._agent.attempts and self._agent.attempts[-1].feedback is None:
            self._agent.attempts[-1].feedback = last      # the last kernel was judged too
        return distil(self._agent, list(self.task.tags) or list(request.get("tags", [])))

    def compiler_stats(self) -> dict[str, Any]:
        """Simulator runs spent by the search (counted apart from evaluated attempts), the
        launches per case and the search's decisions."""
        return self._agent.stats() if self._agent is not None else {"simulator_runs": 0}
