"""ORM rows → the pydantic views the agent and the CLI see."""

from __future__ import annotations

from sage.memory.ids import exp_id, rule_id
from sage.memory.models import ExperienceView, RuleView
from sage.memory.schema import Experience, Rule


def experience_view(row: Experience, *, score: float | None = None, rank: int | None = None) -> ExperienceView:
    return ExperienceView(
        id=exp_id(row.id), title=row.title, advice=row.advice, tags=list(row.tags), hints=dict(row.hints),
        utility=row.utility, retrieved=row.retrieved, adopted=row.adopted,
        adopted_succeeded=row.adopted_succeeded, status=row.status, origin_operator=row.origin_operator,
        score=score, rank=rank,
    )


def rule_view(row: Rule) -> RuleView:
    return RuleView(
        id=rule_id(row.id), text=row.text, utility=row.utility, tokens=row.tokens,
        sources=[exp_id(s) for s in row.sources], shown=row.shown, adopted=row.adopted,
        adopted_succeeded=row.adopted_succeeded, status=row.status,
    )
