"""Adding distilled experiences without piling up near-copies.

A new experience merges into an existing one when both give the same knob hints and their
title+advice words overlap (Jaccard) at least `dedupe_overlap`: the existing item keeps its
id, text and utility, and gains the new tags. Otherwise it is inserted with U = 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from sage.memory.bm25 import tokenize
from sage.memory.schema import Experience, utcnow


@dataclass(frozen=True)
class Draft:
    title: str
    advice: str
    tags: list[str]
    hints: dict[str, Any]


def _words(title: str, advice: str) -> set[str]:
    return set(tokenize(f"{title} {advice}"))


def word_overlap(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def find_duplicate(session: Session, draft: Draft, threshold: float) -> Experience | None:
    words = _words(draft.title, draft.advice)
    best: tuple[float, int] | None = None
    best_row: Experience | None = None
    for row in session.scalars(select(Experience).where(Experience.status != "retired").order_by(Experience.id)):
        if row.hints != draft.hints:
            continue
        overlap = word_overlap(words, _words(row.title, row.advice))
        if overlap >= threshold and (best is None or (overlap, -row.id) > best):
            best, best_row = (overlap, -row.id), row
    return best_row


def store_experience(session: Session, draft: Draft, *, origin: str, threshold: float) -> tuple[Experience, bool]:
    """Insert or merge; returns the row and whether it is new."""
    existing = find_duplicate(session, draft, threshold)
    if existing is not None:
        merged = list(existing.tags) + [t for t in draft.tags if t not in existing.tags]
        if merged != existing.tags:
            existing.tags = merged
        existing.updated_at = utcnow()
        return existing, False
    row = Experience(title=draft.title, advice=draft.advice, tags=list(draft.tags), hints=dict(draft.hints),
                     origin_operator=origin, utility=0.0, status="active")
    session.add(row)
    session.flush()
    return row, True
