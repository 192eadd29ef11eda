"""What each turn sends, bounded: the system part and the task, the latest answer in full,
and one user message with every earlier attempt summarised in a line (status, error,
speed) followed by the full feedback on the latest one.

Earlier kernels are never re-sent: a model needs the kernel it is fixing and what became
of the others, and re-sending all of them grew one session's prompt from 23K to 81K
characters by the fifth attempt. With `max_prompt_tokens`, the oldest summary lines go
first; a prompt that still does not fit raises `PromptTooLarge`.
"""

from __future__ import annotations

from sage.agent.backends.base import Message
from sage.agent.budget import TokenEstimator
from sage.agent.feedback import attempt_outcome, short
from sage.agent.records import Turn

PLAN_CHARS = 160


class PromptTooLarge(RuntimeError):
    """The smallest prompt of a turn is over --max-prompt-tokens."""


class Conversation:
    def __init__(self, system: Message, task: Message, *, max_prompt_tokens: int | None = None,
                 estimator: TokenEstimator | None = None) -> None:
        self.system, self.task = system, task
        self.max_prompt_tokens = max_prompt_tokens
        self.estimator = estimator or TokenEstimator()

    def first(self) -> list[Message]:
        messages = [self.system, self.task]
        self._check(messages, omitted=0)
        return messages

    def after(self, turns: list[Turn], answer: str, feedback: Message) -> list[Message]:
        """The prompt after `turns` (the last of which answered `answer` and got `feedback`)."""
        earlier = [attempt_line(t) for t in turns[:-1]]
        omitted = 0
        while True:
            messages = [self.system, self.task, Message(role="assistant", content=answer),
                        _feedback_message(earlier, omitted, turns[-1].index, feedback)]
            if self.fits(messages) or not earlier:
                break
            earlier, omitted = earlier[1:], omitted + 1
        self._check(messages, omitted)
        return messages

    def tokens(self, messages: list[Message]) -> int:
        return self.estimator.estimate(chars(messages))

    def fits(self, messages: list[Message]) -> bool:
        return self.max_prompt_tokens is None or self.tokens(messages) <= self.max_prompt_tokens

    def _check(self, messages: list[Message], omitted: int) -> None:
        if not self.fits(messages):
            dropped = f" with {omitted} attempt summaries dropped" if omitted else ""
            raise PromptTooLarge(f"the prompt needs about {self.tokens(messages)} tokens{dropped}, over "
                                 f"--max-prompt-tokens {self.max_prompt_tokens}")


def attempt_line(turn: Turn) -> str:
    plan = f" Plan: {short(turn.plan, PLAN_CHARS)}" if turn.plan else ""
    return f"- attempt {turn.index}: {attempt_outcome(turn)}.{plan}"


def chars(messages: list[Message]) -> int:
    return sum(len(m.content) for m in messages)


def _feedback_message(earlier: list[str], omitted: int, latest: int, feedback: Message) -> Message:
    if not earlier and not omitted:
        return feedback
    head = [f"Your earlier attempts (their kernels are not repeated here; attempt {latest}, your last answer above, "
            "is described in full below):"]
    if omitted:
        head.append(f"- ({omitted} oldest attempts left out to keep the prompt within its token bound)")
    text = "\n".join(head + earlier) + f"\n\n# Attempt {latest}\n\n" + feedback.content
    return Message(role="user", content=text, facts=feedback.facts)
