"""The runner: results.jsonl rows, resume, skips, executors, report rebuild."""

import json
from pathlib import Path

import pytest

from sage.bench.executors import InlineExecutor, LocalExecutor, make_executor
from sage.bench.report import NoResults, write_report
from sage.bench.evaluate import TaskEvaluation
from sage.bench.runner import (Attempt, BenchConfig, Job, KernelDirSolver, SolveResult, choose_best, collect_tasks,
                               read_rows, run_bench, run_job)
from sage.npu.hardware import load_preset

FIXTURES = Path(__file__).parents[1] / "fixtures"
THIRDPARTY = FIXTURES / "thirdparty"


@pytest.fixture(autouse=True)
def _private_reference_cache(monkeypatch, tmp_path_factory):
    # The reference model caches timings on disk; tests keep theirs out of ~/.sage.
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "reference-cache"))


def test_reference_only_run_writes_one_row_per_task(tmp_path):
    run = run_bench(BenchConfig(target=str(THIRDPARTY), workers=1, out=tmp_path), solver=None)
    rows = read_rows(tmp_path / "results.jsonl")
    assert len(rows) == len(run.rows) == 6 and run.ran == 6 and run.resumed == 0
    status = {r.task: r.status for r in rows}
    assert status == {
        "level1/19_ReLU": "reference_ok", "level2/12_Scale_Bias": "reference_ok", "sigmoid": "reference_ok",
        "level1/97_Sync_cuda_forward": "reference_unavailable",
        "level1/98_Gemm_cuda_inputs": "reference_unavailable", "rotary_mul": "reference_unavailable"}
    relu = next(r for r in rows if r.task == "level1/19_ReLU")
    assert relu.mode == "reference" and relu.final and relu.reference.cases[0].inputs == ["float32[16, 2048]"]
    assert json.loads((tmp_path / "run.json").read_text())["target"] == str(THIRDPARTY)
    assert (tmp_path / "summary.json").exists() is False   # written by the report, not the runner


def test_resume_skips_finished_tasks(tmp_path):
    config = BenchConfig(target=str(THIRDPARTY), workers=1, out=tmp_path, ops=["19_ReLU", "sigmoid"])
    first = run_bench(config, solver=None)
    assert first.ran == 2
    # A third task joins the selection; the two finished ones are not run again.
    config = config.model_copy(update={"resume": True, "ops": ["19_ReLU", "sigmoid", "12_Scale_Bias"]})
    second = run_bench(config, solver=None)
    assert (second.ran, second.resumed) == (1, 2)
    rows = read_rows(tmp_path / "results.jsonl")
    assert sorted(r.task for r in rows) == ["level1/19_ReLU", "level2/12_Scale_Bias", "sigmoid"]


def test_torn_last_line_is_dropped_on_resume(tmp_path):
    config = BenchConfig(target=str(THIRDPARTY), workers=1, out=tmp_path, ops=["sigmoid"])
    run_bench(config, solver=None)
    with (tmp_path / "results.jsonl").open("a") as fh:
        fh.write('{"task": "level1/19_ReLU", "sta')          # a crash mid-write
    assert [r.task for r in read_rows(tmp_path / "results.jsonl")] == ["sigmoid"]
    run_bench(config.model_copy(update={"resume": True, "ops": ["sigmoid", "19_ReLU"]}), solver=None)
    assert sorted(r.task for r in read_rows(tmp_path / "results.jsonl")) == ["level1/19_ReLU", "sigmoid"]


def test_filters_by_level_and_ops():
    tasks, skipped = collect_tasks(str(THIRDPARTY), levels=[2])
    assert [t.key for t in tasks] == ["level2/12_Scale_Bias"] and skipped == []
    tasks, _ = collect_tasks(str(THIRDPARTY), ops=["ReLU"])          # the name without its number
    assert [t.key for t in tasks] == ["level1/19_ReLU"]
    tasks, _ = collect_tasks("npukernelbench", levels=[0])
    assert len(tasks) == 20 and all(t.level == 0 for t in tasks)


class _TwoAttempts:
    """A picklable solver with two attempts, the second correct."""

    name = "two-attempts"
    max_attempts = 2

    def solve(self, task, *, epoch, seed, job_key=None):
        def ev(status, speedup):
            return TaskEvaluation(task=task.key, status=status, executed=True, correct=status == "correct",
                                  speedup=speedup)
        return SolveResult(attempts=[Attempt(source="k0", evaluation=ev("incorrect", 3.0)),
                                     Attempt(source="k1", evaluation=ev("correct", 1.5))],
                           extra={"tokens": 42})


