"""What the memory keeps of outside text, cleaned and capped on the way in.

Memory is data, not instructions. A lesson is mostly structured fields (its hints: op
class, dtype, size regime, bottleneck, knob -> value; its measured effects are trials)
plus a title and a short note (the advice). Every string of it comes from an LLM, an
imported file or a kernel run, and is later pasted into prompts and printed on terminals:
it is cleaned here (sage/text.py) by the episode's write path and by `memory import`, the
two ways text gets in. Kernel source kept with an attempt is an artifact: repaired (no lone
surrogate) and capped, never cleaned into something else, and shown only fenced as code.
"""

from __future__ import annotations

from typing import Any

from sage.text import (ERROR_CHARS, NOTE_CHARS, SOURCE_CHARS, TAG_CHARS, TITLE_CHARS, cap, clean, clean_optional,
                       repair)

REASON_CHARS = 500       # an adoption's reason, a trial's note (what the agent said it did)
RULE_CHARS = 1000        # a resident rule's text (its token budget binds long before)
NAME_CHARS = 200         # an episode's task and model (their columns' length)
HINT_CHARS = TAG_CHARS   # one string inside a lesson's hints
CUT_SOURCE = "\n# [kernel source cut at {limit} characters in the memory]\n"


def title(text: str) -> str:
    return clean(text, TITLE_CHARS, one_line=True)


def note(text: str) -> str:
    """A lesson's note (its advice): one line, NOTE_CHARS at most."""
    return clean(text, NOTE_CHARS, one_line=True)


def reason(text: str) -> str:
    return clean(text, REASON_CHARS, one_line=True)


def rule_text(text: str) -> str:
    return clean(text, RULE_CHARS, one_line=True)


def name(text: str) -> str:
    return clean(text, NAME_CHARS, one_line=True)


def message(text: str | None) -> str | None:
    """An attempt's error message, as a kernel run or the answer parser gave it."""
    return clean_optional(text, ERROR_CHARS)


def tags(values: list[str]) -> list[str]:
    return [clean(t, TAG_CHARS, one_line=True) for t in values]


def hints(value: Any) -> Any:
    """A lesson's hints with every string in them (keys too) cleaned; numbers and booleans as they are."""
    if isinstance(value, str):
        return clean(value, HINT_CHARS, one_line=True)
    if isinstance(value, dict):
        return {hints(k): hints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [hints(v) for v in value]
    return value


def source(text: str) -> str:
    """Kernel source as an artifact: encodable, at most SOURCE_CHARS, a cut said in a comment."""
    text = repair(text)
    if len(text) <= SOURCE_CHARS:
        return text
    marker = CUT_SOURCE.format(limit=SOURCE_CHARS)
    return cap(text, SOURCE_CHARS - len(marker)) + marker
