"""Suite metrics of NPUKERNELBENCH.md, computed from the final row of each task.

Definitions (n = tasks counted, i.e. all tasks minus those whose reference is unavailable
or broken — those say nothing about a kernel; a task with no kernel counts and fails):
- execution rate   = executed / n           (every case ran without error)
- correctness rate = correct / n            (every case within tolerance)
- fast_1           = correct and speedup > 1, as a share of n (`fast_1`) and of the
                     correct tasks (`fast_1_solved`)
- geomean speedup  = geometric mean of the speedups of the correct tasks
- mean roofline    = mean roofline fraction of the correct tasks (a wrong kernel's
                     fraction of the roofline means nothing)
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from pydantic import BaseModel

from sage.bench.evaluate import SKIP_STATUSES, TaskEvaluation


class SuiteMetrics(BaseModel):
    tasks: int                      # counted tasks (n)
    skipped: int                    # reference unavailable / broken: not counted
    executed: int
    correct: int
    fast_1_count: int
    execution_rate: float | None
    correctness_rate: float | None
    fast_1: float | None            # over all counted tasks
    fast_1_solved: float | None     # over the correct tasks
    geomean_speedup: float | None   # of the correct tasks
    mean_roofline_fraction: float | None


def compute_metrics(evaluations: Iterable[TaskEvaluation]) -> SuiteMetrics:
    evals = list(evaluations)
    counted = [e for e in evals if e.status not in SKIP_STATUSES]
    n = len(counted)
    executed = [e for e in counted if e.executed]
    correct = [e for e in counted if e.correct]
    speedups = [e.speedup for e in correct if e.speedup is not None and e.speedup > 0]
    fast = [e for e in correct if e.speedup is not None and e.speedup > 1.0]
    fractions = [e.roofline_fraction for e in correct if e.roofline_fraction is not None]
    return SuiteMetrics(
        tasks=n, skipped=len(evals) - n,
        executed=len(executed), correct=len(correct), fast_1_count=len(fast),
        execution_rate=_ratio(len(executed), n),
        correctness_rate=_ratio(len(correct), n),
        fast_1=_ratio(len(fast), n),
        fast_1_solved=_ratio(len(fast), len(correct)),
        geomean_speedup=math.exp(sum(map(math.log, speedups)) / len(speedups)) if speedups else None,
        mean_roofline_fraction=sum(fractions) / len(fractions) if fractions else None,
    )


def metrics_by_level(evaluations: Iterable[TaskEvaluation]) -> dict[str, SuiteMetrics]:
    """Keys "level0".."level4" (and "other" for tasks outside a level folder), sorted."""
    groups: dict[str, list[TaskEvaluation]] = {}
    for e in evaluations:
        groups.setdefault(f"level{e.level}" if e.level is not None else "other", []).append(e)
    return {k: compute_metrics(groups[k]) for k in sorted(groups)}


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None
