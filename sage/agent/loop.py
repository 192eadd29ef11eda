"""The synthesis loop: retrieve → generate → evaluate → up to N refinement turns, keep
the best correct kernel; then extraction and the episode's credit and consolidation, all
written by `Episode.finish` in one transaction.

Each turn's prompt is rebuilt by `Conversation`: the latest answer in full, the earlier
attempts summarised, bounded by `max_prompt_tokens`.

Faults and where they go:
- a malformed answer is a failed attempt; the next turn says what broke the contract;
- an answer cut off at the completion limit is asked for the rest (`continuation.py`); one
  still cut off after the continuations is a failed attempt that says so;
- a repeated kernel is not judged again; the next turn says it was a repeat, and the
  attempt budget decides when to stop (the offline synthesizer repeats its best kernel
  only when it has nothing left to try, so for it a repeat ends the loop);
- the endpoint failing, the run budget (`RunBudget`) or the prompt bound running out on
  the first turn aborts the episode (nothing is written: no kernel was judged); on a
  later turn it ends the loop with what was learned (`SynthesisResult.stopped` says why);
- a reference that cannot run aborts the episode (`ReferenceProblem`): never the
  kernel's fault.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from sage.agent.answer import MalformedAnswer, parse_answer
from sage.agent.backends.base import BackendError, LLMBackend, Message
from sage.agent.backends.offline import OFFLINE, NoKernel
from sage.agent.budget import BudgetExhausted, RunBudget, charge
from sage.agent.continuation import Continued, whole_answer
from sage.agent.conversation import Conversation, PromptTooLarge, chars
from sage.agent.extraction import extract
from sage.agent.feedback import (error_feedback, incorrect_feedback, malformed_feedback, repeat_feedback,
                                 success_feedback)
from sage.agent.prompt import ShownItem, system_message, task_brief, task_message
from sage.agent.records import SynthesisResult, Turn
from sage.agent.reference_facts import ReferenceFacts, reference_facts
from sage.config import ANSWER_MAX_TOKENS

TurnCallback = Callable[[Turn, str], None]   # (turn, phase): phase is "evaluating" or "done"


class AgentConfig(BaseModel):
    preset: str = "ascend910b2"
    iterations: int = Field(4, ge=0, description="refinement turns after the first answer")
    memory_mode: str = "sage"
    seed: int = 0
    k: int = Field(6, ge=0, description="experiences retrieved")
    cases: int | list[int] | None = Field(None, description="the first K cases, or these case indices (None: all)")
    limits: dict[str, float] | None = None
    max_prompt_tokens: int | None = Field(None, ge=1, description="bound on every prompt (estimated)")
    max_completion_tokens: int = Field(ANSWER_MAX_TOKENS, ge=1, description="one answer's completion limit "
                                       "(--answer-tokens): what the budget checks price the next call at")


class ReferenceProblem(RuntimeError):
    """The task's reference could not run or be timed; no kernel can be judged."""

    def __init__(self, message: str, evaluation: Any = None) -> None:
        super().__init__(message)
        self.evaluation = evaluation


