"""The reflection turn after an episode: ask for experiences, ask once more and stricter
when the answer has no usable JSON, then read the lessons out of the prose. Every call's
tokens are counted (the reflection of one session used a third of its tokens)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sage.agent.backends.base import BackendError, Message
from sage.agent.budget import BudgetExhausted, RunBudget, charge
from sage.agent.conversation import chars
from sage.agent.records import NewExperience, SynthesisResult
from sage.agent.reflection import (MAX_EXPERIENCES, ExperienceDraft, ReflectionError, parse_reflection, prose_drafts,
                                   reflection_request, strict_request)

if TYPE_CHECKING:
    from sage.agent.backends.base import LLMBackend
    from sage.agent.conversation import Conversation


def extract(result: SynthesisResult, task: Any, backend: LLMBackend, messages: list[Message], episode: Any,
            conversation: Conversation, budget: RunBudget | None, completion_limit: int,
            last_feedback: dict | None) -> None:
    """Queues the drafted experiences on `episode`; a problem is noted on `result`, never raised."""
    request = reflection_request(task.key, list(task.tags), result.turns, last_feedback=last_feedback)
    asked = messages + [request]
    if not conversation.fits(asked):   # over the prompt bound: the attempts' summary in the request suffices
        asked = [conversation.system, conversation.task, request]
    answers: list[str] = []
    drafts: list[ExperienceDraft] | None = None
    problem = ""
    for _ in range(2):               # the request, then once more and stricter
        try:
            if budget is not None:
                budget.check(conversation.tokens(asked), completion_limit)
            completion = backend.complete(asked)
        except (BackendError, BudgetExhausted) as exc:
            problem = str(exc)
            break
        charge(result, budget, conversation, chars(asked), completion)
        answers.append(completion.text)
        try:
            drafts = parse_reflection(completion.text)
            break
        except ReflectionError as exc:
            problem = str(exc)
            asked = asked + [Message(role="assistant", content=completion.text), strict_request(problem)]
    if drafts is None:
        by_title = {d.title: d for text in answers for d in prose_drafts(text, list(task.tags))}
        drafts = list(by_title.values())[:MAX_EXPERIENCES]
        result.extraction_fallback = bool(drafts)
        if not drafts:
            read = "; no lesson could be read from the prose either" if answers else ""
            result.extraction_problem = f"{problem}{read}"
            return
    for d in drafts:
        tags = d.tags or list(task.tags)
        episode.add_experience(title=d.title, advice=d.advice, tags=tags, hints=d.hints)
        result.extracted.append(NewExperience(title=d.title, tags=tags, hints=d.hints))
