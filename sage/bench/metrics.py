"""Suite metrics (docs/evaluation.md), computed from the final row of each task.

n = tasks counted: all tasks minus those whose reference is unavailable or broken (they say
nothing about a kernel); a task with no kernel counts and fails. Speedups come twice
(sage.bench.evaluate): **end to end** (the headline: host dispatch overlapped with the
device, what event timing around forward measures) and **device** (the kernels alone).

- execution rate   = executed / n           (every case ran without error)
- correctness rate = correct / n            (every case within the rule of correctness.py)
- fast_p           = share of the n tasks that are correct AND have speedup > p, as KernelBench
                     defines it; reported for p = 1 (`fast_1`) and p = 1.1 (`fast_1_1`), end to
                     end, and `device_fast_1` / `device_fast_1_1` on the device speedup;
                     `fast_1_solved` is fast_1 over the correct tasks only
- geomean speedup (solved) = geometric mean over the correct tasks (`geomean_speedup`)
- geomean speedup (all)    = geometric mean over all n tasks, a task that is not correct
                             counted as 1x (`geomean_speedup_all`)
- mean roofline    = mean roofline fraction (essential bound / device time) of the correct
                     tasks (a wrong kernel's fraction of the roofline means nothing)
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
    fast_1_count: int               # end to end
    fast_1_1_count: int = 0
    execution_rate: float | None
    correctness_rate: float | None
    fast_1: float | None            # end to end, over all counted tasks
    fast_1_1: float | None = None   # end to end, speedup > 1.1, over all counted tasks
    fast_1_solved: float | None     # end to end, over the correct tasks
    geomean_speedup: float | None   # end to end, over the correct tasks (solved)
    geomean_speedup_all: float | None = None    # end to end, over all counted tasks, failures as 1x
    device_fast_1: float | None = None
    device_fast_1_1: float | None = None
    device_geomean_speedup: float | None = None        # device, over the correct tasks
    device_geomean_speedup_all: float | None = None    # device, over all counted tasks, failures as 1x
    mean_roofline_fraction: float | None


def _speedup(e: TaskEvaluation, device: bool) -> float | None:
    v = e.device_speedup if device else e.speedup
    return v if v is not None and v > 0 and math.isfinite(v) else None


def _geomean(values: list[float]) -> float | None:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def compute_metrics(evaluations: Iterable[TaskEvaluation]) -> SuiteMetrics:
    evals = list(evaluations)
    counted = [e for e in evals if e.status not in SKIP_STATUSES]
    n = len(counted)
    executed = [e for e in counted if e.executed]
    correct = [e for e in counted if e.correct]

    def fast(p: float, device: bool) -> int:
        return sum(1 for e in correct if (_speedup(e, device) or 0.0) > p)

    def solved(device: bool) -> list[float]:
        return [s for e in correct if (s := _speedup(e, device)) is not None]

    def everyone(device: bool) -> list[float]:
        # A task that is not correct (or has no speedup) counts as the reference itself: 1x.
        return [(_speedup(e, device) or 1.0) if e.correct else 1.0 for e in counted]

    fractions = [e.roofline_fraction for e in correct if e.roofline_fraction is not None]
    return SuiteMetrics(
        tasks=n, skipped=len(evals) - n,
        executed=len(executed), correct=len(correct),
        fast_1_count=fast(1.0, False), fast_1_1_count=fast(1.1, False),
        execution_rate=_ratio(len(executed), n),
        correctness_rate=_ratio(len(correct), n),
        fast_1=_ratio(fast(1.0, False), n), fast_1_1=_ratio(fast(1.1, False), n),
        fast_1_solved=_ratio(fast(1.0, False), len(correct)),
        geomean_speedup=_geomean(solved(False)), geomean_speedup_all=_geomean(everyone(False)),
        device_fast_1=_ratio(fast(1.0, True), n), device_fast_1_1=_ratio(fast(1.1, True), n),
        device_geomean_speedup=_geomean(solved(True)), device_geomean_speedup_all=_geomean(everyone(True)),
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
