"""The rows of a memory export as pydantic models: the type, range and size of every field.

An import file is untrusted input, so nothing reaches the database that its column could
not hold or that the memory could not have written: strings within their column's length
(TEXT columns within TEXT_CHARS), integers within the 32-bit INTEGER columns (ids from 1,
counts from 0), floats finite (utilities and rewards in [-1, 1], speedups and fractions
not negative), booleans and integers strict (`true` is not 1), JSON values bounded in size
and depth, timestamps naive UTC as the memory writes them. A file too large for a column is
refused; within the limits, every text is cleaned as the memory's own write path cleans it
(sage/memory/texts.py: escapes for hidden characters, a lesson's title and note capped), so a
file with hostile text imports cleaned, with nothing else lost.

`check_against_schema` (run at import) fails if a table gains a column these models lack,
or a model disagrees with its column's nullability or length.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, NaiveDatetime, model_validator

from sage.memory import texts
from sage.text import clean

from sage.memory.models import Mode
from sage.memory.schema import TABLES_IN_ORDER, Adoption, Attempt, Episode, Experience, Retrieval, Rule, Trial

INT32_MAX = 2**31 - 1
TEXT_CHARS = 1_000_000             # a TEXT column (advice, kernel source) in an import
HINTS_BYTES = 16 * 1024            # an experience's hints object, as compact JSON
JSON_DEPTH = 8                     # nesting of a JSON column's value
TAG_CHARS = 100
LIST_ITEMS = 1_000                 # tags of one row, sources of one rule


def _length(column: Any) -> int:
    return column.type.length


def _check_json(value: Any) -> Any:
    depth, stack = 0, [(value, 1)]
    while stack:                   # iterative: a deep value must not exhaust the Python stack here
        item, level = stack.pop()
        depth = max(depth, level)
        if depth > JSON_DEPTH:
            raise ValueError(f"nested deeper than {JSON_DEPTH} levels")
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack += [(child, level + 1) for child in children]
    size = len(json.dumps(value, separators=(",", ":"), allow_nan=False).encode())
    if size > HINTS_BYTES:
        raise ValueError(f"{size} bytes of JSON, more than the {HINTS_BYTES} allowed")
    return value


def Str(max_chars: int) -> Any:  # noqa: N802 - reads as a type in the models below
    return Annotated[str, Field(max_length=max_chars)]


def Cleaned(max_chars: int, how: Any) -> Any:  # noqa: N802
    """A string within its column's length, then cleaned by `how` (which caps within it)."""
    return Annotated[str, Field(max_length=max_chars), AfterValidator(how)]


def _short(max_chars: int) -> Any:
    return lambda text: clean(text, max_chars, one_line=True)


