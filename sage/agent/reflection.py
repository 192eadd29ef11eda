"""Extraction: after an episode the backend distils 0–3 experiences from what it saw.

The request lists the attempts (what changed, what failed, what got faster); the answer
is one JSON object `{"experiences": [{"title", "advice", "tags", "hints"}]}`. An LLM
writes it by reflection; the offline synthesizer from the knob changes it made.

Models often answer a reflection in prose. The loop then sends `strict_request` (the JSON
object and nothing else) once; if that answer has no usable object either, `prose_drafts`
reads the lessons out of the prose itself (one per bullet or paragraph), without hints.
"""

from __future__ import annotations

import json
import re
from typing import Any

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from sage.agent.backends.base import Message
from sage.agent.records import Turn
from sage.text import NOTE_CHARS, TAG_CHARS, TITLE_CHARS, clean

MAX_EXPERIENCES = 3
MAX_TITLE = TITLE_CHARS
HINT_KEYS = ("tile_len (int), buffer_num (1-4), block_dim (int or \"all\"), copy_mode (\"pad\" | \"auto\"), "
             "fp32_compute (bool), base_m, base_n, base_k, l1_k (ints, cube), cube_buffer_num, cube_block_dim")


def _cleaned(limit: int) -> BeforeValidator:
    """An LLM's lesson text, cleaned and capped before it is checked (sage/text.py): a long or
    hostile lesson is kept cut and escaped, not thrown away."""
    return BeforeValidator(lambda value: clean(value, limit, one_line=True) if isinstance(value, str) else value)


class ExperienceDraft(BaseModel):
    model_config = ConfigDict(extra="ignore")

    title: Annotated[str, _cleaned(MAX_TITLE), Field(min_length=3, max_length=MAX_TITLE)]
    advice: Annotated[str, _cleaned(NOTE_CHARS), Field(min_length=10, max_length=NOTE_CHARS)]
    tags: list[Annotated[str, _cleaned(TAG_CHARS)]] = []
    hints: dict[str, Any] = {}


class Reflection(BaseModel):
    experiences: list[ExperienceDraft] = Field(default_factory=list, max_length=MAX_EXPERIENCES)


class ReflectionError(ValueError):
    pass


def reflection_request(task_name: str, tags: list[str], turns: list[Turn],
                       last_feedback: dict | None = None) -> Message:
    """`last_feedback`: the facts of the last attempt's evaluation, which no refinement turn carried."""
    lines = [f"The episode on `{task_name}` is over. What happened, attempt by attempt:"]
    for t in turns:
        what = {"correct": f"correct, speedup {t.speedup:.2f}x, bottleneck {t.bottleneck}" if t.speedup else "correct",
                "incorrect": f"wrong result: {t.message}", "error": f"{t.error_type}: {t.message}",
                "malformed": "answer broke the contract", "repeat": "repeated an earlier kernel",
                "llm_error": f"no answer: {t.message}"}[t.status]
        lines.append(f"- attempt {t.index}: {what}. Plan: {t.plan or 'n/a'}")
    lines.append(
        "\nDistil at most 3 experiences a kernel engineer should remember for other operators: the change "
        "that fixed an error, the change that bought speed. Each has a short title, one or two sentences of "
        "advice, tags (operator class, hardware feature, error class) and, where the advice is a schedule "
        f"setting, knob hints using these keys: {HINT_KEYS}. Nothing worth keeping is a fine answer.\n"
        'Answer with one JSON object only: {"experiences": [{"title": "...", "advice": "...", "tags": ["..."], '
        '"hints": {"buffer_num": 2}}]}'
    )
    facts = {"reflect": {"task": task_name, "tags": tags, "last_feedback": last_feedback}}
    return Message(role="user", content="\n".join(lines), facts=facts)


_FENCED_JSON = re.compile(r"```(?:json)?\s*\n(.*?)```", re.DOTALL)


def parse_reflection(text: str) -> list[ExperienceDraft]:
    fenced = _FENCED_JSON.search(text)
    raw = fenced.group(1) if fenced else text[text.find("{"): text.rfind("}") + 1]
    if not raw.strip():
        raise ReflectionError("the reflection answer has no JSON object")
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        data = _first_object(text)
        if data is None:
            raise ReflectionError(f"the reflection JSON could not be parsed: {exc.msg}") from exc
    try:
        return Reflection.model_validate(data).experiences
    except ValidationError as exc:
        raise ReflectionError(f"the reflection JSON has the wrong shape: {exc.errors()[0]['msg']}") from exc


def _first_object(text: str) -> dict | None:
    """The first `{"experiences": ...}` object in prose that also holds other braces."""
    decoder = json.JSONDecoder()
    i = text.find("{")
    while i != -1:
        try:
            obj, _ = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict) and "experiences" in obj:
            return obj
        i = text.find("{", i + 1)
    return None


def strict_request(problem: str) -> Message:
    """The second request after an answer without a usable JSON object."""
    return Message(role="user", content=(
        f"That answer could not be stored: {problem}. Reply with the JSON object only, starting with {{ and "
        'ending with }, no prose and no code fence: {"experiences": [{"title": "...", "advice": "...", '
        '"tags": ["..."], "hints": {}}]}. {"experiences": []} if nothing is worth keeping.'),
        facts={"reflect_strict": problem})


_ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+", re.MULTILINE)
_MARKUP = re.compile(r"[*_`#]+")
PROSE_TITLE_CHARS = 80


def prose_drafts(text: str, tags: list[str]) -> list[ExperienceDraft]:
    """Lessons read out of a prose reflection: each bullet (or, without bullets, each
    paragraph) of at least ten words is one experience; its first sentence is the title."""
    body = _FENCED_JSON.sub("", text)
    items = [p for p in _ITEM.split(body)[1:]] if _ITEM.search(body) else re.split(r"\n\s*\n", body)
    drafts: list[ExperienceDraft] = []
    for item in items:
        plain = " ".join(_MARKUP.sub("", item).split())
        if len(plain.split()) < 10:
            continue
        first = re.split(r"(?<=[.:;!?])\s", plain, maxsplit=1)[0].rstrip(".:;")
        title = first if len(first) <= PROSE_TITLE_CHARS else first[: PROSE_TITLE_CHARS - 1].rsplit(" ", 1)[0] + "…"
        drafts.append(ExperienceDraft(title=title, advice=plain, tags=list(tags)))
        if len(drafts) == MAX_EXPERIENCES:
            break
    return drafts
