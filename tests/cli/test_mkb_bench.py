"""The Must-show folder: MultiKernelBench-format task files written for the tests
(tests/fixtures/mkb_tasks: rank 0, zero-size, 8-D, int8, fp64, broken and torch_npu files)
run through `sage bench` with a row for every task file; and `sage npu run` on their edge cases."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sage.bench.runner import read_rows
from sage.cli import app

FIXTURES = Path(__file__).parents[1] / "fixtures"
MKB = FIXTURES / "mkb_tasks"
MKB_KERNELS = FIXTURES / "mkb_kernels"
runner = CliRunner()

# Every task file of the folder and its row: the helper module case_lines.py is no task and gets none.
EXPECTED = {
    "level0/1_logical_and": "no_kernel",
    "level0/2_leaky_relu": "correct",
    "level0/3_not_equal_scalar": "no_kernel",
    "level0/4_relu_backward_aten": "reference_unavailable",
    "level0/5_clamp": "correct",
    "level1/5_layer_norm": "no_kernel",
    "level1/6_cat": "no_kernel",
    "level1/7_rotary_mul": "no_kernel",          # torch_npu served by the CPU stand-in
    "level1/8_bad_case_line": "reference_error",
    "level1/9_negative_shape": "reference_error",
}


@pytest.fixture(autouse=True)
def _private_reference_cache(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "reference-cache"))


def test_the_mkb_folder_runs_through_sage_bench_with_a_row_for_every_task_file(tmp_path):
    result = runner.invoke(app, ["bench", str(MKB), "--kernels", str(MKB_KERNELS), "--workers", "2",
                                 "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    rows = {r.task: r for r in read_rows(tmp_path / "results.jsonl")}
    assert {task: r.status for task, r in rows.items()} == EXPECTED
    files = {p.stem for p in MKB.rglob("*.py")}
    assert files - {t.split("/")[1] for t in rows} == {"case_lines"}
    assert "8_bad_case_line.json line 2 (case 1): not JSON" in rows["level1/8_bad_case_line"].evaluation.reason
    clamp = rows["level0/5_clamp"].evaluation
    assert [c.inputs[0] for c in clamp.cases] == ["int8[]", "int8[4, 0, 3]", "int8[2, 1, 3, 2, 1, 2, 5, 3]",
                                                  "int8[64, 300]", "float16[8, 301]", "float64[4, 5]"]
    assert [c.empty for c in clamp.cases] == [False, True, False, False, False, False]
    assert clamp.cases[5].unsupported.endswith("the 910B vector unit has no fp64 instructions")
    assert clamp.speedup is not None
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["ran"] == len(EXPECTED)
    # every task that is not correct has its one-line reason in --json, counted per kind
    reasons = {m["task"]: m["reason"] for m in summary["not_correct"]}
    assert set(reasons) == {t for t, s in EXPECTED.items() if s != "correct"} and all(reasons.values())
    assert {g["reason"]: g["count"] for g in summary["by_reason"]} == {
        "no kernel file": 5, "reference needs an accelerator": 1, "reference error": 2}
    assert result.stderr == ""                          # no progress with --json, not even redirected


def test_the_terminal_summary_counts_the_reasons(tmp_path):
    result = runner.invoke(app, ["bench", str(MKB), "--kernels", str(MKB_KERNELS), "--workers", "1", "--cases", "1",
                                 "--out", str(tmp_path)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "not correct, by reason (8 tasks" in result.stdout
    shown = [" ".join(line.split()) for line in result.stdout.splitlines()]
    assert "no kernel file 5" in shown and "reference needs an accelerator 1" in shown
    assert result.stderr == ""                          # not a terminal: no progress bar left behind


def test_npu_run_says_where_the_trace_went_and_reports_isolation_gaps_in_json(tmp_path):
    trace = tmp_path / "clamp.json"
    args = ["npu", "run", str(MKB_KERNELS / "level0/5_clamp.py"), "--task", str(MKB / "npukernelbench_level0/5_clamp.py"),
            "--trace", str(trace)]
    shown = runner.invoke(app, args)
    assert shown.exit_code == 0, shown.output
    assert f"trace written to {trace}" in shown.output.replace("\n", "")
    assert json.loads(trace.read_text())["traceEvents"]
    assert "case 5 not judged: argument 0 (float64[4, 5])" in shown.output.replace("\n", " ")
    assert shown.output.count("isolation layer") <= 1
    payload = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    assert payload["trace_file"] == str(trace)
    assert isinstance(payload["isolation_gaps"], list)
    assert [c["empty"] for c in payload["cases"]][1] is True


def test_npu_run_on_a_kernel_that_never_launches_says_so_without_speedup(tmp_path):
    result = runner.invoke(app, ["npu", "run", str(FIXTURES / "kernels/relu_never_launched.py"),
                                 "--task", str(FIXTURES / "tasks/relu.py"), "--case", "1", "--json"])
    assert result.exit_code == 1
    payload = json.loads(result.stdout)
    assert payload["status"] == "incorrect" and "the kernel was never launched" in payload["reason"]
    assert payload["speedup"] is None and payload["roofline_fraction"] is None
    shown = runner.invoke(app, ["npu", "run", str(FIXTURES / "kernels/relu_never_launched.py"),
                                "--task", str(FIXTURES / "tasks/relu.py"), "--case", "1"])
    assert "never launched" in shown.output and "roofline" not in shown.output
