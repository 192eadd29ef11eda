"""--reference-only keeps rows small (per aten op, with call counts), splits a task's cases
over the workers into one row, and times large cases on sized inputs."""

import json

from sage.bench.reference_run import measure_reference
from sage.bench.row_size import ROW_BYTES
from sage.bench.runner import BenchConfig, read_rows, run_bench
from sage.bench.tasks import load_task

# A Python loop in forward: one aten call per turn, as nms's reference has thousands.
LOOP = '''
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        for _ in range(300):
            x = x + 1.0
        return torch.relu(x)


def get_input_groups():
    return [[torch.randn(64, 64)], [torch.randn(4096, 4096)], [torch.randn(8, 8)]]
'''
# nonzero's output shape depends on the values: it cannot run on meta tensors.
NONZERO = '''
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.nonzero(x > 0)


def get_input_groups():
    return [[torch.randn(2048, 1024)]]
'''


def _run(tmp_path, text: str, **config) -> list:
    (tmp_path / "tasks").mkdir(parents=True, exist_ok=True)
    (tmp_path / "tasks" / "task.py").write_text(text)
    out = tmp_path / "run"
    run_bench(BenchConfig(target=str(tmp_path / "tasks"), out=out, executor="inline", **config), None)
    return read_rows(out / "results.jsonl")


def test_the_breakdown_is_summed_per_aten_op_with_its_calls(tmp_path):
    (row,) = _run(tmp_path, LOOP, workers=1)
    assert row.status == "reference_ok" and [c.index for c in row.reference.cases] == [0, 1, 2]
    ops = {o["op"]: o for o in row.reference.cases[0].breakdown["ops"]}
    assert ops["add.Tensor"]["calls"] == 300 and ops["relu.default"]["calls"] == 1
    assert ops["add.Tensor"]["device_us"] > ops["relu.default"]["device_us"] > 0
    # the 64 MB case is timed on its sized inputs (no data made), the small ones on real ones
    assert [c.timed_on for c in row.reference.cases] == ["real", "meta", "real"]
    assert all(c.calls is None for c in row.reference.cases)
    line = (tmp_path / "run" / "results.jsonl").read_text().splitlines()[0]
    assert len(line) < ROW_BYTES / 10


def test_detail_goes_to_a_file_of_its_own(tmp_path):
    (row,) = _run(tmp_path, LOOP, workers=1, detail=True)
    detail = json.loads((tmp_path / "run" / row.extra["detail_file"]).read_text())
    assert len(detail["0"]) == 301 and detail["0"][0]["op"] == "add.Tensor"
    assert all(c.calls is None for c in row.reference.cases)


def test_the_cases_of_a_task_are_split_over_the_workers_into_one_row(tmp_path):
    one = _run(tmp_path / "a", LOOP, workers=1)[0].reference
    (row,) = _run(tmp_path / "b", LOOP, workers=2)
    assert row.extra["shards"] == 2 and [c.index for c in row.reference.cases] == [0, 1, 2]
    assert row.reference.total_us == one.total_us


def test_a_forward_that_needs_values_is_timed_on_real_inputs(tmp_path):
    path = tmp_path / "nonzero.py"
    path.write_text(NONZERO)
    ref = measure_reference(load_task(path, check_inputs=False), "ascend910b2", None)
    assert ref.status == "reference_ok" and ref.cases[0].timed_on == "real" and ref.cases[0].total_us > 0


def test_no_row_is_written_above_the_limit(tmp_path):
    from sage.bench.evaluate import CaseResult, TaskEvaluation
    from sage.bench.row_size import fit_row, row_bytes
    from sage.bench.runner import ResultRow

    chatty = [CaseResult(index=i, printed="x" * 64_000) for i in range(40)]      # 2.5 MB of printf
    row = ResultRow(task="level1/chatty", status="correct",
                    evaluation=TaskEvaluation(task="level1/chatty", status="correct", cases=chatty))
    fit_row(row, tmp_path)
    assert row_bytes(row) <= ROW_BYTES and row.extra["trimmed"]["shed"] == ["printed"]
    assert row.evaluation.cases[0].printed.startswith("x" * 2000)
