"""ORM rows → the pydantic views the agent and the CLI see."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sage.memory.ids import exp_id, rule_id
from sage.memory.models import AttemptRecord, EpisodeRecord, EpisodeReport, ExperienceView, RuleView
from sage.memory.schema import Adoption, Attempt, Experience, Rule, Trial
from sage.memory.schema import Episode as EpisodeRow


def experience_view(row: Experience, *, score: float | None = None, rank: int | None = None,
                    trials: int = 0) -> ExperienceView:
    return ExperienceView(
        id=exp_id(row.id), title=row.title, advice=row.advice, tags=list(row.tags), hints=dict(row.hints),
        utility=row.utility, retrieved=row.retrieved, adopted=row.adopted,
        adopted_succeeded=row.adopted_succeeded, status=row.status, origin_operator=row.origin_operator,
        trials=trials, score=score, rank=rank,
    )


def trial_counts(session: Session, experience_ids: list[int]) -> dict[int, int]:
    """How many measured trials each experience has (absent: none)."""
    if not experience_ids:
        return {}
    rows = session.execute(select(Trial.experience_id, func.count()).where(Trial.experience_id.in_(experience_ids))
                           .group_by(Trial.experience_id))
    return {item: count for item, count in rows}


def rule_view(row: Rule) -> RuleView:
    return RuleView(
        id=rule_id(row.id), text=row.text, utility=row.utility, tokens=row.tokens,
        sources=[exp_id(s) for s in row.sources], shown=row.shown, adopted=row.adopted,
        adopted_succeeded=row.adopted_succeeded, status=row.status,
    )


def episode_by_key(session: Session, key: str) -> EpisodeRow | None:
    return session.scalar(select(EpisodeRow).where(EpisodeRow.episode_key == key))


def stored_report(row: EpisodeRow) -> EpisodeReport:
    """The report of an episode finished before under the same key."""
    return EpisodeReport(episode_id=row.id, mode=row.mode, reward=row.reward, credited={}, rejected=[],
                         already_finished=True)


def episode_record(session: Session, row: EpisodeRow) -> EpisodeRecord:
    attempts = session.scalars(select(Attempt).where(Attempt.episode_id == row.id).order_by(Attempt.number))
    adoptions = session.scalars(select(Adoption).where(Adoption.episode_id == row.id).order_by(Adoption.id))
    return EpisodeRecord(
        episode_id=row.id, key=row.episode_key, task=row.task, model=row.model, mode=row.mode, seed=row.seed,
        executed=row.executed, correct=row.correct, speedup=row.speedup, cycles=row.cycles,
        roofline_fraction=row.roofline_fraction, reward=row.reward, iterations=row.iterations, tokens=row.tokens,
        time_s=row.time_s, sage_version=row.sage_version, preset=row.preset,
        adopted=[exp_id(a.experience_id) if a.experience_id is not None else rule_id(a.rule_id) for a in adoptions],
        attempts=[AttemptRecord(number=a.number, source=a.source, status=a.status, error_type=a.error_type,
                                error_message=a.error_message, cycles=a.cycles, speedup=a.speedup,
                                roofline_fraction=a.roofline_fraction) for a in attempts],
    )
