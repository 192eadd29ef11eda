"""report.md's plots: drawn from the rows, every caption counting what is not drawn."""

from pathlib import Path

import pytest

from sage.bench import plots
from sage.bench.evaluate import CaseResult, TaskEvaluation
from sage.bench.report import write_report
from sage.bench.runner import ResultRow
from sage.npu.timeline import Times

PNG = b"\x89PNG"


def _evaluation(task: str, level: int | None, status: str, speedup: float | None = None,
                cases: list[tuple[float, float]] = ()) -> TaskEvaluation:
    correct = status == "correct"
    return TaskEvaluation(task=task, level=level, status=status, correct=correct, executed=status != "error",
                          speedup=speedup, cases=[CaseResult(index=i, correct=correct,
                                                             reference_times=Times(kernel_us=ref, device_us=ref,
                                                                                   end_to_end_us=ref),
                                                             roofline_fraction=frac)
                                                  for i, (ref, frac) in enumerate(cases)])


SUITE = [
    _evaluation("a", 0, "correct", 2.0, [(10.0, 0.5), (100.0, 0.9)]),
    _evaluation("b", 0, "correct", 0.5, [(30.0, 1.08)]),      # past the bound: drawn inside the frame
    _evaluation("c", 0, "incorrect"),
    _evaluation("d", 1, "correct", 1.25, [(50.0, 0.7)]),
    _evaluation("e", 1, "error"),
    _evaluation("f", 1, "no_kernel"),
    _evaluation("g", 3, "error"),                              # a level with no solved task
    _evaluation("h", 3, "reference_unavailable"),
]


def _rows(evaluations, epoch: int = 0) -> list[ResultRow]:
    return [ResultRow(task=e.task, level=e.level, epoch=epoch, status=e.status, evaluation=e, solver="test",
                      extra={"memory_mode": "sage"}) for e in evaluations]


def test_captions_count_failed_and_skipped_tasks_and_name_unsolved_levels():
    text = plots.not_drawn(SUITE)
    assert text == ("4 failed (2 error, 1 incorrect, 1 no_kernel) and 1 skipped (reference unavailable) task(s) "
                    "not drawn; no solved task in L3")


def test_the_report_draws_three_plots_with_their_captions(tmp_path: Path):
    rows = _rows(SUITE, 0) + _rows(SUITE[:3] + [_evaluation("c", 0, "correct", 1.5, [(20.0, 0.6)])] + SUITE[3:], 1)
    (tmp_path / "results.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in rows))
    report = write_report(tmp_path).read_text()
    for name in (plots.SPEEDUP_FILE, plots.ROOFLINE_FILE, plots.LEARNING_FILE):
        assert (tmp_path / name).read_bytes()[:4] == PNG
        assert f"({name})" in report
    # Epoch 2 (the last) is what the distribution shows: c was fixed, so 3 failed remain.
    assert "*3 failed (2 error, 1 no_kernel) and 1 skipped" in report and "no solved task in L3" in report
    assert "Failed/counted tasks per epoch: sage 4/7, 3/7" in report


def test_no_plot_but_the_reason_when_nothing_is_correct(tmp_path: Path):
    rows = _rows([_evaluation("c", 0, "incorrect"), _evaluation("e", 1, "error")])
    (tmp_path / "results.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in rows))
    report = write_report(tmp_path).read_text()
    assert "No plot: 2 failed (1 error, 1 incorrect) task(s) not drawn; no solved task in L0, L1." in report
    assert not (tmp_path / plots.SPEEDUP_FILE).exists()


def test_the_roofline_axis_is_not_pinned_at_one():
    assert plots.roofline_top([0.4, 0.97]) > 1.0
    assert plots.roofline_top([0.5, 1.3]) > 1.3


def test_ratio_ticks_are_plain_steps_finer_on_narrow_ranges():
    assert plots.ratio_ticks(0.3, 3.0) == pytest.approx([0.5, 1.0, 2.0])
    assert plots.ratio_ticks(0.05, 20) == pytest.approx([0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0])
    # 0.45x to 1.4x: 1-2-5 steps give 0.5 and 1 only; the next finer set gives three.
    assert plots.ratio_ticks(0.45, 1.4) == pytest.approx([0.5, 0.7, 1.0])
    assert plots.ratio_ticks(0.9, 1.12) == pytest.approx([0.9, 1.0, 1.1])


def test_wilson_interval_matches_the_formula_by_hand():
    # p = 5/10, z = 1.96: centre 0.5, half-width 1.96*sqrt(0.025 + 0.0096)/1.384 = 0.2634
    p, low, high = plots.wilson([True] * 5 + [False] * 5)
    assert p == 0.5 and low == pytest.approx(0.2366, abs=1e-4) and high == pytest.approx(0.7634, abs=1e-4)
    # 4 of 4: centre (1 + 0.4802)/1.9604 = 0.7550, half-width 1.96*sqrt(3.8415/64)/1.9604 = 0.2449
    assert plots.wilson([True] * 4)[1:] == (pytest.approx(0.5101, abs=1e-4), pytest.approx(1.0))


def test_the_geomean_interval_brackets_the_geomean():
    mean, low, high = plots.geomean_interval([1.0, 4.0])
    assert mean == pytest.approx(2.0) and 1.0 <= low < 2.0 < high <= 4.0
    assert plots.geomean_interval([3.0]) == pytest.approx((3.0, 3.0, 3.0)) and plots.geomean_interval([]) is None
