"""Failure feedback: NaN/Inf positions are counted apart from the finite error (a NaN
kernel never reads as "max abs error 0"), and the first failing positions carry the
kernel's, the eager reference's and the truth's values."""

from __future__ import annotations

import numpy as np

from sage.agent.feedback import incorrect_feedback
from sage.bench.correctness import RULE, compare_outputs
from sage.bench.evaluate import CaseResult, TaskEvaluation


def _evaluation(expected: np.ndarray, actual: np.ndarray) -> TaskEvaluation:
    comparison = compare_outputs([expected], [actual], truth=[expected.astype(np.float64)])
    case = CaseResult(index=0, inputs=["float32[2, 4]"], correct=comparison.correct, reason=comparison.reason,
                      stats=comparison.outputs)
    return TaskEvaluation(task="t", status="incorrect", executed=True, reason=comparison.reason, cases=[case])


def test_a_nan_kernel_is_reported_by_its_nan_positions():
    expected = np.arange(8, dtype=np.float32).reshape(2, 4)
    actual = expected.copy()
    actual[0, 1] = actual[1, 3] = np.nan
    text = incorrect_feedback(_evaluation(expected, actual)).content
    assert "2 of 8 positions have NaN/Inf" in text
    assert "max abs error 0" not in text
    assert "[0, 1]: kernel=nan, eager=1, truth=1" in text and "[1, 3]: kernel=nan, eager=7, truth=7" in text
    assert RULE not in text


def test_a_finite_miss_reports_its_error_and_positions():
    expected = np.ones((2, 4), dtype=np.float32)
    actual = expected.copy()
    actual[1, 2] = 1.5                                     # 0.5 off where tol is 1e-4
    text = incorrect_feedback(_evaluation(expected, actual)).content
    assert "1 of 8 finite elements outside the rule (tol 0.0001)" in text
    assert "max abs error 0.5" in text and "NaN" not in text
    assert "[1, 2]: kernel=1.5, eager=1, truth=1" in text
