"""The ready library kernel files (python -m sage.bench.reference.kernel_files DIR): correct
on the tasks they cover, and usable as a kernel folder for the bench runner."""

from __future__ import annotations

import pytest
import torch

from sage.bench.evaluate import evaluate_kernel
from sage.bench.reference import reference_time
from sage.bench.reference.kernel_files import library_kernel_file, write_library_kernels
from sage.bench.tasks import load_task, resolve_op

SAMPLE = ["relu", "softmax", "level0/05_mish", "level1/10_layer_norm"]


@pytest.mark.parametrize("name", SAMPLE)
def test_library_kernel_file_is_correct(name, tmp_path, monkeypatch):
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path))
    task = load_task(resolve_op(name))
    text = library_kernel_file(task)
    assert text is not None
    evaluation = evaluate_kernel(task, text, cases=[0])
    assert evaluation.correct, evaluation.cases[0].reason or evaluation.cases[0].error
    # the same kernels the expert baseline times, by the same path: device time equal
    expert = reference_time(task, task.cases()[0], "ascend910b2", expert=True)
    assert evaluation.cases[0].times.device_us == pytest.approx(expert.expert_device_us, rel=0.005)
    # essential-work bound over device work: a fraction, never above 1
    assert 0 < evaluation.cases[0].roofline_fraction <= 1


def test_tasks_without_a_single_library_operator_get_no_file():
    assert library_kernel_file(load_task(resolve_op("level1/08_sort"))) is None          # no library sort
    assert library_kernel_file(load_task(resolve_op("level0/12_swish"))) is None         # four eager ops


@pytest.mark.slow
def test_every_written_kernel_file_is_correct(tmp_path, monkeypatch):
    """Case 0 of every covered task, from the folder the runner's --kernels would read."""
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "kernels"
    files = sorted(write_library_kernels(out))
    assert len(files) >= 25
    assert files == sorted(out.rglob("*.py"))
    for path in files:
        key = str(path.relative_to(out).with_suffix(""))
        task = load_task(resolve_op(key))
        evaluation = evaluate_kernel(task, path.read_text(encoding="utf-8"), cases=[0])
        assert evaluation.correct, (key, [c.reason for c in evaluation.cases])


def test_written_for_the_given_levels_only_and_torch_threads_restored(tmp_path):
    threads = torch.get_num_threads()
    files = write_library_kernels(tmp_path, levels=[0])
    assert files and all(p.parent == tmp_path / "level0" for p in files)
    assert tmp_path / "level0" / "10_relu.py" in files
    assert torch.get_num_threads() == threads


def test_a_task_whose_inputs_cannot_be_made_gets_no_file(tmp_path):
    broken = tmp_path / "tasks" / "broken_relu.py"
    broken.parent.mkdir()
    broken.write_text("import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
                      "        return torch.relu(x)\n\ndef get_inputs():\n    raise RuntimeError('no inputs')\n")
    tasks = [load_task(broken, check_inputs=False), load_task(resolve_op("level0/10_relu"))]
    files = write_library_kernels(tmp_path / "out", tasks=tasks)
    assert [p.name for p in files] == ["10_relu.py"]
