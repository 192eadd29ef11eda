"""The agent as a bench `Solver`: one episode per task and epoch, every attempt reported.

Picklable (a pydantic model of settings): the runner ships it to worker processes, and
each `solve` opens the memory itself, so concurrent workers share one database (SQLite
with WAL and one writer transaction per episode, or PostgreSQL for a cluster).

The episode is stored under the runner's job key. A job whose episode is already stored
(the run was killed after the episode, before its row) is not learned again: its rows are
rebuilt from the stored episode.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from sage.agent.budget import LedgerBudget
from sage.config import ANSWER_MAX_TOKENS


class AgentSolver(BaseModel):
    model: str | None = None                 # None: the offline synthesizer
    base_url: str | None = None
    temperature: float = 0.2
    answer_max_tokens: int = Field(ANSWER_MAX_TOKENS, ge=1)   # every request's completion limit
    llm_timeout_s: float = 120.0
    llm_retries: int = 4
    memory_url: str
    memory_mode: str = "sage"
    iterations: int = Field(4, ge=0)
    search_budget: int = Field(4, ge=0)    # the offline agent's simulator runs per task
    preset: str = "ascend910b2"
    cases: int | list[int] | None = None   # the first K cases, or these case indices
    k: int = 6
    budget: LedgerBudget | None = None     # the run's token/cost budget, shared by the workers

    @classmethod
    def from_bench_config(cls, config: Any, **overrides: Any) -> AgentSolver:
        """From a bench run's BenchConfig (preset, cases) and the user's settings (model,
        endpoint, memory); `overrides` are CLI flags (None means "not given")."""
        from sage.config import load_settings

        s = load_settings(**{k: v for k, v in overrides.items() if k in _SETTING_FLAGS})
        return cls(budget=overrides.get("budget"), model=s.model, base_url=s.base_url, temperature=s.temperature,
                   answer_max_tokens=s.answer_max_tokens, search_budget=s.search_budget,
                   llm_timeout_s=s.llm_timeout_s, llm_retries=s.llm_retries, memory_url=s.memory_url,
                   memory_mode=s.memory_mode, iterations=s.refinements, preset=config.preset, cases=config.cases)

    @property
    def name(self) -> str:
        return f"agent:{self.model or 'offline'}:{self.memory_mode}"

    @property
    def max_attempts(self) -> int:
        return self.iterations + 1

    def solve(self, task: Any, *, epoch: int, seed: int, job_key: str | None = None) -> Any:
        from sage.agent.backends.base import BackendError
        from sage.agent.budget import BudgetExhausted
        from sage.agent.factory import make_backend
        from sage.agent.loop import AgentConfig, ReferenceProblem, synthesize
        from sage.bench.runner import Attempt, SolveResult
        from sage.memory import Memory

        settings = _Settings(self, seed)
        config = AgentConfig(preset=self.preset, iterations=self.iterations, memory_mode=self.memory_mode,
                             seed=seed, k=self.k, cases=self.cases,
                             max_completion_tokens=self.answer_max_tokens)
        with Memory(self.memory_url, episode_key=job_key) as memory:
            stored = memory.finished_episode(job_key) if job_key is not None else None
            if stored is not None:
                return _restored(task, stored)
            try:
                result = synthesize(task, make_backend(settings, task), memory, config, budget=self.budget)
            except ReferenceProblem as exc:
                attempts = [Attempt(source=None, evaluation=exc.evaluation)] if exc.evaluation is not None else []
                return SolveResult(attempts=attempts, best=0 if attempts else None, extra={"error": str(exc)})
            except (BackendError, BudgetExhausted) as exc:
                # Nothing was judged (the endpoint failed, or the run's budget cannot pay for
                # the first call): no episode was written, and the row is not final, so a
                # resumed run tries the task again.
                what = "LLM backend" if isinstance(exc, BackendError) else "run budget"
                return SolveResult(extra={"error": f"{what}: {exc}", "epoch": epoch, "unjudged": True})
        attempts, index_of = [], {}
        for i, turn in enumerate(result.turns):
            if turn.evaluation is None:
                continue
            index_of[i] = len(attempts)
            attempts.append(Attempt(source=turn.source, evaluation=turn.evaluation, extra={
                "turn": turn.index, "adopted": turn.adopted, "rejected": turn.rejected, "trials": turn.trials,
                "plan": turn.plan,
                "prompt_tokens": turn.prompt_tokens, "completion_tokens": turn.completion_tokens}))
        best = index_of.get(result.best) if result.best is not None else None
        extra = {
            "backend": result.backend, "memory_mode": result.memory_mode, "episode_id": result.episode_id,
            "reward": result.reward, "adopted": result.adopted, "rejected": result.rejected,
            "trials": {k: v for t in result.turns for k, v in t.trials.items()},
            "utilities": {k: list(v) for k, v in result.utilities.items()},
            "new_experiences": result.new_experiences, "promoted": result.promoted, "demoted": result.demoted,
            "prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens,
            "turns": len(result.turns), "malformed": sum(t.status == "malformed" for t in result.turns),
        }
        if result.status == "no_kernel":
            extra["reason"] = result.reason
        return SolveResult(attempts=attempts, best=best, extra=extra)


def _restored(task: Any, episode: Any) -> Any:
    """The SolveResult of a job whose episode is stored: one attempt per judged kernel, from
    what the episode kept (status, speedup, roofline; not the per-case details)."""
    from sage.bench.evaluate import TaskEvaluation
    from sage.bench.runner import Attempt, SolveResult

    judged = [a for a in episode.attempts if a.status in ("correct", "incorrect", "error")]
    attempts = [Attempt(source=a.source, extra={"turn": a.number}, evaluation=TaskEvaluation(
        task=task.key, level=task.level, tags=task.tags, status=a.status, executed=a.status != "error",
        correct=a.status == "correct", speedup=a.speedup, roofline_fraction=a.roofline_fraction,
        reason=a.error_message)) for a in judged]
    correct = [i for i, a in enumerate(judged) if a.status == "correct"]
    best = max(correct, key=lambda i: (judged[i].speedup or 0.0, -i)) if correct else None
    extra = {"memory_mode": episode.mode, "episode_id": episode.episode_id, "reward": episode.reward,
             "adopted": episode.adopted, "restored": True,
             "reason": "rebuilt from the episode already stored for this job (not learned again)"}
    return SolveResult(attempts=attempts, best=best, extra=extra)


_SETTING_FLAGS = {"model", "base_url", "memory_url", "memory_mode", "iterations", "temperature",
                  "answer_max_tokens"}


class _Settings:
    """The few Settings fields `make_backend` reads, from the solver's own."""

    def __init__(self, solver: AgentSolver, seed: int) -> None:
        self.model, self.base_url, self.preset, self.seed = solver.model, solver.base_url, solver.preset, seed
        self.search_budget = solver.search_budget
        self.temperature, self.answer_max_tokens = solver.temperature, solver.answer_max_tokens
        self.llm_timeout_s, self.llm_retries = solver.llm_timeout_s, solver.llm_retries