Id = Annotated[int, Field(ge=1, le=INT32_MAX)]
Count = Annotated[int, Field(ge=0, le=INT32_MAX)]
Ordinal = Annotated[int, Field(ge=1, le=INT32_MAX)]     # 1-based: attempt and rank numbers
Int32 = Annotated[int, Field(ge=-INT32_MAX - 1, le=INT32_MAX)]
Finite = Annotated[float, Field(allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Unit = Annotated[float, Field(ge=-1, le=1, allow_inf_nan=False)]   # utilities and rewards
Timestamp = Annotated[NaiveDatetime, Field(strict=False)]          # ISO text in the file
Note = Cleaned(TEXT_CHARS, texts.note)
Reason = Cleaned(TEXT_CHARS, texts.reason)
Tags = Annotated[list[Cleaned(TAG_CHARS, _short(TAG_CHARS))], Field(max_length=LIST_ITEMS)]
Hints = Annotated[dict[str, Any], AfterValidator(_check_json), AfterValidator(texts.hints)]


class _Row(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class ExperienceRow(_Row):
    id: Id
    title: Cleaned(_length(Experience.title), texts.title)
    advice: Note
    tags: Tags
    origin_operator: Cleaned(_length(Experience.origin_operator), texts.name) | None = None
    hints: Hints
    utility: Unit
    retrieved: Count
    adopted: Count
    adopted_succeeded: Count
    status: Literal["active", "consolidated", "retired"]
    created_at: Timestamp
    updated_at: Timestamp


class RuleRow(_Row):
    id: Id
    text: Cleaned(TEXT_CHARS, texts.rule_text)
    sources: Annotated[list[Id], Field(max_length=LIST_ITEMS)]
    utility: Unit
    shown: Count
    adopted: Count
    adopted_succeeded: Count
    tokens: Count
    status: Literal["resident", "demoted"]
    created_at: Timestamp
    updated_at: Timestamp


class EpisodeRow(_Row):
    id: Id
    task: Cleaned(_length(Episode.task), texts.name)
    op_tags: Tags
    model: Cleaned(_length(Episode.model), texts.name)
    mode: Mode
    seed: Int32
    executed: bool
    correct: bool
    speedup: NonNegative | None = None
    cycles: Count | None = None
    roofline_fraction: NonNegative | None = None
    reward: Unit
    iterations: Count
    tokens: Count
    time_s: NonNegative
    started_at: Timestamp
    finished_at: Timestamp
    episode_key: Str(_length(Episode.episode_key)) | None = None      # schema version 3
    sage_version: Cleaned(_length(Episode.sage_version), _short(_length(Episode.sage_version))) | None = None  # v4
    preset: Cleaned(_length(Episode.preset), texts.name) | None = None                                       # v4


class RetrievalRow(_Row):
    id: Id
    episode_id: Id
    experience_id: Id
    query_index: Count
    rank: Ordinal
    score: Finite


class _ItemEventRow(_Row):
    """A row about one item in one episode: an experience or a rule, never both."""

    id: Id
    episode_id: Id
    experience_id: Id | None = None
    rule_id: Id | None = None
    attempt: Ordinal

    @model_validator(mode="after")
    def _one_target(self) -> _ItemEventRow:
        if (self.experience_id is None) == (self.rule_id is None):
            raise ValueError("names exactly one of experience_id and rule_id")
        return self


class AdoptionRow(_ItemEventRow):
    reason: Reason


class AttemptRow(_Row):
    id: Id
    episode_id: Id
    number: Ordinal
    source: Cleaned(TEXT_CHARS, texts.source)
    status: Cleaned(_length(Attempt.status), _short(_length(Attempt.status)))
    error_type: Cleaned(_length(Attempt.error_type), _short(_length(Attempt.error_type))) | None = None
    error_message: Cleaned(TEXT_CHARS, texts.message) | None = None
    cycles: Count | None = None
    speedup: NonNegative | None = None
    roofline_fraction: NonNegative | None = None               # schema version 2


class TrialRow(_ItemEventRow):                                 # schema version 5
    effect: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    note: Reason


ROW_MODELS: dict[str, type[_Row]] = {
    Experience.__tablename__: ExperienceRow, Rule.__tablename__: RuleRow, Episode.__tablename__: EpisodeRow,
    Retrieval.__tablename__: RetrievalRow, Adoption.__tablename__: AdoptionRow, Attempt.__tablename__: AttemptRow,
    Trial.__tablename__: TrialRow,
}


def check_against_schema() -> None:
    for table in (model.__table__ for model in TABLES_IN_ORDER):
        fields = ROW_MODELS[table.name].model_fields
        assert set(fields) == {c.name for c in table.columns}, f"{table.name}: export model and table differ"
        for column in table.columns:
            assert fields[column.name].is_required() != column.nullable, f"{table.name}.{column.name}: nullability"
            length = getattr(column.type, "length", None)
            if get_origin(fields[column.name].annotation) is Literal:
                assert max(map(len, get_args(fields[column.name].annotation))) <= (length or TEXT_CHARS)
            elif length is not None:
                declared = [m.max_length for m in _constraints(fields[column.name]) if hasattr(m, "max_length")]
                assert declared == [length], f"{table.name}.{column.name}: length {declared} != {length}"


def _constraints(field: Any) -> list[Any]:
    metadata = list(field.metadata)
    for arg in getattr(field.annotation, "__args__", ()):      # Optional[...]: the constraints of its str
        for info in getattr(arg, "__metadata__", ()):
            metadata += list(getattr(info, "metadata", ()))
    return metadata


check_against_schema()

__all__ = ["HINTS_BYTES", "JSON_DEPTH", "ROW_MODELS", "TEXT_CHARS", "check_against_schema"]
