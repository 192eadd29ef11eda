"""The tables (SQLAlchemy 2.0 typed ORM).

A fresh database is created from these classes at SCHEMA_VERSION; migrations.py brings an
older database up to the same shape. Datetimes are naive UTC on every backend so that an
export round-trips exactly.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, CheckConstraint, DateTime, Float, ForeignKey, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

SCHEMA_VERSION = 5
EPISODE_KEY_CHARS = 300


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[str]: JSON, list[int]: JSON, datetime: DateTime()}


class SchemaVersion(Base):
    __tablename__ = "schema_version"
    version: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    applied_at: Mapped[datetime] = mapped_column(default=utcnow)


class Meta(Base):
    """Facts about the database itself; `sage_version` is the newest sage that wrote to it
    (added in schema version 4). Not part of an export: a database's own history."""

    __tablename__ = "meta"
    key: Mapped[str] = mapped_column(String(40), primary_key=True)
    value: Mapped[str] = mapped_column(String(200))


class Experience(Base):
    __tablename__ = "experience"
    __table_args__ = (CheckConstraint("status IN ('active', 'consolidated', 'retired')", name="experience_status"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(300))
    advice: Mapped[str] = mapped_column(Text)
    tags: Mapped[list[str]] = mapped_column(default=list)
    origin_operator: Mapped[str | None] = mapped_column(String(200))
    hints: Mapped[dict[str, Any]] = mapped_column(default=dict)
    utility: Mapped[float] = mapped_column(Float, default=0.0)
    retrieved: Mapped[int] = mapped_column(default=0)
    adopted: Mapped[int] = mapped_column(default=0)
    adopted_succeeded: Mapped[int] = mapped_column(default=0)
    status: Mapped[str] = mapped_column(String(20), default="active", index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class Rule(Base):
    __tablename__ = "rule"
    __table_args__ = (CheckConstraint("status IN ('resident', 'demoted')", name="rule_status"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    text: Mapped[str] = mapped_column(Text)
    sources: Mapped[list[int]] = mapped_column(default=list)  # experience ids it abstracts
    utility: Mapped[float] = mapped_column(Float, default=0.0)
    shown: Mapped[int] = mapped_column(default=0)  # episodes it was resident in
    adopted: Mapped[int] = mapped_column(default=0)
    adopted_succeeded: Mapped[int] = mapped_column(default=0)
    tokens: Mapped[int] = mapped_column(default=0)
    status: Mapped[str] = mapped_column(String(20), default="resident", index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class Episode(Base):
    __tablename__ = "episode"

    id: Mapped[int] = mapped_column(primary_key=True)
    task: Mapped[str] = mapped_column(String(200), index=True)
    op_tags: Mapped[list[str]] = mapped_column(default=list)
    model: Mapped[str] = mapped_column(String(200))
    mode: Mapped[str] = mapped_column(String(20))
    seed: Mapped[int]
    executed: Mapped[bool]
    correct: Mapped[bool]
    speedup: Mapped[float | None] = mapped_column(Float)
    cycles: Mapped[int | None]
    roofline_fraction: Mapped[float | None] = mapped_column(Float)
    reward: Mapped[float] = mapped_column(Float)
    iterations: Mapped[int] = mapped_column(default=0)
    tokens: Mapped[int] = mapped_column(default=0)
    time_s: Mapped[float] = mapped_column(Float, default=0.0)
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime] = mapped_column(default=utcnow)
    # The caller's name for this episode (the bench: its run, epoch and task), unique: an
    # episode finished twice under one key is stored once. Added in schema version 3.
    episode_key: Mapped[str | None] = mapped_column(String(EPISODE_KEY_CHARS), unique=True, index=True)
    # The sage that wrote the episode and the hardware preset its kernels were timed on
    # (what a speedup means depends on both). Added in schema version 4; older rows have None.
    sage_version: Mapped[str | None] = mapped_column(String(40))
    preset: Mapped[str | None] = mapped_column(String(200))


class Retrieval(Base):
    __tablename__ = "retrieval"

    id: Mapped[int] = mapped_column(primary_key=True)
    episode_id: Mapped[int] = mapped_column(ForeignKey("episode.id", ondelete="CASCADE"), index=True)
    experience_id: Mapped[int] = mapped_column(ForeignKey("experience.id", ondelete="CASCADE"), index=True)
    query_index: Mapped[int] = mapped_column(default=0)  # which retrieve() call of the episode
    rank: Mapped[int]
    score: Mapped[float] = mapped_column(Float)


class Adoption(Base):
    __tablename__ = "adoption"
    __table_args__ = (
        CheckConstraint("(experience_id IS NULL) <> (rule_id IS NULL)", name="adoption_one_target"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    episode_id: Mapped[int] = mapped_column(ForeignKey("episode.id", ondelete="CASCADE"), index=True)
    experience_id: Mapped[int | None] = mapped_column(ForeignKey("experience.id", ondelete="CASCADE"), index=True)
    rule_id: Mapped[int | None] = mapped_column(ForeignKey("rule.id", ondelete="CASCADE"), index=True)
    attempt: Mapped[int]
    reason: Mapped[str] = mapped_column(Text, default="")


class Attempt(Base):
    __tablename__ = "attempt"

    id: Mapped[int] = mapped_column(primary_key=True)
    episode_id: Mapped[int] = mapped_column(ForeignKey("episode.id", ondelete="CASCADE"), index=True)
    number: Mapped[int]  # 1-based within the episode
    source: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(40))
    error_type: Mapped[str | None] = mapped_column(String(80))
    error_message: Mapped[str | None] = mapped_column(Text)
    cycles: Mapped[int | None]
    speedup: Mapped[float | None] = mapped_column(Float)
    roofline_fraction: Mapped[float | None] = mapped_column(Float)  # added in schema version 2


class Trial(Base):
    """An item's measured effect in one episode: the agent timed the same work with and
    without it (a schedule search's runs, or two evaluated attempts). `effect` is the time
    without it over the time with it (above 1: the item helped). Whether the agent kept
    the item is an Adoption; a trial is what ATU credits it by. Added in schema version 5.
    """

    __tablename__ = "trial"
    __table_args__ = (
        CheckConstraint("(experience_id IS NULL) <> (rule_id IS NULL)", name="trial_one_target"),
        CheckConstraint("effect > 0", name="trial_effect_positive"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    episode_id: Mapped[int] = mapped_column(ForeignKey("episode.id", ondelete="CASCADE"), index=True)
    experience_id: Mapped[int | None] = mapped_column(ForeignKey("experience.id", ondelete="CASCADE"), index=True)
    rule_id: Mapped[int | None] = mapped_column(ForeignKey("rule.id", ondelete="CASCADE"), index=True)
    attempt: Mapped[int]   # the attempt whose answer the measurement informed
    effect: Mapped[float] = mapped_column(Float)
    note: Mapped[str] = mapped_column(Text, default="")


# Export/import and reset walk the tables parents first.
TABLES_IN_ORDER = [Experience, Rule, Episode, Retrieval, Adoption, Attempt, Trial]