def test_one_row_per_attempt_and_one_final(tmp_path):
    rows = run_job(Job(path=str(THIRDPARTY / "kernelbench/level1/19_ReLU.py"), solver=_TwoAttempts()))
    assert [(r.attempt, r.final, r.status, r.source) for r in rows] == [
        (0, False, "incorrect", "k0"), (1, True, "correct", "k1")]
    assert rows[1].extra == {"tokens": 42} and rows[1].solver == "two-attempts"


def test_choose_best_prefers_fastest_correct():
    def att(correct, speedup):
        return Attempt(evaluation=TaskEvaluation(task="t", status="correct" if correct else "incorrect",
                                                 executed=True, correct=correct, speedup=speedup))
    assert choose_best([att(True, 1.2), att(False, 9.0), att(True, 2.0), att(True, 1.1)]) == 2
    assert choose_best([att(False, 9.0), att(False, 1.0)]) == 1


def test_local_pool_runs_the_same_jobs(tmp_path):
    # An empty kernel folder: every job loads its task in the worker and finds no kernel,
    # so the test measures the pool, not the simulator.
    solver = KernelDirSolver(kernels=tmp_path)
    jobs = [Job(path=str(THIRDPARTY / p), solver=solver) for p in
            ("kernelbench/level1/19_ReLU.py", "multikernelbench/activation/sigmoid.py",
             "multikernelbench/npu_fused/rotary_mul.py")]
    pool = LocalExecutor(2)
    try:
        pooled = sorted((r[0].task, r[0].status) for _, r in pool.map(run_job, jobs))
    finally:
        pool.close()
    inline = sorted((r[0].task, r[0].status) for _, r in InlineExecutor().map(run_job, jobs))
    assert pooled == inline == [("level1/19_ReLU", "no_kernel"), ("rotary_mul", "reference_unavailable"),
                                ("sigmoid", "no_kernel")]


def test_unknown_executor_is_refused():
    with pytest.raises(ValueError, match="unknown executor 'slurm'"):
        make_executor("slurm", 2)


def test_report_is_rebuilt_from_results(tmp_path):
    run_bench(BenchConfig(target=str(THIRDPARTY), workers=1, out=tmp_path), solver=None)
    first = write_report(tmp_path).read_text()
    (tmp_path / "report.md").unlink()
    assert write_report(tmp_path).read_text() == first
    assert "## Reference model" in first and "| rotary_mul | reference_unavailable: calls .npu()" in first
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["tasks"] == 6


def test_report_without_results_is_an_error(tmp_path):
    with pytest.raises(NoResults):
        write_report(tmp_path)


def test_kernel_folder_run_counts_missing_kernels(tmp_path):
    import shutil

    kernels = tmp_path / "kernels"
    kernels.mkdir()
    shutil.copy(FIXTURES / "kernels/relu_correct.py", kernels / "relu.py")
    shutil.copy(FIXTURES / "kernels/zeros.py", kernels / "tiny_scale.py")
    out = tmp_path / "run"
    run = run_bench(BenchConfig(target=str(FIXTURES / "tasks"), workers=1, out=out, cases=1),
                    KernelDirSolver(kernels=kernels, cases=1))
    status = {r.task: r.status for r in run.rows}
    assert status == {"relu": "correct", "tiny_scale": "incorrect", "row_sum_fp16": "no_kernel"}
    write_report(out)
    summary = json.loads((out / "summary.json").read_text())["suite"]
    assert (summary["tasks"], summary["executed"], summary["correct"]) == (3, 2, 1)
    report = (out / "report.md").read_text()
    assert "| relu | correct | 1/1 |" in report and "roofline_vs_reference.png" in report
    assert (out / "roofline_vs_reference.png").stat().st_size > 1000
    # The three times of both sides, per task and over the correct tasks (docs/evaluation.md)
    full = json.loads((out / "summary.json").read_text())
    relu = next(r for r in run.rows if r.task == "relu").evaluation
    (case,) = relu.cases
    # (geometric means of one case: the case's own times)
    assert full["times"]["relu"]["kernel"] == pytest.approx(case.times.model_dump())
    assert full["times"]["relu"]["torch_npu"] == pytest.approx(case.reference_times.model_dump())
    assert full["times_solved"]["tasks"] == 1
    assert full["times_solved"]["kernel"] == pytest.approx(case.times.model_dump())
    preset = load_preset("ascend910b2")
    for t in (case.times, case.reference_times):        # one launch each: fixed cost, then one dispatch
        assert t.device_us == pytest.approx(t.kernel_us + preset.launch.device_fixed_us, abs=1e-3)
        assert t.end_to_end_us == pytest.approx(t.device_us + preset.launch.host_dispatch_us, abs=1e-3)
    t = case.times
    assert f"| {t.kernel_us:.3g} / {t.device_us:.3g} / {t.end_to_end_us:.3g} |" in report


