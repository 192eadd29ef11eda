"""The memory's public value types: configuration, what the agent sees, what an episode reports."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

Mode = Literal["none", "uniform", "atu", "sage"]
MODES: tuple[Mode, ...] = ("none", "uniform", "atu", "sage")


class MemoryConfig(BaseModel):
    """Every constant of retrieval, credit and consolidation, with their defaults (docs/memory.md)."""

    k: int = Field(6, ge=0, description="experiences retrieved per query")
    alpha: float = Field(0.3, gt=0, le=1, description="ATU step: U ← U + α(r − U)")
    beta: float = Field(0.5, ge=0, description="weight of utility U in the retrieval score")
    exploration: float = Field(0.3, ge=0, description="c of the UCB bonus c·sqrt(ln(N+1)/(n+1))")
    tag_weight: float = Field(1.0, ge=0, description="weight of the Jaccard tag overlap with the task")
    tau: float = Field(0.2, description="UGC utility gate: promote when U > tau")
    min_operators: int = Field(3, ge=1, description="UGC breadth gate: adopted by at least this many operators")
    demote_below: float = Field(0.0, description="a resident rule whose U falls below this is demoted")
    token_budget: int = Field(600, ge=0, description="hard token budget of the resident rules")
    rule_cap: int = Field(12, ge=0, description="most resident rules")
    retire_below: float = Field(-0.5, description="sage mode: retire an experience whose U falls below this ...")
    retire_min_adopted: int = Field(3, ge=1, description="... once it has been adopted this many times")
    dedupe_overlap: float = Field(0.6, ge=0, le=1, description="token Jaccard of title+advice above which a new experience merges")


class ExperienceView(BaseModel):
    id: str  # "E12"
    title: str
    advice: str
    tags: list[str]
    hints: dict[str, object]
    utility: float
    retrieved: int
    adopted: int
    adopted_succeeded: int
    status: str
    origin_operator: str | None = None
    trials: int = 0  # how often its effect was measured: 0 is untried, not neutral
    score: float | None = None  # set by retrieval
    rank: int | None = None  # 1-based, set by retrieval


class RuleView(BaseModel):
    id: str  # "R3"
    text: str
    utility: float
    tokens: int
    sources: list[str]  # experience ids it abstracts
    shown: int
    adopted: int
    adopted_succeeded: int
    status: str


class Outcome(BaseModel):
    """How the episode ended: the best attempt's result and what it cost."""

    executed: bool
    correct: bool
    speedup: float | None = None
    cycles: int | None = None
    roofline_fraction: float | None = None
    iterations: int = 0
    tokens: int = 0
    time_s: float = 0.0


class AdoptionResult(BaseModel):
    accepted: list[str]
    rejected: list[str]


class EpisodeReport(BaseModel):
    episode_id: int
    mode: Mode
    reward: float
    credited: dict[str, tuple[float, float]]  # id → (U before, U after)
    rejected: list[str]  # declared ids that were never shown in this episode
    stale: list[str] = []  # shown ids that vanished from the memory before finish (e.g. a reset)
    promoted: dict[str, str] = {}  # experience id → rule id
    demoted: list[str] = []  # rule ids
    retired: list[str] = []  # experience ids
    new_experiences: list[str] = []
    merged_experiences: list[str] = []  # existing ids a new experience was merged into
    # True when an episode with this key was finished before: nothing was written, and the
    # report is the stored episode's (id, mode, reward; what it credited is not kept).
    already_finished: bool = False


class AttemptRecord(BaseModel):
    number: int
    source: str
    status: str
    error_type: str | None = None
    error_message: str | None = None
    cycles: int | None = None
    speedup: float | None = None
    roofline_fraction: float | None = None


class EpisodeRecord(BaseModel):
    """A finished episode as stored: what `Memory.finished_episode(key)` returns."""

    episode_id: int
    key: str | None
    task: str
    model: str
    mode: Mode
    seed: int
    executed: bool
    correct: bool
    speedup: float | None
    cycles: int | None
    roofline_fraction: float | None
    reward: float
    iterations: int
    tokens: int
    time_s: float
    adopted: list[str]  # ids declared adopted, in order
    attempts: list[AttemptRecord]
    sage_version: str | None = None  # None: written before schema version 4
    preset: str | None = None


class AdoptionRecord(BaseModel):
    episode_id: int
    task: str
    mode: str
    attempt: int
    reason: str
    reward: float | None
    at: datetime


class TrialRecord(BaseModel):
    """A measured effect of the item in one episode (time without it / time with it)."""

    episode_id: int
    task: str
    mode: str
    attempt: int
    effect: float
    note: str


class ItemDetail(BaseModel):
    """`sage memory show`: an experience or rule with its adoption history and measured trials."""

    kind: Literal["experience", "rule"]
    experience: ExperienceView | None = None
    rule: RuleView | None = None
    operators: list[str]  # operators that adopted it (the breadth consolidation counts)
    history: list[AdoptionRecord]
    trials: list[TrialRecord] = []
    created_at: datetime
    updated_at: datetime


class MemoryStats(BaseModel):
    """`sage memory stats`."""

    experiences: dict[str, int]  # by status
    rules: dict[str, int]
    resident_tokens: int
    token_budget: int
    rule_cap: int
    episodes: int
    episodes_by_mode: dict[str, int]
    correct_rate: float | None
    mean_reward: float | None
    adoptions: int
    retrievals: int
    sage_version: str | None = None  # the newest sage that wrote the database
    episodes_by_preset: dict[str, int] = {}  # "?" for episodes stored before presets were recorded
