"""Memory: the entry point. Opens (and upgrades) the database, starts episodes, answers the CLI."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Integer, delete, func, select
from sqlalchemy.orm import Session

from sage.config import load_settings
from sage.memory import transfer
from sage.memory.consolidation import Abstractor, TemplateAbstractor, adopting_operators, resident_tokens
from sage.memory.engine import check_connection, open_engine, read_session, run_write
from sage.memory.episode import Episode
from sage.memory.errors import MemoryStoreError, UnknownItemError
from sage.memory.ids import exp_id, parse_id
from sage.memory.migrations import upgrade, writer_version
from sage.memory.models import (
    MODES,
    AdoptionRecord,
    EpisodeRecord,
    ExperienceView,
    ItemDetail,
    MemoryConfig,
    MemoryStats,
    Mode,
    RuleView,
    TrialRecord,
)
from sage.memory.schema import TABLES_IN_ORDER, Adoption, Experience, Retrieval, Rule, Trial
from sage.memory.schema import Episode as EpisodeRow
from sage.memory.views import episode_by_key, episode_record, experience_view, rule_view, trial_counts


class Memory:
    """The experience memory at a SQLAlchemy URL (default: settings.memory_url); opening upgrades the schema."""

    def __init__(self, url: str | None = None, *, config: MemoryConfig | None = None,
                 abstractor: Abstractor | None = None, episode_key: str | None = None) -> None:
        """`episode_key`: the key of the episodes started through this handle (see
        start_episode), for a caller that opens the memory for one job (the bench solver)."""
        if url is None:
            url = load_settings().memory_url
        self.config = config or MemoryConfig()
        self.episode_key = episode_key
        self.abstractor: Abstractor = abstractor or TemplateAbstractor()
        self.engine = open_engine(url)
        try:
            check_connection(self.engine)
            self.upgraded_from = upgrade(self.engine)
        except MemoryStoreError:
            self.engine.dispose()
            raise

    @classmethod
    def open(cls, settings: Any, **kwargs: Any) -> Memory:
        """From sage.config.Settings (its memory_url)."""
        return cls(settings.memory_url, **kwargs)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the agent's side -------------------------------------------------------------
    def resident_rules(self) -> list[RuleView]:
        with read_session(self.engine) as session:
            return [rule_view(r) for r in session.scalars(select(Rule).where(Rule.status == "resident").order_by(Rule.id))]

    def start_episode(self, *, task: str, op_tags: list[str], model: str, mode: Mode, seed: int,
                      key: str | None = None, preset: str | None = None) -> Episode:
        """`key` (default: this handle's episode_key) names the episode: finishing a second
        episode under a key already finished writes nothing and returns the first's report.
        `preset`: the hardware preset the episode's kernels are timed on (stored with it)."""
        if mode not in MODES:
            raise ValueError(f"unknown memory mode {mode!r}; choose one of {', '.join(MODES)}")
        rules = self.resident_rules() if mode == "sage" else []
        return Episode(self, task=task, op_tags=op_tags, model=model, mode=mode, seed=seed, rules=rules,
                       key=key if key is not None else self.episode_key, preset=preset)

    def finished_episode(self, key: str) -> EpisodeRecord | None:
        """The episode finished under `key`, with its attempts, or None."""
        with read_session(self.engine) as session:
            row = episode_by_key(session, key)
            return episode_record(session, row) if row is not None else None

    # -- the CLI's side ---------------------------------------------------------------
    def experiences(self, *, top: int | None = None, operator: str | None = None,
                    statuses: tuple[str, ...] = ("active", "consolidated", "retired")) -> list[ExperienceView]:
        """By utility, best first; `operator` keeps those it came from or that it adopted."""
        with read_session(self.engine) as session:
            query = select(Experience).where(Experience.status.in_(statuses))
            if operator is not None:
                adopted_by = select(Adoption.experience_id).join(EpisodeRow).where(EpisodeRow.task == operator)
                query = query.where((Experience.origin_operator == operator) | Experience.id.in_(adopted_by))
            query = query.order_by(Experience.utility.desc(), Experience.id).limit(top)
            rows = list(session.scalars(query))
            trials = trial_counts(session, [r.id for r in rows])
            return [experience_view(r, trials=trials.get(r.id, 0)) for r in rows]

    def experience_operators(self) -> dict[str, tuple[str | None, list[str]]]:
        """Experience id → (the operator it was learned on, the operators that adopted it)."""
        with read_session(self.engine) as session:
            origin = {i: o for i, o in session.execute(select(Experience.id, Experience.origin_operator))}
            adopters: dict[int, set[str]] = {}
            for i, task in session.execute(select(Adoption.experience_id, EpisodeRow.task).join(EpisodeRow)
                                           .where(Adoption.experience_id.is_not(None)).distinct()):
                adopters.setdefault(i, set()).add(task)
            return {exp_id(i): (o, sorted(adopters.get(i, ()))) for i, o in origin.items()}

    def operators(self) -> list[str]:
        """Every operator the memory knows: experiences' origins and episodes' tasks."""
        with read_session(self.engine) as session:
            origins = session.scalars(select(Experience.origin_operator).where(Experience.origin_operator.is_not(None)))
            tasks = session.scalars(select(EpisodeRow.task))
            return sorted(set(origins) | set(tasks))

    def rules(self, *, statuses: tuple[str, ...] = ("resident", "demoted")) -> list[RuleView]:
        with read_session(self.engine) as session:
            query = select(Rule).where(Rule.status.in_(statuses)).order_by(Rule.status.desc(), Rule.utility.desc(), Rule.id)
            return [rule_view(r) for r in session.scalars(query)]

    def show(self, item_id: str) -> ItemDetail:
        kind, number = parse_id(item_id)
        with read_session(self.engine) as session:
            row = session.get(Experience if kind == "experience" else Rule, number)
            if row is None:
                raise UnknownItemError(f"no {kind} {item_id.strip().upper()} in this memory")
            target = Adoption.experience_id if kind == "experience" else Adoption.rule_id
            history = [
                AdoptionRecord(episode_id=ep.id, task=ep.task, mode=ep.mode, attempt=a.attempt, reason=a.reason,
                               reward=ep.reward, at=ep.finished_at)
                for a, ep in session.execute(
                    select(Adoption, EpisodeRow).join(EpisodeRow).where(target == number).order_by(EpisodeRow.id, Adoption.id))
            ]
            on = Trial.experience_id if kind == "experience" else Trial.rule_id
            trials = [
                TrialRecord(episode_id=ep.id, task=ep.task, mode=ep.mode, attempt=t.attempt, effect=t.effect, note=t.note)
                for t, ep in session.execute(
                    select(Trial, EpisodeRow).join(EpisodeRow).where(on == number).order_by(EpisodeRow.id, Trial.id))
            ]
            operators = adopting_operators(session, number) if kind == "experience" else sorted({h.task for h in history})
            return ItemDetail(
                kind=kind, operators=operators, history=history, trials=trials, created_at=row.created_at, updated_at=row.updated_at,
                experience=experience_view(row, trials=len(trials)) if kind == "experience" else None,
                rule=rule_view(row) if kind == "rule" else None,
            )

    def stats(self) -> MemoryStats:
        with read_session(self.engine) as session:
            def by(column: Any) -> dict[str, int]:
                return {k: n for k, n in session.execute(select(column, func.count()).group_by(column))}

            episodes = session.scalar(select(func.count()).select_from(EpisodeRow)) or 0
            return MemoryStats(
                experiences=by(Experience.status), rules=by(Rule.status),
                resident_tokens=resident_tokens(session),
                token_budget=self.config.token_budget, rule_cap=self.config.rule_cap, episodes=episodes,
                episodes_by_mode=by(EpisodeRow.mode),
                correct_rate=session.scalar(select(func.avg(func.cast(EpisodeRow.correct, Integer)))) if episodes else None,
                mean_reward=session.scalar(select(func.avg(EpisodeRow.reward))) if episodes else None,
                adoptions=session.scalar(select(func.count()).select_from(Adoption)) or 0,
                retrievals=session.scalar(select(func.count()).select_from(Retrieval)) or 0,
                sage_version=writer_version(session.connection()),
                episodes_by_preset={k or "?": n for k, n in by(EpisodeRow.preset).items()},
            )

    def is_empty(self) -> bool:
        with read_session(self.engine) as session:
            return all(session.scalar(select(func.count()).select_from(t)) == 0 for t in TABLES_IN_ORDER)

    def reset(self) -> None:
        """Delete every experience, rule and episode (the schema stays); ids start again at 1."""
        run_write(self.engine, _reset)

    def export_data(self) -> dict[str, Any]:
        with read_session(self.engine) as session:
            return transfer.dump(session)

    def import_data(self, data: Any, *, replace: bool = False) -> dict[str, int]:
        """Load an export; refuses a non-empty memory unless `replace` (then reset and load in one transaction)."""
        tables = transfer.validate(data)

        def work(session: Session) -> dict[str, int]:
            if replace:
                _reset(session)
            transfer.load(session, tables)
            return {name: len(rows) for name, rows in tables.items()}

        return run_write(self.engine, work)


def _reset(session: Session) -> None:
    for model in reversed(TABLES_IN_ORDER):
        session.execute(delete(model))
    transfer.restart_ids(session)
