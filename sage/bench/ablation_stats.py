"""What an ablation's single numbers leave out: their uncertainty, and whether adoptions paid.

- Intervals: per memory mode and epoch, the correct share, fast_1 and the geometric-mean
  end-to-end speedup over all counted tasks (a task that is not correct counts as 1x), each
  with a 95 % percentile-bootstrap interval over tasks (the tasks resampled with replacement,
  seeded, so a rerun prints the same interval).
- Adoption precision: of the attempts that applied memory items (declared adoptions), the
  share that beat the same task's attempt of the same epoch and index in mode `none` (no
  memory): a correct kernel beats a wrong one, and between correct ones the faster wins.
- Rules promoted and items demoted per mode and epoch, from the episodes' own reports.
- Trials: items the agent timed with and without (the offline agent's duels), and how many
  of them lost (the start without the item was faster).

The spread over seeds needs one run per seed; a single run reports seeds: 1.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from sage.bench.ablation import MODE_KEY, finals_by_mode_epoch
from sage.bench.evaluate import TaskEvaluation
from sage.bench.metrics import SuiteMetrics, compute_metrics
from sage.bench.runner import ResultRow

RESAMPLES = 1000
BASELINE_MODE = "none"


def resampled(evals: Sequence[TaskEvaluation], resamples: int = RESAMPLES, seed: int = 0) -> list[SuiteMetrics]:
    """The suite metrics of `resamples` draws of the tasks with replacement (seeded)."""
    rng = random.Random(seed)
    return [compute_metrics(rng.choice(evals) for _ in range(len(evals))) for _ in range(resamples)] if evals else []


def interval(samples: Sequence[SuiteMetrics], stat: Callable[[SuiteMetrics], float | None]) -> tuple[float, float] | None:
    """The 2.5th and 97.5th percentiles of `stat` over resampled metrics."""
    return _percentiles([v for m in samples if (v := stat(m)) is not None])


def _percentiles(values: list[float]) -> tuple[float, float] | None:
    values = sorted(values)
    if not values:
        return None
    return values[int(0.025 * (len(values) - 1))], values[int(0.975 * (len(values) - 1))]


def pooled_intervals(runs: Sequence[Mapping[str, TaskEvaluation]],
                     stats: Mapping[str, Callable[[SuiteMetrics], float | None]],
                     resamples: int = RESAMPLES, seed: int = 0) -> dict[str, tuple[float, float] | None]:
    """The 95 % interval of each stat's mean over `runs` (one per seed, task -> evaluation): the
    tasks every run has are resampled with replacement, the same draw in every run, so the
    interval covers the choice of tasks while the runs' mean averages the seeds."""
    shared = sorted(set.intersection(*(set(r) for r in runs))) if runs else []
    if not shared:
        return {name: None for name in stats}
    rng = random.Random(seed)
    means: dict[str, list[float]] = {name: [] for name in stats}
    for _ in range(resamples):
        draw = [rng.choice(shared) for _ in shared]
        metrics = [compute_metrics(run[t] for t in draw) for run in runs]
        for name, stat in stats.items():
            values = [stat(m) for m in metrics]
            if all(v is not None for v in values):
                means[name].append(sum(values) / len(values))
    return {name: _percentiles(values) for name, values in means.items()}


def bootstrap(evals: Sequence[TaskEvaluation], stat: Callable[[SuiteMetrics], float | None],
              resamples: int = RESAMPLES, seed: int = 0) -> tuple[float, float] | None:
    """The 95 % interval of `stat` over task resamples."""
    return interval(resampled(evals, resamples, seed), stat)


def _score(row: ResultRow) -> tuple[int, float]:
    ev = row.evaluation
    if ev is None or not ev.correct:
        return (0, 0.0)
    return (1, ev.speedup or 0.0)


