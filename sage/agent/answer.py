"""The answer contract: one fenced python block (the kernel file) and one JSON object
`{"adopted": [...], "plan": "..."}`. The contract shows no example ids: a model with an
empty memory copied them as adoptions.

Anything else is a malformed answer: one failed attempt whose message tells the model
exactly what to fix.
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sage.text import ERROR_CHARS, clean, repair

ANSWER_CONTRACT = """\
Answer with exactly two things:
1. One fenced ```python block holding the complete kernel file (the DSL import, the
   kernel class, the @kernel function(s) and the host-side `forward`).
2. One JSON object, on its own or in a ```json block:
   {"adopted": [], "plan": "one or two sentences on what this kernel does and why"}
   "adopted" lists the ids of the rules and experiences shown in the task message
   whose advice this kernel actually applies, copied exactly as shown there; an id
   that was not shown is rejected. Keep it [] when you applied none or none was shown.
No other code blocks."""

_FENCE = re.compile(r"^```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
_CODE_LANGS = {"python", "py", "python3"}
ID_CHARS = 40      # an adopted id as the model wrote it ("E12"; anything longer is rejected anyway)


class AnswerMeta(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")

    adopted: list[str] = Field(description="ids of rules/experiences the kernel applies")
    plan: str


class Answer(BaseModel):
    source: str
    adopted: list[str]
    plan: str


class MalformedAnswer(ValueError):
    """The answer broke the contract; str(exc) is the message fed back to the model."""


def parse_answer(text: str) -> Answer:
    if not text.strip():
        raise MalformedAnswer("The answer was empty. " + _reminder())
    blocks = [(m.group(1).lower(), m.group(2), m.span()) for m in _FENCE.finditer(text)]
    code = [b for b in blocks if b[0] in _CODE_LANGS or (b[0] == "" and not _is_json_object(b[1]))]
    if not code:
        raise MalformedAnswer("The answer has no fenced ```python block with the kernel file. " + _reminder())
    if len(code) > 1:
        raise MalformedAnswer(
            f"The answer has {len(code)} python code blocks; exactly one is allowed (the whole kernel file). "
            + _reminder()
        )
    meta = _find_meta(text, blocks)
    source = repair(code[0][1])   # code: only made encodable (the sandbox judges the rest)
    if not source.strip():
        raise MalformedAnswer("The python block is empty. " + _reminder())
    # The model's own words are shown, stored and sent back: cleaned once, here (sage/text.py).
    return Answer(source=source, adopted=_dedupe([clean(i, ID_CHARS, one_line=True) for i in meta.adopted]),
                  plan=clean(meta.plan, ERROR_CHARS, one_line=True))


def _find_meta(text: str, blocks: list[tuple[str, str, tuple[int, int]]]) -> AnswerMeta:
    candidates = [b[1] for b in blocks if b[0] == "json" or (b[0] == "" and _is_json_object(b[1]))]
    if not candidates:
        outside = _strip_spans(text, [b[2] for b in blocks])
        candidates = _bare_json_objects(outside)
        start = outside.rfind("{", 0, outside.find("adopted")) if "adopted" in outside else -1
        if not candidates and start != -1:
            raise MalformedAnswer(
                "The JSON object could not be parsed: " + _json_problem(outside[start:]) + ". " + _reminder()
            )
    if not candidates:
        raise MalformedAnswer('The answer has no JSON object {"adopted": [...], "plan": "..."}. ' + _reminder())
    if len(candidates) > 1:
        raise MalformedAnswer("The answer has more than one JSON object; give exactly one. " + _reminder())
    raw = candidates[0]
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise MalformedAnswer(f"The JSON object could not be parsed: {exc.msg} at line {exc.lineno}. " + _reminder()) from exc
    if not isinstance(data, dict):
        raise MalformedAnswer("The JSON must be an object, not " + type(data).__name__ + ". " + _reminder())
    try:
        return AnswerMeta.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'object'}: {e['msg']}" for e in exc.errors())
        raise MalformedAnswer(f"The JSON object has the wrong shape ({problems}). " + _reminder()) from exc


def _bare_json_objects(text: str) -> list[str]:
    """Top-level {...} objects in prose, found by letting the JSON decoder say where each ends."""
    decoder = json.JSONDecoder()
    found: list[str] = []
    i = text.find("{")
    while i != -1:
        try:
            obj, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            i = text.find("{", i + 1)
            continue
        if isinstance(obj, dict):
            found.append(text[i:end])
        i = text.find("{", end)
    return found


def _json_problem(fragment: str) -> str:
    try:
        json.loads(fragment.strip())
    except json.JSONDecodeError as exc:
        return f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    return "trailing text after the object"


def _is_json_object(body: str) -> bool:
    return body.lstrip().startswith("{")


def _strip_spans(text: str, spans: list[tuple[int, int]]) -> str:
    out, pos = [], 0
    for start, end in sorted(spans):
        out.append(text[pos:start])
        pos = end
    out.append(text[pos:])
    return "\n".join(out)


def _dedupe(ids: list[str]) -> list[str]:
    return list(dict.fromkeys(i.strip() for i in ids if i.strip()))


def _reminder() -> str:
    return "Reminder of the contract:\n" + ANSWER_CONTRACT


def render_answer(source: str, adopted: list[str], plan: str) -> str:
    """An answer in contract form (the offline synthesizer writes its answers with this)."""
    meta = json.dumps({"adopted": adopted, "plan": plan})
    return f"```python\n{source.rstrip()}\n```\n{meta}\n"
