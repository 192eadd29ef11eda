"""The memory ablation: `sage bench ... --compare`, its metrics and its report."""

import json
import math
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sage.bench.ablation import (ablation_level_metrics, ablation_metrics, load_mode_rows, mode_dirs,
                                 run_memory_url, write_ablation_report)
from sage.bench.evaluate import TaskEvaluation
from sage.bench.runner import BenchConfig, ResultRow, read_rows, task_order
from sage.cli import app

OPS = Path(__file__).parents[2] / "sage" / "bench" / "npukernelbench" / "ops"
runner = CliRunner()


@pytest.fixture(autouse=True)
def _private_reference_cache(monkeypatch, tmp_path_factory):
    # The reference model caches timings on disk; tests keep theirs out of ~/.sage.
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "reference-cache"))


def row(task, epoch, status, *, level=1, speedup=None, roofline=None, final=True, attempt=0):
    correct = status == "correct"
    evaluation = TaskEvaluation(task=task, level=level, status=status, executed=status in ("correct", "incorrect"),
                                correct=correct, speedup=speedup, roofline_fraction=roofline)
    return ResultRow(task=task, level=level, epoch=epoch, status=status, evaluation=evaluation, final=final,
                     attempt=attempt, solver="agent:offline:x")


def write_rows(folder: Path, rows):
    folder.mkdir(parents=True)
    (folder / "results.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in rows))


@pytest.fixture
def hand_made(tmp_path):
    write_rows(tmp_path / "none", [
        row("a", 0, "correct", speedup=2.0, roofline=0.5),
        row("b", 0, "incorrect"),
        row("c", 0, "no_kernel", level=2),
        row("a", 1, "correct", speedup=0.5, roofline=0.25),
        # A faster attempt that is not the final one must not count.
        row("b", 1, "correct", speedup=100.0, roofline=1.0, final=False, attempt=0),
        row("b", 1, "correct", speedup=2.0, roofline=0.75, attempt=1),
        row("c", 1, "reference_unavailable", level=2),    # not counted
    ])
    write_rows(tmp_path / "sage", [
        row("a", 0, "correct", speedup=4.0, roofline=1.0),
        row("b", 0, "correct", speedup=1.0, roofline=0.5),   # solved, not faster
        row("c", 0, "incorrect", level=2),
    ])
    (tmp_path / "not_a_mode").mkdir()                      # no results.jsonl: ignored
    return tmp_path


def test_ablation_metrics_per_mode_and_epoch(hand_made):
    rows = load_mode_rows(hand_made)
    assert list(mode_dirs(hand_made)) == ["none", "sage"]
    metrics = ablation_metrics(rows)
    assert {m: list(e) for m, e in metrics.items()} == {"none": [0, 1], "sage": [0]}
    none0, none1, sage0 = metrics["none"][0], metrics["none"][1], metrics["sage"][0]
    assert (none0.tasks, none0.executed, none0.correct, none0.fast_1_count) == (3, 2, 1, 1)
    assert none0.geomean_speedup == 2.0 and none0.mean_roofline_fraction == 0.5
    assert (none1.tasks, none1.skipped, none1.execution_rate, none1.correctness_rate, none1.fast_1) == \
        (2, 1, 1.0, 1.0, 0.5)
    assert math.isclose(none1.geomean_speedup, 1.0) and none1.mean_roofline_fraction == 0.5
    assert (sage0.execution_rate, sage0.fast_1_count) == (1.0, 1)
    assert math.isclose(sage0.correctness_rate, 2 / 3) and sage0.geomean_speedup == 2.0
    assert sage0.mean_roofline_fraction == 0.75
    levels = ablation_level_metrics(rows)
    assert list(levels["none"][1]) == ["level1", "level2"]
    assert (levels["none"][1]["level2"].tasks, levels["none"][1]["level2"].skipped) == (0, 1)
    assert levels["sage"][0]["level2"].executed == 1 and levels["sage"][0]["level2"].correct == 0


def test_ablation_report_tables_and_plot(hand_made):
    text = write_ablation_report(hand_made).read_text()
    assert "- modes: none, sage" in text
    assert "| none | 1 | 3 | 66.7% | 33.3% | 33.3% | 2.000x | 50.0% |" in text
    assert "| none | 2 | 2 | 100.0% | 100.0% | 50.0% | 1.000x | 50.0% |" in text
    assert "| sage | 1 | 3 | 100.0% | 66.7% | 33.3% | 2.000x | 75.0% |" in text
    assert "| none | 2 | level1 | 2 | 100.0% | 100.0% | 50.0% | 1.000x | 50.0% |" in text
    assert "| sage | 2 |" not in text
    assert (hand_made / "learning_curve.png").read_bytes()[:4] == b"\x89PNG"


def test_task_order_is_fixed_by_the_seed():
    paths = [f"t{i}.py" for i in range(12)]
    assert task_order(paths, 3) == task_order(list(reversed(paths)), 3)
    assert sorted(task_order(paths, 3)) == sorted(paths)
    assert task_order(paths, 3) != task_order(paths, 4)


def test_a_fresh_run_starts_with_an_empty_memory_a_resumed_one_keeps_it(tmp_path):
    db = tmp_path / "memory.db"
    db.write_bytes(b"learned before")
    assert run_memory_url(BenchConfig(out=tmp_path, resume=True)) == f"sqlite:///{db.resolve()}"
    assert db.read_bytes() == b"learned before"
    assert run_memory_url(BenchConfig(out=tmp_path)) == f"sqlite:///{db.resolve()}"
    assert not db.exists()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.mark.slow
def test_compare_runs_each_mode_and_rebuilds_the_report(tmp_path):
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    for name in ("relu", "sigmoid"):
        shutil.copy(OPS / f"{name}.py", tasks / f"{name}.py")
    out = tmp_path / "run"
    args = ["bench", tasks, "--compare", "none,sage", "--epochs", 2, "--cases", 1, "--iterations", 1,
            "--workers", 1, "--seed", 5, "--out", out, "--json"]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert list(summary["modes"]) == ["none", "sage"]
    assert all(list(m["epochs"]) == ["1", "2"] and m["ran"] == 4 for m in summary["modes"].values())

    orders = {}
    for mode in ("none", "sage"):
        rows = read_rows(out / mode / "results.jsonl")
        assert {r.solver for r in rows} == {f"agent:offline:{mode}"}
        assert {(r.task, r.epoch) for r in rows if r.final} == {(t, e) for t in ("relu", "sigmoid") for e in (0, 1)}
        assert (out / mode / "memory.db").exists() and (out / mode / "report.md").exists()
        orders[mode] = [r.task for r in rows if r.final]
    assert orders["none"] == orders["sage"]                  # the same seeded order in each mode

    report = (out / "report.md").read_text()
    for mode in ("none", "sage"):
        for epoch in (1, 2):
            assert f"| {mode} | {epoch} | 2 |" in report
    assert "uniform" not in report.split("## Memory ablation")[1]
    assert (out / "learning_curve.png").exists()

    (out / "report.md").unlink()
    (out / "learning_curve.png").unlink()
    rebuilt = invoke("bench", "report", out)
    assert rebuilt.exit_code == 0, rebuilt.output
    assert (out / "report.md").read_text() == report and (out / "learning_curve.png").exists()

    again = invoke(*args, "--resume")                        # every (task, epoch) is done in both modes
    assert again.exit_code == 0, again.output
    resumed = json.loads(again.stdout.strip().splitlines()[-1])["modes"]
    assert all((m["ran"], m["resumed"]) == (0, 4) for m in resumed.values())
