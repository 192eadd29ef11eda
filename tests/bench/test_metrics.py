"""Suite metrics arithmetic, with numbers worked out by hand."""

import math

import pytest

from sage.bench.evaluate import TaskEvaluation
from sage.bench.metrics import compute_metrics, metrics_by_level


def ev(task, level, status, speedup=None, roofline=None):
    executed = status in ("correct", "incorrect")
    return TaskEvaluation(task=task, level=level, status=status, executed=executed,
                          correct=status == "correct", speedup=speedup, roofline_fraction=roofline)


EVALS = [
    ev("a", 0, "correct", speedup=2.0, roofline=0.5),
    ev("b", 0, "correct", speedup=0.5, roofline=0.25),
    ev("c", 0, "incorrect", speedup=8.0, roofline=0.9),   # fast but wrong: not counted as fast_1
    ev("d", 1, "correct", speedup=8.0, roofline=0.75),
    ev("e", 1, "error"),
    ev("f", 1, "no_kernel"),
    ev("g", 1, "reference_unavailable"),                 # not counted at all
]


def test_suite_metrics():
    m = compute_metrics(EVALS)
    assert (m.tasks, m.skipped, m.executed, m.correct, m.fast_1_count) == (6, 1, 4, 3, 2)
    assert m.execution_rate == pytest.approx(4 / 6)
    assert m.correctness_rate == pytest.approx(3 / 6)
    assert m.fast_1 == pytest.approx(2 / 6)
    assert m.fast_1_solved == pytest.approx(2 / 3)
    assert m.geomean_speedup == pytest.approx(math.exp((math.log(2) + math.log(0.5) + math.log(8)) / 3))
    assert m.geomean_speedup == pytest.approx(2.0)   # (2 * 0.5 * 8) ** (1/3)
    assert m.mean_roofline_fraction == pytest.approx(0.5)   # (0.5 + 0.25 + 0.75) / 3


def test_metrics_by_level():
    levels = metrics_by_level(EVALS)
    assert list(levels) == ["level0", "level1"]
    l0, l1 = levels["level0"], levels["level1"]
    assert (l0.tasks, l0.correct, l0.fast_1_count) == (3, 2, 1)
    assert l0.geomean_speedup == pytest.approx(1.0)          # sqrt(2 * 0.5)
    assert (l1.tasks, l1.skipped, l1.executed, l1.correct) == (3, 1, 1, 1)
    assert l1.fast_1 == pytest.approx(1 / 3) and l1.fast_1_solved == 1.0


def test_empty_and_unsolved_suites_have_no_ratios():
    empty = compute_metrics([])
    assert empty.tasks == 0 and empty.execution_rate is None and empty.geomean_speedup is None
    unsolved = compute_metrics([ev("x", 0, "error")])
    assert unsolved.correctness_rate == 0.0 and unsolved.fast_1_solved is None


def test_fast_p_and_geomean_over_all_tasks_count_failures_as_one():
    evals = [
        TaskEvaluation(task="a", level=0, status="correct", executed=True, correct=True, speedup=1.05,
                       device_speedup=2.0),
        TaskEvaluation(task="b", level=0, status="correct", executed=True, correct=True, speedup=1.5,
                       device_speedup=1.08),
        TaskEvaluation(task="c", level=0, status="incorrect", executed=True, correct=False, speedup=4.0,
                       device_speedup=4.0),
        TaskEvaluation(task="d", level=0, status="error"),
    ]
    m = compute_metrics(evals)
    # KernelBench fast_p: correct and speedup > p, over all n = 4 tasks.
    assert (m.fast_1_count, m.fast_1_1_count) == (2, 1)
    assert m.fast_1 == pytest.approx(2 / 4) and m.fast_1_1 == pytest.approx(1 / 4)
    assert m.device_fast_1 == pytest.approx(2 / 4) and m.device_fast_1_1 == pytest.approx(1 / 4)
    assert m.geomean_speedup == pytest.approx(math.sqrt(1.05 * 1.5))                # solved only
    assert m.geomean_speedup_all == pytest.approx((1.05 * 1.5 * 1.0 * 1.0) ** 0.25)  # failures as 1x
    assert m.device_geomean_speedup == pytest.approx(math.sqrt(2.0 * 1.08))
    assert m.device_geomean_speedup_all == pytest.approx((2.0 * 1.08) ** 0.25)
