"""The instruction table of a chip (`atlas_a2.toml`), loaded once into typed rows.

The TOML is the data (dtypes, dtype pairs, Cast modes, limits, each with its source page);
this module only parses it and turns dtype names into numpy dtypes for fast membership tests.
"""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict

from sage.npu import dtypes

TABLE_DIR = Path(__file__).resolve().parent
DEFAULT_TABLE = "atlas_a2"


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ApiRow(_Row):
    """What one instruction takes: element types, or (src, dst) pairs / (a, b, c) triples."""

    dtypes: tuple[str, ...] = ()
    pairs: tuple[tuple[str, str], ...] = ()
    triples: tuple[tuple[str, str, str], ...] = ()
    modes: dict[str, tuple[str, ...]] = {}  # dtype -> the only modes it allows (Compare on int32: EQ)
    doc: str
    url: str | None = None
    impl: str | None = None  # high-level APIs: the A2 implementation expanded here (under meta.impl_base)
    fix: str | None = None  # what to do instead, when the generic per-dtype hint does not fit


class CastRow(_Row):
    src: str
    dst: str
    modes: tuple[str, ...]


class Limits(_Row):
    max_repeat: int
    max_repeat_doc: str
    max_repeat_url: str
    mask_max: dict[str, int]  # operand bytes -> continuous-mask maximum
    mask_doc: str
    mask_url: str


class Meta(_Row):
    product: str
    doc_base: str
    impl_base: str


class IsaTable(_Row):
    meta: Meta
    limits: Limits
    fix: dict[str, str]
    api: dict[str, ApiRow]
    cast: tuple[CastRow, ...]

    def source(self, api: str) -> str:
        """The reference page of `api`: its hiascend.com URL if known, else the doc source."""
        row = self.api[api]
        return row.url or self.meta.doc_base + row.doc


@lru_cache(maxsize=4)
def load_table(name: str = DEFAULT_TABLE) -> IsaTable:
    with open(TABLE_DIR / f"{name}.toml", "rb") as fh:
        return IsaTable.model_validate(tomllib.load(fh))


@lru_cache(maxsize=256)
def allowed_dtypes(api: str, name: str = DEFAULT_TABLE) -> frozenset[np.dtype]:
    """The element types `api` takes, as numpy dtypes (empty if the row lists pairs instead)."""
    return frozenset(dtypes.as_dtype(d) for d in load_table(name).api[api].dtypes)


@lru_cache(maxsize=64)
def allowed_pairs(api: str, name: str = DEFAULT_TABLE) -> frozenset[tuple[np.dtype, ...]]:
    row = load_table(name).api[api]
    return frozenset(tuple(dtypes.as_dtype(d) for d in combo) for combo in (*row.pairs, *row.triples))


@lru_cache(maxsize=1)
def cast_modes(name: str = DEFAULT_TABLE) -> dict[tuple[np.dtype, np.dtype], frozenset[str]]:
    """(src, dst) -> the RoundMode names Cast accepts for that pair."""
    return {(dtypes.as_dtype(r.src), dtypes.as_dtype(r.dst)): frozenset(r.modes) for r in load_table(name).cast}
