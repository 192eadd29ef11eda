"""Scoring experiences for one query.

    relevance = BM25(query; title + advice + tags) / max BM25 over the pool
                + tag_weight · Jaccard(experience tags, task tags)
    score     = relevance + β·U + c·sqrt(ln(N + 1) / (n + 1))

n is how often this experience was retrieved, N the sum of n over the pool: the last term
is a UCB-style bonus that gives rarely shown experiences a chance to earn a utility.
Only experiences with relevance > 0 (a shared word or tag) are candidates, so utility and
exploration rank relevant items and never pull in unrelated ones. BM25 is normalised so
that relevance stays on the same scale as U whatever the query length.

Ties are broken by an order derived from the episode's seed, so a retrieval is
deterministic for a given memory state and seed.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from sage.memory.bm25 import BM25, tokenize
from sage.memory.models import MemoryConfig


@dataclass(frozen=True)
class Candidate:
    id: int
    title: str
    advice: str
    tags: list[str]
    utility: float
    retrieved: int


@dataclass(frozen=True)
class Scored:
    id: int
    score: float
    relevance: float


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def tie_break(seed: int, item_id: int) -> float:
    return random.Random(f"{seed}:{item_id}").random()


def rank(pool: Sequence[Candidate], query: str, tags: Sequence[str], *, k: int, seed: int, config: MemoryConfig) -> list[Scored]:
    """The top-k of `pool`, best first."""
    if not pool or k <= 0:
        return []
    bm25 = BM25([tokenize(" ".join([c.title, c.advice, *c.tags])) for c in pool])
    lexical = bm25.scores(tokenize(" ".join([query, *tags])))
    top = max(lexical)
    task_tags = {t.lower() for t in tags}
    total_shown = sum(c.retrieved for c in pool)
    scored: list[Scored] = []
    for cand, lex in zip(pool, lexical, strict=True):
        relevance = (lex / top if top > 0 else 0.0) + config.tag_weight * _jaccard({t.lower() for t in cand.tags}, task_tags)
        if relevance <= 0:
            continue
        bonus = config.exploration * math.sqrt(math.log(total_shown + 1) / (cand.retrieved + 1))
        scored.append(Scored(cand.id, relevance + config.beta * cand.utility + bonus, relevance))
    # Rounding keeps float noise from deciding what is really a tie.
    scored.sort(key=lambda s: (-round(s.score, 9), tie_break(seed, s.id)))
    return scored[:k]
