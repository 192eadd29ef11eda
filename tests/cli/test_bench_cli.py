"""`sage bench` and `sage ops` through the real CLI app."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sage.cli import app

FIXTURES = Path(__file__).parents[1] / "fixtures"
THIRDPARTY = FIXTURES / "thirdparty"
runner = CliRunner()


@pytest.fixture(autouse=True)
def _private_reference_cache(monkeypatch, tmp_path_factory):
    # The reference model caches timings on disk; tests keep theirs out of ~/.sage.
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "reference-cache"))


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def assert_clean_failure(result, code, text):
    assert result.exit_code == code, result.output
    assert text in result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_bench_path_reference_only_json(tmp_path):
    result = invoke("bench", THIRDPARTY, "--reference-only", "--workers", 1, "--out", tmp_path, "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["out"] == str(tmp_path) and summary["ran"] == 6 and summary["tasks"] == 6
    assert (tmp_path / "results.jsonl").exists() and (tmp_path / "report.md").exists()


def test_bench_resume_and_report_subcommand(tmp_path):
    first = invoke("bench", THIRDPARTY, "--reference-only", "--workers", 1, "--out", tmp_path, "--ops", "sigmoid")
    assert first.exit_code == 0, first.output
    again = invoke("bench", THIRDPARTY, "--reference-only", "--workers", 1, "--out", tmp_path, "--ops",
                   "sigmoid,19_ReLU", "--resume", "--json")
    assert again.exit_code == 0, again.output
    summary = json.loads(again.stdout.strip().splitlines()[-1])
    assert (summary["ran"], summary["resumed"]) == (1, 1)
    (tmp_path / "report.md").unlink()
    rebuilt = invoke("bench", "report", tmp_path)
    assert rebuilt.exit_code == 0 and (tmp_path / "report.md").exists()


def test_bench_resume_of_results_schema_1_rows_is_refused_in_one_line(tmp_path):
    first = invoke("bench", THIRDPARTY, "--reference-only", "--workers", 1, "--out", tmp_path, "--ops", "sigmoid")
    assert first.exit_code == 0, first.output
    results = tmp_path / "results.jsonl"
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    for row in rows:
        del row["schema_version"]                 # as results schema 1 wrote them
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    again = invoke("bench", THIRDPARTY, "--reference-only", "--workers", 1, "--out", tmp_path, "--resume")
    assert_clean_failure(again, 2, "results schema version 1; this sage writes version 2")
    assert len([line for line in again.output.splitlines() if line.strip()]) == 1, again.output


def test_run_subcommand_name_also_works(tmp_path):
    result = invoke("bench", "run", THIRDPARTY, "--reference-only", "--workers", 1, "--out", tmp_path,
                    "--ops", "sigmoid", "--json")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("args, text", [
    (["bench", "no/such/folder", "--reference-only"], "no such file or folder"),
    (["bench", str(THIRDPARTY), "--executor", "slurm"], "--executor must be 'local' or 'ray'"),
    (["bench", str(THIRDPARTY), "--resume"], "--resume needs --out DIR"),
    (["bench", str(THIRDPARTY), "--kernels", "no/such/dir"], "no such folder"),
    (["bench", str(THIRDPARTY), "--ops", "nothing_like_this"], "no task named 'nothing_like_this'"),
    (["bench", str(THIRDPARTY), "--preset", "ascend9000"], "unknown preset 'ascend9000'"),
    (["bench", "report", "no/such/run"], "no such folder"),
])
def test_bench_bad_input_exits_2(args, text):
    assert_clean_failure(runner.invoke(app, args), 2, text)


def test_bench_report_of_a_folder_without_results(tmp_path):
    assert_clean_failure(invoke("bench", "report", tmp_path), 2, "no results to report")


def test_bench_report_of_a_corrupt_results_file(tmp_path):
    (tmp_path / "results.jsonl").write_text('{"not": "a row"}\n{"task": "x", "status": "correct"}\n')
    assert_clean_failure(invoke("bench", "report", tmp_path), 2, "line 1: not a result row")


def test_bench_bad_option_value_is_a_usage_error():
    result = invoke("bench", THIRDPARTY, "--cases", 0)
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_ops_list_json_by_level():
    result = invoke("ops", "list", "--level", 0, "--json", "--no-plans")
    assert result.exit_code == 0, result.output
    entries = json.loads(result.stdout)
    assert len(entries) == 20 and all(e["level"] == 0 for e in entries)
    relu = next(e for e in entries if e["name"] == "level0/10_relu")
    assert "elementwise" in relu["tags"] and relu["status"] == "ok"


def test_ops_list_includes_plain_tasks():
    # Without the plans: deciding them for the whole suite is tests/cli/test_ops_plans.py's
    # job (on one level), and a cold cache costs minutes here.
    result = invoke("ops", "list", "--json", "--no-plans")
    entries = json.loads(result.stdout)
    assert any(e["name"] == "softmax" and e["level"] is None for e in entries)
    assert len({e["level"] for e in entries}) == 6 and "offline_plan" not in entries[0]
    table = invoke("ops", "list", "--level", 3, "--no-plans")
    assert table.exit_code == 0 and "batch_matmul" in table.stdout


def test_reference_subcommand_is_wired():
    result = invoke("bench", "reference", "--op", "relu", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["cases"][0]["end_to_end_us"] > 0


def test_options_may_come_before_the_target(tmp_path):
    result = invoke("bench", "--ops", "sigmoid", "--reference-only", THIRDPARTY, "--workers", 1,
                    "--out", tmp_path, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout.strip().splitlines()[-1])["ran"] == 1


def test_without_kernels_the_agent_solves(tmp_path):
    pytest.importorskip("sage.agent.bench_solver", reason="the agent is not installed")
    from sage.bench.runner import read_rows

    result = invoke("bench", FIXTURES / "tasks", "--ops", "relu", "--cases", 1, "--workers", 1,
                    "--iterations", 0, "--memory", "none", "--memory-url", f"sqlite:///{tmp_path / 'm.db'}",
                    "--out", tmp_path / "run", "--json")
    assert result.exit_code == 0, result.output
    rows = read_rows(tmp_path / "run" / "results.jsonl")
    assert rows and all(r.solver.startswith("agent:") and r.solver.endswith(":none") for r in rows)


def test_the_agent_learns_into_the_runs_own_memory(tmp_path):
    result = invoke("bench", FIXTURES / "tasks", "--ops", "relu", "--cases", 1, "--workers", 1,
                    "--iterations", 0, "--memory", "sage", "--out", tmp_path / "run", "--json")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "run" / "memory.db").stat().st_size > 0


@pytest.mark.parametrize("args, text", [
    (["--memory", "bogus"], "--memory must be one of none, uniform, atu, sage"),
    (["--model", "m", "--reference-only"], "agent options (--model) do not apply"),
    (["--compare", "none,bogus"], "--compare takes memory modes from none, uniform, atu, sage"),
    (["--compare", "sage", "--memory", "atu"], "--memory and --memory-url do not apply"),
    (["--compare", "--kernels", str(THIRDPARTY)], "agent options (--compare) do not apply"),
    (["--compare", "--resume", "--out", str(THIRDPARTY)], "has no mode folders with results to resume"),
])
def test_agent_flags_are_checked(args, text):
    assert_clean_failure(runner.invoke(app, ["bench", str(THIRDPARTY), *args]), 2, text)


def test_a_bare_compare_before_the_target_means_all_modes():
    # `--compare` then the target: the target is not taken as the mode list.
    result = runner.invoke(app, ["bench", "--compare", str(THIRDPARTY), "--memory", "sage"])
    assert_clean_failure(result, 2, "--memory and --memory-url do not apply")
