"""measure_reference runs each case's forward once (traced by the time model); the eager
forward runs only to classify a failure, with the outcomes running it first gave."""

import pytest

from sage.bench import reference_run
from sage.bench.evaluate import ReferenceFailure
from sage.bench.reference_run import measure_reference
from sage.bench.tasks import load_task

COUNTING_TASK = '''
import torch

CALLS = []


class Model(torch.nn.Module):
    def forward(self, x):
        if x.is_meta:                # the load's probe for random draws (no data, no compute)
            return torch.relu(x)
        CALLS.append(x.shape[0])
        if x.shape[0] == 3:
            raise NotImplementedError("no three-row inputs here")
        return torch.relu(x)


def get_input_groups():
    return [[torch.randn(4, 8)], [torch.randn(3, 8)], [torch.randn(2, 8)]]
'''


@pytest.fixture
def task(tmp_path, monkeypatch):
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "counting_relu.py"
    path.write_text(COUNTING_TASK)
    return load_task(path, check_inputs=False)


def test_each_working_case_runs_its_forward_once_and_a_failing_one_costs_only_itself(task):
    ref = measure_reference(task, "ascend910b2", None)
    assert ref.status == "reference_ok"
    assert [c.reference_error is None for c in ref.cases] == [True, False, True]
    assert ref.cases[1].reference_error.startswith("case 1 (float32[3, 8]): reference forward raised "
                                                   "NotImplementedError")
    # the working cases once each (traced); the failing one traced, then run eagerly to classify it
    assert len(task.module.CALLS) == 4


def test_a_time_model_failure_on_a_working_forward_is_the_tasks_error(task, monkeypatch):
    def broken(*args, **kwargs):
        raise ReferenceFailure("reference time model raised KeyError: 'x'")

    monkeypatch.setattr(reference_run, "reference_time_for", broken)
    ref = measure_reference(task, "ascend910b2", [0])
    assert ref.status == "reference_error" and ref.reason == "reference time model raised KeyError: 'x'"
