"""The `offline` backend: the built-in synthesizer behind the chat interface.

It answers the same messages an LLM gets, in the same answer contract; it reads the
messages' `facts` (the shown rules and experiences with their knob hints, the evaluation
of its last kernel) instead of their prose. Its kernels go through the same sandbox and
evaluation as any other answer.
"""

from __future__ import annotations

import json
from typing import Any

from sage.agent.answer import render_answer
from sage.agent.backends.base import BackendError, Completion, Message

OFFLINE = "offline"


class NoKernel(BackendError):
    """The backend cannot write a kernel for this task at all (no template)."""


class OfflineBackend:
    name = OFFLINE

    def __init__(self, task: Any, *, preset: str = "ascend910b2", seed: int = 0) -> None:
        self.task, self.preset, self.seed = task, preset, seed
        self._synth = None

    def complete(self, messages: list[Message]) -> Completion:
        facts = messages[-1].facts
        if "reflect" in facts:
            return Completion(text=json.dumps({"experiences": self._reflect(facts["reflect"].get("last_feedback"))}))
        if "feedback" in facts and self._synth is not None:
            source, adopted, plan = self._synth.refine(facts["feedback"])
        else:
            source, adopted, plan = self._start().first(facts.get("rules", []), facts.get("experiences", []))
        return Completion(text=render_answer(source, adopted, plan))

    def _start(self):
        from sage.agent.offline.analysis import NoTemplate
        from sage.agent.offline.synthesizer import Synthesizer, analyse
        from sage.kernels import target_for

        try:
            analysis = analyse(self.task)
        except NoTemplate as exc:
            raise NoKernel(f"no template: {exc}") from exc
        self._synth = Synthesizer(analysis=analysis, target=target_for(self.preset), seed=self.seed,
                                  task_key=self.task.key)
        return self._synth

    def _reflect(self, last_feedback: dict | None) -> list[dict[str, Any]]:
        from sage.agent.offline.distill import distil

        if self._synth is None:
            return []
        if last_feedback is not None and self._synth.steps and self._synth.steps[-1].feedback is None:
            self._synth.steps[-1].feedback = last_feedback  # the last kernel was judged too
        analysis = self._synth.analysis
        return distil(self._synth.steps, self._synth.cube, list(self.task.tags), op_class=analysis.op_class,
                      dtype_class="half" if analysis.half_inputs else "float32")
