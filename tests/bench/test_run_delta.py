"""benchmarks/run_delta.py against hand-made runs: per-level geomeans and the tasks that moved."""

from __future__ import annotations

from benchmarks.run_delta import level_lines, mover_lines, rows_of
from sage.bench.evaluate import TaskEvaluation
from sage.bench.runner import ResultRow


def _row(task: str, level: int, speedup: float | None) -> ResultRow:
    ev = TaskEvaluation(task=task, level=level, status="correct" if speedup else "incorrect", executed=True,
                        correct=speedup is not None, speedup=speedup)
    return ResultRow(task=task, level=level, status=ev.status, evaluation=ev, seed=0)


def test_levels_and_movers_from_two_runs(tmp_path):
    before = [_row("a", 0, 1.0), _row("b", 0, 4.0), _row("c", 1, 2.0), _row("d", 1, None)]
    after = [_row("a", 0, 2.0), _row("b", 0, 2.0), _row("c", 1, 2.0), _row("d", 1, 1.5)]
    for name, rows in (("before", before), ("after", after)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in rows))
    b, a = rows_of(tmp_path / "before"), rows_of(tmp_path / "after")
    lines = level_lines(b, a, ("old", "new"))
    # level0: geomean of (1, 4) is 2 before, of (2, 2) is 2 after: ratio 1; level1: 2 -> sqrt(2 * 1.5)
    assert lines[2].startswith("| level0 | 2 | 100.0% | 100.0% |") and lines[2].endswith("| 1.000 |")
    assert "| 50.0% | 100.0% |" in lines[3] and lines[3].endswith(f"| {(2 * 1.5) ** 0.5 / 2:.3f} |")
    movers = mover_lines(b, a, ("old", "new"))
    # a doubled and b halved: both |ln 2|, ahead of c (unchanged); d changed status
    assert {movers[2][:4], movers[3][:4]} == {"- a:", "- b:"} and "- c: 2.000x old, 2.000x new (1.00x)" in movers
    assert "- d: incorrect old, correct new" in movers
