"""Case inputs are a function of (seed, case index): a failing row is replayed with
`--case K --seed S`, and every row records its seed, preset and sage version."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from sage import __version__
from sage.bench.runner import BenchConfig, KernelDirSolver, read_rows, run_bench
from sage.bench.tasks import load_task
from sage.cli import app

FIXTURES = Path(__file__).parents[1] / "fixtures"
RELU_TASK = FIXTURES / "tasks" / "relu.py"
# |x| instead of relu(x): wrong exactly where x < 0, so its errors depend on the inputs.
ABS_FOR_RELU = (FIXTURES / "kernels" / "relu_correct.py").read_text().replace("Relu(zl", "Abs(zl")

NUMPY_TASK = '''
import numpy as np
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x * 2


def get_input_groups():
    return [[torch.from_numpy(np.random.rand(8, 16).astype(np.float32))] for _ in range(2)]
'''


@pytest.fixture(autouse=True)
def _private_reference_cache(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "reference-cache"))


def _equal(a: list, b: list) -> bool:
    return all(torch.equal(x, y) for ca, cb in zip(a, b) for x, y in zip(ca, cb))


@pytest.mark.parametrize("source", ["torch", "numpy"])
def test_the_same_seed_gives_the_same_cases(tmp_path, source):
    path = RELU_TASK
    if source == "numpy":
        path = tmp_path / "np_task.py"
        path.write_text(NUMPY_TASK)
    task = load_task(path)
    first = task.cases()
    torch.rand(5), np.random.rand(5)                # whatever the caller's generators did meanwhile
    assert _equal(first, task.cases())
    task.seed = 1
    other = task.cases()
    assert not _equal(first, other)
    task.seed = 0
    assert _equal(first, task.cases())


def test_the_callers_generators_are_left_alone():
    task = load_task(RELU_TASK)
    torch.manual_seed(123)
    np.random.seed(123)
    expected_torch, expected_np = torch.rand(3), np.random.rand(3)
    torch.manual_seed(123)
    np.random.seed(123)
    task.cases()
    assert torch.equal(torch.rand(3), expected_torch) and np.array_equal(np.random.rand(3), expected_np)


def test_rows_record_seed_preset_and_version_and_replay_with_npu_run(tmp_path):
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "relu.py").write_text(ABS_FOR_RELU)
    config = BenchConfig(target=str(RELU_TASK), out=tmp_path / "run", seed=7, cases=[1], executor="inline",
                         preset="ascend910b2")
    run_bench(config, KernelDirSolver(kernels=kernels, cases=[1]))
    (row,) = read_rows(tmp_path / "run" / "results.jsonl")
    assert (row.seed, row.preset, row.sage_version) == (7, "ascend910b2", __version__)
    assert json.loads((tmp_path / "run" / "run.json").read_text())["sage_version"] == __version__
    (case,) = row.evaluation.cases
    assert case.index == 1 and not case.correct
    bad = sum(s.mismatches for s in case.stats)
    assert bad > 0

    def replay(seed: int) -> dict:
        result = CliRunner().invoke(app, ["npu", "run", str(kernels / "relu.py"), "--task", str(RELU_TASK),
                                          "--case", "1", "--seed", str(seed), "--json"])
        assert result.exit_code == 1, result.output
        return json.loads(result.stdout)

    again = replay(7)
    assert again["seed"] == 7 and again["sage_version"] == __version__ and again["preset"] == "ascend910b2"
    assert sum(s["mismatches"] for s in again["cases"][0]["stats"]) == bad
    assert again["cases"][0]["stats"] == [s.model_dump(mode="json") for s in case.stats]
    other = replay(8)
    assert other["cases"][0]["stats"] != again["cases"][0]["stats"]


def test_bench_case_and_seed_options(tmp_path):
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "relu.py").write_text(ABS_FOR_RELU)
    result = CliRunner().invoke(app, ["bench", str(RELU_TASK), "--kernels", str(kernels), "--case", "2",
                                      "--seed", "5", "--workers", "1", "--out", str(tmp_path / "run"), "--json"])
    assert result.exit_code == 0, result.output
    (row,) = read_rows(tmp_path / "run" / "results.jsonl")
    assert row.seed == 5 and [c.index for c in row.evaluation.cases] == [2]
    both = CliRunner().invoke(app, ["bench", str(RELU_TASK), "--case", "1", "--cases", "2"])
    assert both.exit_code == 2 and "not both" in both.output


COUNTING_TASK = '''
import torch

MADE = []


class Model(torch.nn.Module):
    def forward(self, x):
        return x * 2


def get_input_groups():
    MADE.append(1)
    return [[torch.randn(8, 16)] for _ in range(2)]
'''


def test_a_checked_load_hands_its_cases_to_the_first_call_only(tmp_path):
    path = tmp_path / "counting_task.py"
    path.write_text(COUNTING_TASK)
    task = load_task(path, seed=3)
    # The task code runs twice at load: once sized (large tensors on the meta device,
    # sage.bench.input_size), once to make the cases the check looks at.
    assert len(task.module.MADE) == 2                # sized, then the check made them
    first = task.cases()
    assert len(task.module.MADE) == 2                # ... and the first call got those
    again = task.cases()
    assert len(task.module.MADE) == 3                # later calls make fresh ones (the size is known)
    assert _equal(first, again) and first[0][0] is not again[0][0]
    unchecked = load_task(path, check_inputs=False)
    unchecked.seed = 3
    assert _equal(first, unchecked.cases())          # the handed-over cases are the seed's


def test_handed_over_cases_follow_a_changed_seed(tmp_path):
    path = tmp_path / "counting_task.py"
    path.write_text(COUNTING_TASK)
    task = load_task(path)                           # checked with seed 0
    task.seed = 1
    with_seed_1 = task.cases()
    assert len(task.module.MADE) == 4                # seed 1's cases sized and made: seed 0's were not used
    task.seed = 0
    assert not _equal(with_seed_1, task.cases())