def test_resume_with_other_options_is_refused(tmp_path):
    from sage.bench.runner import ResumeMismatch

    config = BenchConfig(target=str(THIRDPARTY), workers=1, out=tmp_path, ops=["sigmoid"])
    run_bench(config, solver=None)
    with pytest.raises(ResumeMismatch, match="preset='ascend910b2'"):
        run_bench(config.model_copy(update={"resume": True, "preset": "ascend910b4"}), solver=None)


def _as_version_1(results: Path) -> None:
    """Rewrites results.jsonl as results schema 1 wrote it: rows without `schema_version`."""
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    for row in rows:
        del row["schema_version"]
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_rows_name_their_schema_and_resume_refuses_rows_of_another(tmp_path):
    from sage.bench.runner import RESULTS_SCHEMA, SchemaMismatch

    config = BenchConfig(target=str(THIRDPARTY), workers=1, out=tmp_path, ops=["sigmoid"])
    run_bench(config, solver=None)
    results = tmp_path / "results.jsonl"
    assert RESULTS_SCHEMA == 2
    assert [json.loads(line)["schema_version"] for line in results.read_text().splitlines()] == [2]
    _as_version_1(results)
    assert [r.schema_version for r in read_rows(results)] == [1]      # read back as what wrote them
    before = results.read_text()
    with pytest.raises(SchemaMismatch) as refused:
        run_bench(config.model_copy(update={"resume": True, "ops": ["sigmoid", "19_ReLU"]}), solver=None)
    message = str(refused.value)
    assert "\n" not in message
    assert "schema version 1" in message and "writes version 2" in message and "another --out" in message
    assert results.read_text() == before                  # nothing appended, nothing rewritten
    # a run of this version resumes as before
    fresh = tmp_path / "fresh"
    run_bench(config.model_copy(update={"out": fresh}), solver=None)
    again = run_bench(config.model_copy(update={"out": fresh, "resume": True}), solver=None)
    assert (again.ran, again.resumed) == (0, 1)


def test_rows_with_infinite_relative_errors_round_trip(tmp_path):
    import numpy as np

    from sage.bench.correctness import compare_array
    from sage.bench.evaluate import CaseResult
    from sage.bench.runner import ResultRow

    stats = compare_array(np.zeros(4, np.float32), np.ones(4, np.float32))
    row = ResultRow(task="t", status="incorrect", evaluation=TaskEvaluation(
        task="t", status="incorrect", executed=True, cases=[CaseResult(index=0, stats=[stats])]))
    line = row.model_dump_json()
    assert '"max_rel_error":"Infinity"' in line          # strict JSON, no bare Infinity
    (tmp_path / "results.jsonl").write_text(line + "\n")
    assert read_rows(tmp_path / "results.jsonl")[0].evaluation.cases[0].stats[0].max_rel_error == float("inf")


def test_a_reference_that_raises_on_every_case_is_a_reference_error_without_a_kernel(tmp_path):
    # public level2/24 draws cache positions in [0, 10000) for a cache of 128 rows: no kernel can
    # be correct, so the task leaves the metrics as it would with a kernel judged (evaluate_kernel)
    from tests.agent.compiler.conftest import write_task

    tasks = tmp_path / "tasks"
    tasks.mkdir()
    write_task(tasks / "always.py", "x, i", "x[i]", ["torch.randn(4, 3), torch.tensor([7])"] * 2)
    write_task(tasks / "sometimes.py", "x, i", "x[i]", ["torch.randn(4, 3), torch.tensor([7])",
                                                       "torch.randn(4, 3), torch.tensor([1])"])
    run = run_bench(BenchConfig(target=str(tasks), workers=1, out=tmp_path / "run"),
                    KernelDirSolver(kernels=tmp_path / "none"))
    rows = {r.task: r for r in run.rows}
    assert {t: r.status for t, r in rows.items()} == {"always": "reference_error", "sometimes": "no_kernel"}
    assert "the reference raises on every case: case 0" in rows["always"].evaluation.reason
    assert "IndexError" in rows["always"].evaluation.reason
