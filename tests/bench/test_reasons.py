"""Every row that is not correct says why in one line, in report.md, the summary and --json."""

import json

from sage.bench.evaluate import TaskEvaluation
from sage.bench.reference_run import ReferenceRun
from sage.bench.reasons import by_reason, not_correct, reason_class, row_reason
from sage.bench.report import write_report
from sage.bench.runner import ResultRow, row_line
from sage.npu.results import ErrorInfo


def _row(task: str, status: str, **kw) -> ResultRow:
    return ResultRow(task=task, level=1, status=status, **kw)


ROWS = [
    _row("level1/a", "correct", evaluation=TaskEvaluation(task="level1/a", status="correct", correct=True,
                                                          executed=True)),
    _row("level1/b", "no_kernel", extra={"reason": "cannot compile: aten.nonzero.default: its output shape "
                                                   "depends on the input values"},
         evaluation=TaskEvaluation(task="level1/b", status="no_kernel")),     # a row written before reasons were
    _row("level1/c", "error", evaluation=TaskEvaluation(task="level1/c", status="error", error=ErrorInfo(
        type="KernelSyntaxError", line=3, message="case 0 (float32[4]): expected ':' at line 3, column 9:\n"
                                                  "def f(x)\n        ^"))),
    _row("level1/d", "incorrect", evaluation=TaskEvaluation(task="level1/d", status="incorrect", executed=True,
                                                            reason="case 1 (float32[8]): 3 of 8 elements\nbreak the rule")),
    _row("level1/e", "crashed", evaluation=TaskEvaluation(task="level1/e", status="error",
                                                          reason="the worker process died from SIGKILL")),
    _row("level1/f", "reference_unavailable", mode="reference",
         reference=ReferenceRun(status="reference_unavailable", reason="imports torch_npu (line 6)")),
    _row("level1/g", "reference_ok", mode="reference", reference=ReferenceRun(status="reference_ok")),
]


def test_each_row_that_is_not_correct_has_one_line():
    reasons = {r.task: row_reason(r) for r in ROWS}
    assert reasons["level1/a"] is None and reasons["level1/g"] is None
    assert reasons["level1/b"].startswith("cannot compile: aten.nonzero.default")
    # the syntax error's first line only: its quote and caret belong under it, not in one line
    assert reasons["level1/c"] == "KernelSyntaxError (line 3): case 0 (float32[4]): expected ':' at line 3, column 9:"
    assert reasons["level1/d"] == "case 1 (float32[8]): 3 of 8 elements break the rule"
    assert reasons["level1/f"] == "imports torch_npu (line 6)"
    assert all("\n" not in r for r in reasons.values() if r)


def test_rows_are_grouped_by_the_kind_of_reason():
    kinds = {r.task: reason_class(r) for r in ROWS if row_reason(r)}
    assert kinds == {"level1/b": "data-dependent output shape", "level1/c": "kernel error: KernelSyntaxError",
                     "level1/d": "wrong result", "level1/e": "worker crashed",
                     "level1/f": "reference needs an accelerator"}
    missed = not_correct(ROWS)
    assert [m.task for m in missed] == ["level1/b", "level1/c", "level1/d", "level1/e", "level1/f"]
    groups = by_reason(missed + not_correct([_row("level1/h", "incorrect", evaluation=TaskEvaluation(
        task="level1/h", status="incorrect", reason="case 0: wrong"))]))
    assert (groups[0].kind, groups[0].count, groups[0].tasks) == ("wrong result", 2, ["level1/d", "level1/h"])


def test_report_and_summary_carry_every_reason(tmp_path):
    (tmp_path / "results.jsonl").write_text("".join(row_line(r) + "\n" for r in ROWS))
    report = write_report(tmp_path).read_text()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert {m["task"] for m in summary["not_correct"]} == {"level1/b", "level1/c", "level1/d", "level1/e", "level1/f"}
    assert {g["reason"]: g["count"] for g in summary["by_reason"]}["wrong result"] == 1
    assert "## Not correct, by reason" in report
    task_lines = {line.split(" | ")[0].strip("| "): line for line in report.splitlines() if line.startswith("| level1/")}
    assert "nonzero" in task_lines["level1/b"]               # the no_kernel note is no longer blank
    assert "SIGKILL" in task_lines["level1/e"] and "torch" in report.split("## Skipped")[1]
