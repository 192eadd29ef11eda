"""Okapi BM25 over a small in-memory corpus (the experiences of one retrieval)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

_WORD = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lower-case alphanumeric runs; `tile_len` gives `tile` and `len`, so snake_case knobs match prose."""
    return _WORD.findall(text.lower())


class BM25:
    def __init__(self, documents: Sequence[list[str]], *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.counts = [Counter(doc) for doc in documents]
        self.lengths = [len(doc) for doc in documents]
        self.avg_length = (sum(self.lengths) / len(self.lengths)) if documents else 0.0
        df: Counter[str] = Counter()
        for counts in self.counts:
            df.update(counts.keys())
        n = len(documents)
        # The "+1" form of idf never goes negative, so a word in most documents adds little, never harm.
        self.idf = {term: math.log(1.0 + (n - f + 0.5) / (f + 0.5)) for term, f in df.items()}

    def score(self, query: list[str], index: int) -> float:
        counts, length = self.counts[index], self.lengths[index]
        norm = self.k1 * (1.0 - self.b + self.b * length / self.avg_length) if self.avg_length else self.k1
        total = 0.0
        for term in set(query):
            tf = counts.get(term, 0)
            if tf:
                total += self.idf[term] * tf * (self.k1 + 1.0) / (tf + norm)
        return total

    def scores(self, query: list[str]) -> list[float]:
        return [self.score(query, i) for i in range(len(self.counts))]