def synthesize(task: Any, backend: LLMBackend, memory: Any, config: AgentConfig,
               on_turn: TurnCallback | None = None, budget: RunBudget | None = None) -> SynthesisResult:
    """One episode. `memory` is a sage.memory.Memory (or None to run without one); `budget`
    is the run's token/cost budget, shared by its episodes (None: unlimited)."""
    start = time.perf_counter()
    episode = None
    if memory is not None:
        episode = memory.start_episode(task=task.key, op_tags=list(task.tags), model=backend.name,
                                       mode=config.memory_mode, seed=config.seed, preset=config.preset)
    rules = [_rule_item(memory, r) for r in episode.rules] if episode is not None else []
    experiences = []
    if episode is not None and config.k > 0:
        query = f"{task.name} {task.description} {' '.join(task.tags)}"
        experiences = [_experience_item(e) for e in episode.retrieve(query, list(task.tags), k=config.k)]
    offline = backend.name == OFFLINE
    budget = None if offline else budget   # the offline synthesizer spends no tokens
    # The offline synthesizer reads facts, not prose: it does not need the reference described.
    refs = [] if offline else reference_facts(task, config.preset, config.cases)
    conversation = Conversation(system_message(config.preset, require_card=not offline),
                                task_message(task_brief(task), rules, experiences, refs, config.cases),
                                max_prompt_tokens=config.max_prompt_tokens)
    messages = conversation.first()
    shown = {item.id for item in rules + experiences}
    by_ref = {r.index: r for r in refs}
    result = SynthesisResult(task=task.key, backend=backend.name, memory_mode=config.memory_mode,
                             seed=config.seed, status="error")
    seen: dict[str, Turn] = {}
    best_speedup: float | None = None
    last_feedback: Message | None = None
    last_answer = ""

    for index in range(1, config.iterations + 2):
        try:
            if budget is not None:
                budget.check(conversation.tokens(messages), config.max_completion_tokens)
            completion = backend.complete(messages)
            charge(result, budget, conversation, chars(messages), completion)
            completion = whole_answer(completion, backend, messages, result=result, budget=budget,
                                      conversation=conversation, completion_limit=config.max_completion_tokens)
        except NoKernel as exc:
            result.status, result.reason = "no_kernel", str(exc)
            break
        except BudgetExhausted as exc:
            if index == 1:
                raise  # nothing was judged: the episode is abandoned, nothing written
            result.stopped = f"stopped before attempt {index}: {exc}"
            break
        except BackendError as exc:
            if index == 1:
                raise
            result.turns.append(Turn(index=index, status="llm_error", message=str(exc)))
            break
        last_answer = completion.text
        turn = _judge(task, completion, index, seen, episode, config, on_turn, shown)
        result.turns.append(turn)
        if on_turn:
            on_turn(turn, "done")
        if turn.status == "repeat" and offline:
            break
        if turn.status == "correct" and (best_speedup is None or (turn.speedup or 0.0) > best_speedup):
            best_speedup, result.best = turn.speedup or 0.0, len(result.turns) - 1
        last_feedback = _feedback(turn, best_speedup, by_ref, result.turns)
        if index == config.iterations + 1:
            break
        try:
            messages = conversation.after(result.turns, completion.text, last_feedback)
        except PromptTooLarge as exc:
            result.stopped = f"stopped before attempt {index + 1}: {exc}"
            break

    _summarise(result)
    if episode is not None:
        if config.memory_mode != "none" and any(t.evaluation is not None for t in result.turns):
            judged_last = result.turns[-1].evaluation is not None and last_feedback is not None
            extract(result, task, backend, messages + [Message(role="assistant", content=last_answer)],
                    episode, conversation, budget, config.max_completion_tokens,
                    last_feedback.facts.get("feedback") if judged_last else None)
        report = episode.finish(_outcome(result, time.perf_counter() - start))
        result.episode_id, result.reward = report.episode_id, report.reward
        result.utilities = dict(report.credited)
        result.rejected = sorted(set(result.rejected) | set(report.rejected))
        result.new_experiences, result.merged_experiences = report.new_experiences, report.merged_experiences
        result.promoted, result.demoted = report.promoted, report.demoted
    result.wall_s = round(time.perf_counter() - start, 3)
    return result


def _judge(task: Any, completion: Continued, index: int, seen: dict[str, Turn], episode: Any,
           config: AgentConfig, on_turn: TurnCallback | None, shown: set[str]) -> Turn:
    from sage.bench.evaluate import SKIP_STATUSES, evaluate_kernel

    base = dict(index=index, prompt_tokens=completion.prompt_tokens, completion_tokens=completion.completion_tokens)
    began = time.perf_counter()
    try:
        if completion.problem is not None:     # still cut off: what there is is not the whole answer
            raise MalformedAnswer(completion.problem)
        answer = parse_answer(completion.text)
    except MalformedAnswer as exc:
        if episode is not None:
            episode.record_attempt(source=completion.text, status="malformed", error_type="MalformedAnswer",
                                   error_message=str(exc))
        return Turn(**base, status="malformed", message=str(exc))
    key = answer.source.strip()
    if key in seen:
        original = seen[key]
        return Turn(**base, status="repeat", plan=answer.plan, repeat_of=original.index, source=answer.source,
                    message=f"the same kernel as attempt {original.index}")
    turn = Turn(**base, status="error", plan=answer.plan, source=answer.source)
    seen[key] = turn
    for trial in completion.trials:
        if episode is not None and episode.record_effect(trial.item, effect=trial.effect, attempt=index,
                                                         note=trial.note):
            turn.trials[trial.item] = round(trial.effect, 4)
    if answer.adopted:
        # Only ids this episode showed can be adopted; the memory checks again (and keeps the rejections).
        adoption = episode.declare_adopted(answer.adopted, attempt=index, reason=answer.plan[:500]) \
            if episode is not None else None
        accepted = [i for i in (adoption.accepted if adoption else []) if i in shown]
        turn.adopted = accepted
        turn.rejected = [i for i in answer.adopted if i not in accepted]
    if on_turn:
        on_turn(turn, "evaluating")
    limits = None
    if config.limits:
        from sage.npu.sandbox import Limits

        limits = Limits(**config.limits)
    evaluation = evaluate_kernel(task, answer.source, preset=config.preset, cases=config.cases, limits=limits)
    if evaluation.status in SKIP_STATUSES:
        raise ReferenceProblem(f"{task.key}: {evaluation.status}: {evaluation.reason}", evaluation)
    _fill(turn, evaluation)
    turn.wall_s = round(time.perf_counter() - began, 3)
    if episode is not None:
        episode.record_attempt(source=answer.source, status=turn.status, error_type=turn.error_type,
                               error_message=turn.message, cycles=turn.cycles, speedup=turn.speedup,
                               roofline_fraction=turn.roofline_fraction)
    return turn


