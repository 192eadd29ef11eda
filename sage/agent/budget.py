"""Token and cost budgets of a whole run, and the prompt-size estimate the loop bounds.

A run budget (`--max-tokens`, `--max-cost`) is charged with every call's reported usage:
the turns, the refusals of a malformed answer, the reflection and its retry. Before each
call the loop asks whether the call could still fit (the prompt's estimate plus the
completion limit); when it cannot, the episode stops there, cleanly: what was judged is
kept and written to the memory, and the next run starts from that memory.

Prompt sizes are estimated from characters. The ratio starts conservative (3 characters
per token: code and JSON tokenise denser than prose) and follows the endpoint's own count
once a call has reported one, never going above 4 characters per token.
"""

from __future__ import annotations

import fcntl
import json
import math
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from sage.agent.backends.base import Completion
    from sage.agent.conversation import Conversation
    from sage.agent.records import SynthesisResult

DEFAULT_CHARS_PER_TOKEN = 3.0
MAX_CHARS_PER_TOKEN = 4.0


class Prices(BaseModel):
    """US dollars per million tokens."""

    prompt: float = Field(ge=0)
    completion: float = Field(ge=0)

    @classmethod
    def parse(cls, text: str) -> Prices:
        """"3,15" or "3/15": prompt and completion price per million tokens."""
        parts = text.replace("/", ",").split(",")
        if len(parts) != 2:
            raise ValueError(f"prices must be 'PROMPT,COMPLETION' (US$ per million tokens), not {text!r}")
        try:
            return cls(prompt=float(parts[0]), completion=float(parts[1]))
        except ValueError as exc:
            raise ValueError(f"prices must be two non-negative numbers, not {text!r}") from exc

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.prompt + completion_tokens * self.completion) / 1e6


class BudgetExhausted(RuntimeError):
    """The run budget cannot pay for the next call; str(exc) says which budget and how much was spent."""


class RunBudget(BaseModel):
    """Shared by every episode of a run; `None` limits are unlimited."""

    max_tokens: int | None = Field(None, ge=1)
    max_cost: float | None = Field(None, ge=0)
    prices: Prices | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0

    def model_post_init(self, _context: object) -> None:
        if self.max_cost is not None and self.prices is None:
            raise ValueError("a cost budget needs the model's prices (PROMPT,COMPLETION in US$ per million tokens)")

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def cost(self) -> float | None:
        return self.prices.cost(self.prompt_tokens, self.completion_tokens) if self.prices else None

    def charge(self, prompt_tokens: int, completion_tokens: int) -> None:
        self.calls += 1
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens

    def check(self, prompt_estimate: int, completion_limit: int) -> None:
        """Raises BudgetExhausted when a call of this size could overrun a budget."""
        if self.max_tokens is not None and self.tokens + prompt_estimate + completion_limit > self.max_tokens:
            raise BudgetExhausted(
                f"token budget: {self.tokens} of {self.max_tokens} tokens spent in {self.calls} calls; the next "
                f"call may need {prompt_estimate} prompt + {completion_limit} completion tokens")
        if self.max_cost is not None and self.prices is not None:
            spent = self.prices.cost(self.prompt_tokens, self.completion_tokens)
            next_call = self.prices.cost(prompt_estimate, completion_limit)
            if spent + next_call > self.max_cost:
                raise BudgetExhausted(
                    f"cost budget: ${spent:.4f} of ${self.max_cost:.4f} spent in {self.calls} calls; the next call "
                    f"may cost ${next_call:.4f}")

    def summary(self) -> str:
        cost = f", ${self.cost:.4f}" if self.cost is not None else ""
        return f"{self.tokens} tokens ({self.prompt_tokens} prompt + {self.completion_tokens} completion){cost} " \
               f"in {self.calls} calls"


class LedgerBudget(RunBudget):
    """A run budget shared by worker processes (`sage bench --max-tokens/--max-cost`): the
    spend lives in a JSON ledger file, read before every check and added to under an
    exclusive lock by every charge, so episodes in different processes draw on one budget.
    Each worker can still have one call in flight when the budget runs out: the overrun is
    at most one call per worker, which `check` allows for by pricing the next call in full."""

    ledger: Path

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with open(self.ledger.with_suffix(".lock"), "a", encoding="utf-8") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _load(self) -> None:
        try:
            spent = json.loads(self.ledger.read_text(encoding="utf-8"))
        except FileNotFoundError:
            spent = {}
        self.prompt_tokens = int(spent.get("prompt_tokens", 0))
        self.completion_tokens = int(spent.get("completion_tokens", 0))
        self.calls = int(spent.get("calls", 0))

    def check(self, prompt_estimate: int, completion_limit: int) -> None:
        with self._locked():
            self._load()
        super().check(prompt_estimate, completion_limit)

    def charge(self, prompt_tokens: int, completion_tokens: int) -> None:
        with self._locked():
            self._load()
            super().charge(prompt_tokens, completion_tokens)
            tmp = self.ledger.with_suffix(".tmp")
            tmp.write_text(json.dumps({"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                                       "calls": self.calls}), encoding="utf-8")
            tmp.replace(self.ledger)

    def reset(self) -> None:
        """A new run invocation starts with nothing spent (a resume gets the budget it is given)."""
        with self._locked():
            self.ledger.unlink(missing_ok=True)
            self._load()


class TokenEstimator:
    """Characters to tokens, learning the ratio from the endpoint's reported prompt tokens."""

    def __init__(self) -> None:
        self.chars_per_token = DEFAULT_CHARS_PER_TOKEN

    def estimate(self, chars: int) -> int:
        return math.ceil(chars / self.chars_per_token)

    def observe(self, chars: int, prompt_tokens: int) -> None:
        if prompt_tokens > 0 and chars > 0:
            # Never more optimistic than 4 chars/token: an endpoint that under-reports must not
            # let a prompt outgrow the bound.
            self.chars_per_token = min(chars / prompt_tokens, MAX_CHARS_PER_TOKEN)


def charge(result: SynthesisResult, budget: RunBudget | None, conversation: Conversation, prompt_chars: int,
           completion: Completion) -> None:
    """Every call's tokens: the result's totals, the run budget, and the prompt estimate's calibration."""
    result.prompt_tokens += completion.prompt_tokens
    result.completion_tokens += completion.completion_tokens
    result.calls += 1
    if budget is not None:
        budget.charge(completion.prompt_tokens, completion.completion_tokens)
    conversation.estimator.observe(prompt_chars, completion.prompt_tokens)
