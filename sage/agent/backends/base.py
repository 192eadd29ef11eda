"""What every chat backend speaks: messages in, one completion out."""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field


class Message(BaseModel):
    """One chat message.

    `facts` carries, in structured form, exactly what `content` says in prose (the
    experiences shown with their hints, the evaluation the feedback describes). Chat
    backends send only role and content; the offline synthesizer reads the facts instead
    of parsing prose. It never carries anything the text does not.
    """

    role: Literal["system", "user", "assistant"]
    content: str
    facts: dict[str, Any] = Field(default_factory=dict)


class MeasuredTrial(BaseModel):
    """An item's effect the backend measured itself (time without it / time with it)."""

    item: str
    effect: float
    note: str = ""


class Completion(BaseModel):
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Only an in-process backend that times its own work (the offline agent's search) fills
    # this; nothing an LLM writes reaches it, so a model cannot forge the evidence.
    trials: list[MeasuredTrial] = []
    # The endpoint stopped at the completion limit (finish_reason "length"): the answer is cut off.
    truncated: bool = False

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class BackendError(RuntimeError):
    """The backend could not produce a completion (after its retries, if any)."""


class BackendUnavailable(BackendError):
    """The endpoint could not be reached or refused us (connection, auth, unknown model).

    Distinct from a transient fault: no kernel was judged, so an episode that hits this is
    abandoned rather than recorded as the kernel's failure.
    """


@runtime_checkable
class LLMBackend(Protocol):
    """A chat backend. `name` says what ran (shown in every summary)."""

    name: str

    def complete(self, messages: list[Message]) -> Completion: ...