def _fill(turn: Turn, evaluation: Any) -> None:
    turn.evaluation = evaluation
    turn.status = evaluation.status if evaluation.status in ("correct", "incorrect") else "error"
    if evaluation.error is not None:
        turn.error_type, turn.message, turn.error_line = (evaluation.error.type, evaluation.error.message,
                                                         evaluation.error.line)
    elif evaluation.status == "incorrect":
        turn.message = evaluation.reason
    turn.speedup, turn.roofline_fraction = evaluation.speedup, evaluation.roofline_fraction
    turn.device_speedup = evaluation.device_speedup
    timed = [c for c in evaluation.cases if c.times is not None]
    if timed:
        slowest = max(timed, key=lambda c: c.times.end_to_end_us)
        turn.cycles, turn.time_us, turn.bottleneck = slowest.cycles, slowest.times.end_to_end_us, slowest.bottleneck


def _feedback(turn: Turn, best_speedup: float | None, refs: dict[int, ReferenceFacts], turns: list[Turn]) -> Message:
    if turn.status == "malformed":
        return malformed_feedback(turn.message or "")
    if turn.status == "repeat":
        return repeat_feedback(turn, next(t for t in turns if t.index == turn.repeat_of))
    if turn.status == "error":
        return error_feedback(turn.evaluation, turn.source or "")
    if turn.status == "incorrect":
        return incorrect_feedback(turn.evaluation)
    return success_feedback(turn.evaluation, best_speedup, refs)


def _summarise(result: SynthesisResult) -> None:
    judged = [t for t in result.turns if t.status in ("correct", "incorrect", "error")]
    if result.best is not None:
        best = result.turns[result.best]
        result.status = "correct"
        result.speedup, result.roofline_fraction = best.speedup, best.roofline_fraction
        result.bottleneck, result.cycles = best.bottleneck, best.cycles
    elif result.status != "no_kernel":
        result.status = "incorrect" if any(t.status == "incorrect" for t in judged) else "error"
        if result.reason is None:
            result.reason = _failure_reason(result.turns)
    result.adopted = sorted({i for t in result.turns for i in t.adopted}, key=_id_order)
    result.rejected = sorted({i for t in result.turns for i in t.rejected}, key=_id_order)


# Which failed attempt the final status reports: one that ran (wrong output) says more
# than one that raised, which says more than an unreadable answer; then the latest.
# A repeated kernel is never it: its "error" is only that it was tried before.
_FAILURE_RANK = {"incorrect": 3, "error": 2, "malformed": 1, "llm_error": 0}


def _failure_reason(turns: list[Turn]) -> str | None:
    """The best failed attempt's own error, named with its attempt number."""
    failed = [t for t in turns if t.status in _FAILURE_RANK and t.message]
    if not failed:
        return None
    best = max(failed, key=lambda t: (_FAILURE_RANK[t.status], t.index))
    where = f" (line {best.error_line})" if best.error_line else ""
    what = f"{best.error_type}{where}: " if best.error_type else ""
    return f"attempt {best.index}: {what}{best.message}"


def _outcome(result: SynthesisResult, elapsed: float) -> Any:
    from sage.memory import Outcome

    judged = [t for t in result.turns if t.evaluation is not None]
    best = result.best_turn
    return Outcome(
        executed=any(t.status in ("correct", "incorrect") for t in judged),
        correct=best is not None,
        speedup=best.speedup if best else None,
        cycles=best.cycles if best else None,
        roofline_fraction=best.roofline_fraction if best else None,
        iterations=len(result.turns),
        tokens=result.prompt_tokens + result.completion_tokens,
        time_s=round(elapsed, 3),
    )


def _rule_item(memory: Any, rule: Any) -> ShownItem:
    hints: dict[str, Any] = {}
    for source in rule.sources:
        detail = memory.show(source)
        if detail.experience is not None:
            hints.update(detail.experience.hints)
    return ShownItem(id=rule.id, title="", text=rule.text, hints=hints, utility=rule.utility)


def _experience_item(e: Any) -> ShownItem:
    return ShownItem(id=e.id, title=e.title, text=e.advice, tags=list(e.tags), hints=dict(e.hints), utility=e.utility,
                     trials=e.trials)


def _id_order(item_id: str) -> tuple[str, int]:
    return (item_id[:1], int(item_id[1:]) if item_id[1:].isdigit() else 0)
