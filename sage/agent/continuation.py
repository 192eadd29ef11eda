"""A cut-off answer is asked for the rest: when the endpoint stops at the completion limit
(`finish_reason` "length"), the loop sends the answer so far back with a request to continue
exactly where it stopped, and concatenates, up to `MAX_CONTINUATIONS` times. Every
continuation is a call like any other: checked against the run budget first and charged
after. An answer still cut off after them is a failed attempt whose one-line reason says
how long it was and which flag raises the limit (`cut_off_reason`).

The continuation repeats the whole prompt, so a long answer costs its prompt once per part:
a model that needs continuations routinely wants a larger --answer-tokens instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sage.agent.backends.base import Completion, LLMBackend, Message
from sage.agent.budget import BudgetExhausted, RunBudget, charge
from sage.agent.conversation import Conversation, chars

if TYPE_CHECKING:
    from sage.agent.records import SynthesisResult

# Three continuations give an answer four times --answer-tokens; one that needs more is
# more likely looping than long.
MAX_CONTINUATIONS = 3
CONTINUE = ("Your answer was cut off at the output limit. Continue exactly where you stopped: the next character "
            "of your answer, with no repetition and nothing before it.")


class Continued(Completion):
    """The whole answer: the parts' text concatenated, their tokens summed."""

    continuations: int = 0
    problem: str | None = None    # why it is still cut off (None: it is whole)


def whole_answer(first: Completion, backend: LLMBackend, messages: list[Message], *, result: SynthesisResult,
                 budget: RunBudget | None, conversation: Conversation, completion_limit: int) -> Continued:
    """`first` (already charged), continued while it is cut off. BackendError propagates; a
    run budget that cannot pay for a continuation leaves the answer cut off, with that said."""
    answer = Continued(**first.model_dump())
    while answer.truncated and answer.continuations < MAX_CONTINUATIONS:
        asked = messages + [Message(role="assistant", content=answer.text), Message(role="user", content=CONTINUE)]
        try:
            if budget is not None:
                budget.check(conversation.tokens(asked), completion_limit)
        except BudgetExhausted as exc:
            answer.problem = f"{cut_off_reason(answer)} (no further continuation: {exc})"
            return answer
        part = backend.complete(asked)
        charge(result, budget, conversation, chars(asked), part)
        answer.text += part.text
        answer.prompt_tokens += part.prompt_tokens
        answer.completion_tokens += part.completion_tokens
        answer.truncated = part.truncated
        answer.continuations += 1
    if answer.truncated:
        answer.problem = cut_off_reason(answer)
    return answer


def cut_off_reason(answer: Continued) -> str:
    return (f"the answer was cut off at {answer.completion_tokens} tokens after {answer.continuations} "
            "continuations; raise --answer-tokens")
