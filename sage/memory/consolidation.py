"""UGC, utility-gated consolidation: experiences that proved themselves on several operators become resident rules.

After each sage-mode episode, inside its transaction:
1. resident rules whose utility fell below `demote_below` are demoted;
2. every active experience with U > τ that at least m distinct operators adopted is
   abstracted into a rule (by the pluggable Abstractor), marked consolidated, made resident;
3. the resident set keeps a hard token budget and a rule cap: to make room, the
   lowest-utility resident is demoted, but only if it is worth less than the newcomer
   (otherwise the newcomer waits), so the set never churns on ties;
4. experiences that keep hurting (U below `retire_below` after enough adoptions) are retired.

A demoted rule's sources go back to active, carrying the rule's utility (the newer
evidence about the same advice); if they pass the gates again, that same rule comes back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol

from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from sage.memory.credit import atu_step
from sage.memory.engine import read_session
from sage.memory.models import ExperienceView, MemoryConfig
from sage.memory.schema import Adoption, Episode, Experience, Rule, utcnow
from sage.memory.texts import rule_text
from sage.memory.tokens import count_tokens
from sage.memory.views import experience_view


class Abstractor(Protocol):
    """Turns one proven experience into the text of a resident rule (short: it sits in every prompt).

    It may be slow (an LLM call): prepare_rule_texts() runs it before the episode's write
    transaction, so other writers do not wait for it. It must not touch the memory.
    """

    def abstract(self, experience: ExperienceView, operators: list[str]) -> str: ...


_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


class TemplateAbstractor:
    """The deterministic offline abstractor: title, the advice's first sentence, the knobs, where it held."""

    def abstract(self, experience: ExperienceView, operators: list[str]) -> str:
        first = _SENTENCE_END.split(experience.advice.strip(), maxsplit=1)[0].rstrip(".")
        text = f"{experience.title.rstrip('.')}: {first}."
        if experience.hints:
            text += " Knobs: " + ", ".join(f"{k}={v}" for k, v in sorted(experience.hints.items())) + "."
        return text + f" Held on {len(operators)} operators ({', '.join(sorted(operators)[:4])})."


@dataclass
class ConsolidationResult:
    promoted: dict[int, int] = field(default_factory=dict)  # experience id → rule id
    demoted: list[int] = field(default_factory=list)  # rule ids
    retired: list[int] = field(default_factory=list)  # experience ids


def adopting_operators(session: Session, experience_id: int) -> list[str]:
    rows = session.execute(
        select(Episode.task).join(Adoption, Adoption.episode_id == Episode.id)
        .where(Adoption.experience_id == experience_id).distinct()
    )
    return sorted(rows.scalars())


def prepare_rule_texts(engine: Engine, config: MemoryConfig, abstractor: Abstractor, *, rewards: dict[int, float],
                       adopted: set[int], task: str) -> dict[int, str]:
    """Rule texts for the experiences this episode is about to promote, abstracted from a read snapshot.

    The prediction applies this episode's credit (`rewards`: experience id -> what it is
    credited with) and adoptions to the snapshot. If a
    concurrent episode changes the picture, consolidate() abstracts the few it missed
    inside the transaction; a text made for an item that is not promoted is simply unused.
    """
    texts: dict[int, str] = {}
    with read_session(engine) as session:
        demoted_sources = {tuple(r.sources) for r in session.scalars(select(Rule).where(Rule.status == "demoted"))}
        for exp in session.scalars(select(Experience).where(Experience.status == "active")):
            utility = atu_step(exp.utility, rewards[exp.id], config.alpha) if exp.id in rewards else exp.utility
            if utility <= config.tau or (exp.id,) in demoted_sources:
                continue
            operators = sorted(set(adopting_operators(session, exp.id)) | ({task} if exp.id in adopted else set()))
            if len(operators) >= config.min_operators:
                view = experience_view(exp).model_copy(update={"utility": utility})
                texts[exp.id] = abstractor.abstract(view, operators)
    return texts


def _demote(session: Session, rule: Rule, result: ConsolidationResult) -> None:
    rule.status, rule.updated_at = "demoted", utcnow()
    for source in session.scalars(select(Experience).where(Experience.id.in_(rule.sources))):
        source.status, source.utility, source.updated_at = "active", rule.utility, utcnow()
    result.demoted.append(rule.id)


def _lowest(residents: list[Rule]) -> Rule:
    return min(residents, key=lambda r: (r.utility, -r.id))


def consolidate(session: Session, config: MemoryConfig, abstractor: Abstractor,
                texts: dict[int, str] | None = None) -> ConsolidationResult:
    """The UGC step, inside the episode's transaction; `texts` are rule texts made beforehand."""
    texts = texts or {}
    result = ConsolidationResult()
    residents = list(session.scalars(select(Rule).where(Rule.status == "resident").with_for_update()))
    for rule in [r for r in residents if r.utility < config.demote_below]:
        _demote(session, rule, result)
        residents.remove(rule)
    # A lowered budget or cap applies at once.
    while residents and (len(residents) > config.rule_cap or sum(r.tokens for r in residents) > config.token_budget):
        lowest = _lowest(residents)
        _demote(session, lowest, result)
        residents.remove(lowest)

    candidates = session.scalars(
        select(Experience).where(Experience.status == "active", Experience.utility > config.tau)
        .order_by(Experience.utility.desc(), Experience.id).with_for_update()
    ).all()
    demoted_by_source = {tuple(r.sources): r for r in session.scalars(select(Rule).where(Rule.status == "demoted"))}
    just_demoted = {s for r in demoted_by_source.values() if r.id in result.demoted for s in r.sources}
    for exp in candidates:
        if exp.id in just_demoted:
            continue  # its rule left the resident set in this very pass: no ping-pong within one episode
        operators = adopting_operators(session, exp.id)
        if len(operators) < config.min_operators:
            continue
        rule = demoted_by_source.get((exp.id,))
        if rule is not None:
            text = rule.text
        elif exp.id in texts:
            text = texts[exp.id]
        else:
            text = abstractor.abstract(experience_view(exp), operators)
        text = rule_text(text)   # an abstractor may be an LLM: its text is cleaned like any other
        tokens = count_tokens(text)
        if tokens > config.token_budget or config.rule_cap == 0:
            continue
        while residents and (len(residents) + 1 > config.rule_cap or sum(r.tokens for r in residents) + tokens > config.token_budget):
            lowest = _lowest(residents)
            if lowest.utility >= exp.utility:
                break
            _demote(session, lowest, result)
            residents.remove(lowest)
        if len(residents) + 1 > config.rule_cap or sum(r.tokens for r in residents) + tokens > config.token_budget:
            continue
        if rule is None:
            rule = Rule(text=text, sources=[exp.id], tokens=tokens)
            session.add(rule)
        rule.status, rule.utility, rule.updated_at = "resident", exp.utility, utcnow()
        exp.status, exp.updated_at = "consolidated", utcnow()
        session.flush()
        residents.append(rule)
        result.promoted[exp.id] = rule.id

    retiring = session.scalars(
        select(Experience).where(
            Experience.status == "active",
            Experience.utility < config.retire_below,
            Experience.adopted >= config.retire_min_adopted,
        )
    )
    for exp in retiring:
        exp.status, exp.updated_at = "retired", utcnow()
        result.retired.append(exp.id)
    return result


def resident_tokens(session: Session) -> int:
    return session.scalar(select(func.coalesce(func.sum(Rule.tokens), 0)).where(Rule.status == "resident")) or 0
