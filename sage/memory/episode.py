"""One synthesis of one operator, as the memory sees it.

An Episode only reads the database until finish(): retrievals, attempts, adoption
declarations and new experiences are buffered in the object. finish() writes all of it,
the credit and the consolidation in ONE write transaction, so a process killed at any
point leaves either the whole episode or none of it.

An episode may carry a key (the bench's job key). finish() under a key that an earlier
episode was finished with writes nothing and returns that episode's report: a caller that
does the same job again after a crash does not learn it twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from sage import __version__
from sage.memory import retrieval, texts
from sage.memory.consolidation import consolidate, prepare_rule_texts
from sage.memory.credit import CreditTargets, atu_step, credit_targets
from sage.memory.effects import Measured, attempt_effects, by_item, check_effect
from sage.memory.engine import read_session, run_write
from sage.memory.errors import EpisodeClosedError, UnknownItemError
from sage.memory.extraction import Draft, store_experience
from sage.memory.ids import exp_id, parse_id, rule_id
from sage.memory.models import AdoptionResult, EpisodeReport, ExperienceView, Mode, Outcome, RuleView
from sage.memory.reward import effect_reward, episode_reward
from sage.memory.schema import Adoption, Attempt, Experience, Retrieval, Rule, Trial, utcnow
from sage.memory.schema import EPISODE_KEY_CHARS
from sage.memory.schema import Episode as EpisodeRow
from sage.memory.views import episode_by_key, experience_view, stored_report, trial_counts

if TYPE_CHECKING:
    from sage.memory.store import Memory


@dataclass(frozen=True)
class _Shown:
    query_index: int
    experience: int
    rank: int
    score: float


@dataclass(frozen=True)
class _Credit:
    measured: list[Measured]                    # every measured effect of the episode
    targets: CreditTargets
    rewards: dict[tuple[str, int], float]       # (kind, number) of each target -> what it is credited with


@dataclass(frozen=True)
class _Declared:
    kind: str
    number: int
    attempt: int
    reason: str


class Episode:
    def __init__(self, memory: Memory, *, task: str, op_tags: list[str], model: str, mode: Mode, seed: int,
                 rules: list[RuleView], key: str | None = None, preset: str | None = None) -> None:
        if key is not None and not 0 < len(key) <= EPISODE_KEY_CHARS:
            raise ValueError(f"an episode key has 1 to {EPISODE_KEY_CHARS} characters, got {len(key)}")
        self._memory = memory
        self.task, self.op_tags, self.model = texts.name(task), texts.tags(op_tags), texts.name(model)
        self.mode, self.seed = mode, seed
        self.key, self.preset = key, preset
        self._rules = rules
        self._started_at = utcnow()
        self._shown: list[_Shown] = []
        self._queries = 0
        self._attempts: list[dict[str, Any]] = []
        self._declared: list[_Declared] = []
        self._measured: list[Measured] = []
        self._rejected: list[str] = []
        self._drafts: list[Draft] = []
        self._closed = False

    @property
    def rules(self) -> list[RuleView]:
        """The resident rules shown to the agent in this episode (sage mode only)."""
        return list(self._rules)

    def _check_open(self) -> None:
        if self._closed:
            raise EpisodeClosedError("this episode is finished; start a new one")

    def retrieve(self, query: str, tags: list[str], k: int | None = None) -> list[ExperienceView]:
        """The top-k experiences for this query (none in mode `none`); ids are "E<n>"."""
        self._check_open()
        config = self._memory.config
        if self.mode == "none":
            return []
        k = config.k if k is None else k
        # Consolidated experiences live on as resident rules, which only sage mode shows.
        hidden = ("retired", "consolidated") if self.mode == "sage" else ("retired",)
        with read_session(self._memory.engine) as session:
            rows = {r.id: r for r in session.scalars(select(Experience).where(Experience.status.not_in(hidden)))}
            pool = [retrieval.Candidate(r.id, r.title, r.advice, list(r.tags), r.utility, r.retrieved)
                    for r in rows.values()]
            ranked = retrieval.rank(pool, query, tags, k=k, seed=self.seed, config=config)
            trials = trial_counts(session, [item.id for item in ranked])
        views = []
        for position, item in enumerate(ranked, start=1):
            self._shown.append(_Shown(self._queries, item.id, position, item.score))
            views.append(experience_view(rows[item.id], score=item.score, rank=position, trials=trials.get(item.id, 0)))
        self._queries += 1
        return views

    def record_attempt(self, *, source: str, status: str, error_type: str | None = None,
                       error_message: str | None = None, cycles: int | None = None, speedup: float | None = None,
                       roofline_fraction: float | None = None) -> int:
        """Log one kernel the agent tried; returns its 1-based attempt number."""
        self._check_open()
        self._attempts.append(dict(number=len(self._attempts) + 1, source=texts.source(source), status=status,
                                   error_type=texts.name(error_type)[:80] if error_type is not None else None,
                                   error_message=texts.message(error_message), cycles=cycles,
                                   speedup=speedup, roofline_fraction=roofline_fraction))
        return len(self._attempts)

    def declare_adopted(self, ids: list[str], *, attempt: int, reason: str = "") -> AdoptionResult:
        """Record which shown items the agent used; ids it was never shown here are rejected, not credited."""
        self._check_open()
        if attempt < 1:
            raise ValueError(f"attempt numbers start at 1 (as record_attempt returns them), got {attempt}")
        accepted, rejected = [], []
        for raw in ids:
            try:
                kind, number = parse_id(raw)
            except UnknownItemError:
                rejected.append(texts.name(str(raw)))   # an LLM's text, shown and reported
                continue
            name = exp_id(number) if kind == "experience" else rule_id(number)
            if number not in self._visible(kind):
                rejected.append(name)
                continue
            if name in accepted:
                continue
            accepted.append(name)
            if not any((d.kind, d.number, d.attempt) == (kind, number, attempt) for d in self._declared):
                self._declared.append(_Declared(kind, number, attempt, texts.reason(reason)))
        self._rejected += [r for r in rejected if r not in self._rejected]
        return AdoptionResult(accepted=accepted, rejected=rejected)

    def record_effect(self, item: str, *, effect: float, attempt: int, note: str = "") -> bool:
        """Record a measured trial of a shown item: the agent timed the same work without the
        item and with it; `effect` = time without / time with. ATU credits the item by it
        (reward.effect_reward), kept in the answer or not. Returns False for an id this
        episode never showed (nothing is recorded)."""
        self._check_open()
        effect = check_effect(effect)
        if attempt < 1:
            raise ValueError(f"attempt numbers start at 1, got {attempt}")
        try:
            kind, number = parse_id(item)
        except UnknownItemError:
            return False
        if number not in self._visible(kind):
            return False
        self._measured.append(Measured(kind, number, attempt, effect, texts.reason(note)))
        return True

    def add_experience(self, *, title: str, advice: str, tags: list[str], hints: dict[str, Any]) -> None:
        """Queue a distilled experience; finish() stores it, or merges it into a near-copy. Ignored in mode `none`."""
        self._check_open()
        if not title.strip() or not advice.strip():
            raise ValueError("an experience needs a title and advice")
        if self.mode != "none":
            self._drafts.append(Draft(texts.title(title), texts.note(advice), texts.tags(tags), texts.hints(dict(hints))))

    def finish(self, outcome: Outcome) -> EpisodeReport:
        """Write the episode, its credit, extraction and consolidation in one transaction
        (nothing if an episode with this key was finished before: its report is returned)."""
        self._check_open()
        if self.key is not None:
            with read_session(self._memory.engine) as session:
                done = episode_by_key(session, self.key)
                if done is not None:
                    self._closed = True
                    return stored_report(done)
        reward = episode_reward(executed=outcome.executed, correct=outcome.correct, speedup=outcome.speedup)
        credit = self._credit(reward)
        texts: dict[int, str] = {}
        if self.mode == "sage":
            texts = prepare_rule_texts(self._memory.engine, self._memory.config, self._memory.abstractor,
                                       rewards={i: credit.rewards[("experience", i)] for i in credit.targets.experiences},
                                       adopted=self._adopted("experience"), task=self.task)
        report = run_write(self._memory.engine,
                           lambda session: self._write_once(session, outcome, reward, credit, texts))
        self._closed = True
        return report

    def _write_once(self, session: Session, outcome: Outcome, reward: float, credit: _Credit,
                    texts: dict[int, str]) -> EpisodeReport:
        # Checked again under the write lock: another process may have finished this key meanwhile.
        done = episode_by_key(session, self.key) if self.key is not None else None
        return stored_report(done) if done is not None else self._write(session, outcome, reward, credit, texts)

    def _visible(self, kind: str) -> set[int]:
        """The numbers of the items of `kind` this episode showed (retrieved or resident)."""
        return {s.experience for s in self._shown} if kind == "experience" else {int(r.id[1:]) for r in self._rules}

    def _adopted(self, kind: str) -> set[int]:
        return {d.number for d in self._declared if d.kind == kind}

    def _credit(self, reward: float) -> _Credit:
        """Who is credited and with what: an item's counterfactual effect reward where the
        episode measured it and the mode is ATU's, else the episode reward (uniform credit is
        the episode reward by definition)."""
        declared = [(d.kind, d.number, d.attempt) for d in self._declared]
        measured = self._measured + attempt_effects(self._attempts, declared)
        effects = by_item(measured)
        targets = credit_targets(self.mode, retrieved={s.experience for s in self._shown},
                                 adopted_experiences=self._adopted("experience"), adopted_rules=self._adopted("rule"),
                                 measured_experiences=frozenset(n for k, n in effects if k == "experience"),
                                 measured_rules=frozenset(n for k, n in effects if k == "rule"))
        counterfactual = self.mode in ("atu", "sage")
        keys = [("experience", i) for i in targets.experiences] + [("rule", i) for i in targets.rules]
        rewards = {key: effect_reward(effects[key]) if counterfactual and key in effects else reward for key in keys}
        return _Credit(measured, targets, rewards)

    def _write(self, session: Session, outcome: Outcome, reward: float, credit: _Credit,
               texts: dict[int, str]) -> EpisodeReport:
        config = self._memory.config
        episode = EpisodeRow(task=self.task, op_tags=self.op_tags, model=self.model, mode=self.mode, seed=self.seed,
                             executed=outcome.executed, correct=outcome.correct, speedup=outcome.speedup,
                             cycles=outcome.cycles, roofline_fraction=outcome.roofline_fraction, reward=reward,
                             iterations=outcome.iterations, tokens=outcome.tokens, time_s=outcome.time_s,
                             started_at=self._started_at, finished_at=utcnow(), episode_key=self.key,
                             sage_version=__version__, preset=self.preset)
        session.add(episode)
        session.flush()
        session.add_all(Attempt(episode_id=episode.id, **a) for a in self._attempts)

        retrieved, shown_rules = self._visible("experience"), self._visible("rule")
        adopted_exps, adopted_rules = self._adopted("experience"), self._adopted("rule")
        # Row locks for the read-modify-write below (PostgreSQL; SQLite holds the database lock already).
        exps = {e.id: e for e in session.scalars(
            select(Experience).where(Experience.id.in_(retrieved | adopted_exps)).order_by(Experience.id).with_for_update())}
        rules = {r.id: r for r in session.scalars(
            select(Rule).where(Rule.id.in_(shown_rules | adopted_rules)).order_by(Rule.id).with_for_update())}
        stale = sorted({exp_id(i) for i in (retrieved | adopted_exps) - exps.keys()}
                       | {rule_id(i) for i in (shown_rules | adopted_rules) - rules.keys()})

        now = utcnow()
        for row in exps.values():
            row.retrieved += int(row.id in retrieved)
            row.adopted += int(row.id in adopted_exps)
            row.adopted_succeeded += int(row.id in adopted_exps and outcome.correct)
            row.updated_at = now
        for row in rules.values():
            row.shown += int(row.id in shown_rules)
            row.adopted += int(row.id in adopted_rules)
            row.adopted_succeeded += int(row.id in adopted_rules and outcome.correct)
            row.updated_at = now
        credited: dict[str, tuple[float, float]] = {}
        targets, rewards = credit.targets, credit.rewards
        for key, name, row in [(("experience", i), exp_id(i), exps[i]) for i in sorted(targets.experiences & exps.keys())] + \
                              [(("rule", i), rule_id(i), rules[i]) for i in sorted(targets.rules & rules.keys())]:
            before = row.utility
            row.utility = atu_step(before, rewards[key], config.alpha)
            credited[name] = (before, row.utility)

        session.add_all(_retrieval_row(episode.id, s) for s in self._shown if s.experience in exps)
        session.add_all(
            Adoption(episode_id=episode.id, attempt=d.attempt, reason=d.reason,
                     experience_id=d.number if d.kind == "experience" else None,
                     rule_id=d.number if d.kind == "rule" else None)
            for d in self._declared if d.number in (exps if d.kind == "experience" else rules)
        )
        session.add_all(
            Trial(episode_id=episode.id, attempt=m.attempt, effect=m.effect, note=m.note,
                  experience_id=m.number if m.kind == "experience" else None,
                  rule_id=m.number if m.kind == "rule" else None)
            for m in credit.measured if m.number in (exps if m.kind == "experience" else rules)
        )
        new, merged = [], []
        for draft in self._drafts:
            row, is_new = store_experience(session, draft, origin=self.task, threshold=config.dedupe_overlap)
            (new if is_new else merged).append(exp_id(row.id))
        session.flush()

        report = EpisodeReport(episode_id=episode.id, mode=self.mode, reward=reward, credited=credited,
                               rejected=list(self._rejected), stale=stale, new_experiences=new,
                               merged_experiences=list(dict.fromkeys(merged)))
        if self.mode == "sage":
            ugc = consolidate(session, config, self._memory.abstractor, texts)
            report.promoted = {exp_id(e): rule_id(r) for e, r in ugc.promoted.items()}
            report.demoted = [rule_id(r) for r in ugc.demoted]
            report.retired = [exp_id(e) for e in ugc.retired]
        return report


def _retrieval_row(episode_id: int, shown: _Shown) -> Retrieval:
    return Retrieval(episode_id=episode_id, experience_id=shown.experience, query_index=shown.query_index,
                     rank=shown.rank, score=shown.score)