def adoption_precision(rows: Sequence[ResultRow], mode: str) -> tuple[int, int, int]:
    """(adopting attempts that beat the no-memory attempt, that tied with it, adopting attempts
    with one to compare)."""
    base = {(r.task, r.epoch, r.attempt): r for r in rows if r.extra.get(MODE_KEY) == BASELINE_MODE}
    wins = ties = total = 0
    for r in rows:
        if r.extra.get(MODE_KEY) != mode or not r.extra.get("adopted"):
            continue
        other = base.get((r.task, r.epoch, r.attempt))
        if other is None:
            continue
        total += 1
        wins += _score(r) > _score(other)
        ties += _score(r) == _score(other)
    return wins, ties, total


def _epoch_rows(rows: Sequence[ResultRow], mode: str, epoch: int) -> list[ResultRow]:
    return [r for r in rows if r.extra.get(MODE_KEY) == mode and r.epoch == epoch]


def _interval(v: float | None, ci: tuple[float, float] | None, fmt: Callable[[float], str]) -> str:
    if v is None:
        return "-"
    return fmt(v) + (f" [{fmt(ci[0])}, {fmt(ci[1])}]" if ci else "")


class IntervalSection:
    """A report section: the ablation's figures with intervals, adoptions and promotions."""

    def render(self, rows: list[ResultRow], out: Path) -> str | None:
        finals = finals_by_mode_epoch(rows)
        if not finals:
            return None
        pct = lambda v: f"{100 * v:.1f}%"                                  # noqa: E731
        times = lambda v: f"{v:.3f}x"                                      # noqa: E731
        lines = ["## Intervals, adoptions and promotions", "",
                 f"95 % bootstrap intervals over tasks ({RESAMPLES} resamples, within this one run; the spread "
                 "over seeds needs one run per seed: benchmarks/ablation_seeds.py). Geomean: end to end over "
                 "all counted tasks, a task not correct counting as 1x. Adoption precision: of the attempts "
                 f"that applied memory items, those that beat the same attempt in mode {BASELINE_MODE} (a "
                 "correct kernel beats a wrong one, then the faster wins); ties: the same status and speedup. "
                 "Promoted / demoted: rules the episodes' consolidation promoted, items they demoted. Trials: "
                 "items timed with and without (lost: slower with).", "",
                 "| mode | epoch | tasks | correct | fast_1 | geomean (all) | adopting attempts | "
                 "adoption precision | ties | promoted | demoted | trials (lost) |",
                 "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for mode, epochs in finals.items():
            for e, final in epochs.items():
                evals = [r.evaluation for r in final if r.evaluation is not None]
                m, samples = compute_metrics(evals), resampled(evals)     # one set of resamples for all three
                cells = [_interval(m.correctness_rate, interval(samples, lambda s: s.correctness_rate), pct),
                         _interval(m.fast_1, interval(samples, lambda s: s.fast_1), pct),
                         _interval(m.geomean_speedup_all, interval(samples, lambda s: s.geomean_speedup_all), times)]
                epoch_rows = _epoch_rows(rows, mode, e)
                adopting = sum(1 for r in epoch_rows if r.extra.get("adopted"))
                wins, ties, total = adoption_precision([r for r in rows if r.epoch == e], mode) \
                    if mode != BASELINE_MODE else (0, 0, 0)
                precision = f"{wins}/{total} ({100 * wins / total:.0f}%)" if total else "-"
                tied = f"{ties}/{total}" if total else "-"
                promoted = sum(len(r.extra.get("promoted") or {}) for r in epoch_rows)
                demoted = sum(len(r.extra.get("demoted") or []) for r in epoch_rows)
                effects = [v for r in epoch_rows for v in (r.extra.get("trials") or {}).values()]
                lost = sum(v < 1.0 for v in effects)
                lines.append(f"| {mode} | {e + 1} | {m.tasks} | " + " | ".join(cells)
                             + f" | {adopting} | {precision} | {tied} | {promoted} | {demoted} | {len(effects)} ({lost}) |")
        return "\n".join(lines)


__all__ = ["IntervalSection", "adoption_precision", "bootstrap", "interval", "pooled_intervals", "resampled"]
