"""The ready library kernel folder (sage/bench/library/kernels): up to date with the
library, and correct on the tasks it covers."""

from __future__ import annotations

import pytest

from sage.bench.evaluate import evaluate_kernel
from sage.bench.reference.kernel_files import DEFAULT_DIR, library_kernel_file
from sage.bench.tasks import load_task, resolve_op

SAMPLE = ["relu", "softmax", "level0/05_mish", "level1/10_layer_norm"]


@pytest.mark.parametrize("name", SAMPLE)
def test_committed_kernel_is_current_and_correct(name, tmp_path, monkeypatch):
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path))
    task = load_task(resolve_op(name))
    text = library_kernel_file(task)
    assert text is not None
    committed = DEFAULT_DIR / f"{task.key}.py"
    assert committed.read_text(encoding="utf-8") == text, "regenerate: python -m sage.bench.reference.kernel_files"
    evaluation = evaluate_kernel(task, text, cases=[0])
    assert evaluation.correct, evaluation.cases[0].reason or evaluation.cases[0].error
    # the same kernel the reference model times: speedup about 1 (extrapolation error only)
    assert evaluation.cases[0].speedup == pytest.approx(1.0, rel=0.03)


def test_tasks_without_a_single_library_operator_get_no_file():
    assert library_kernel_file(load_task(resolve_op("level1/08_sort"))) is None          # no library sort
    assert library_kernel_file(load_task(resolve_op("level0/12_swish"))) is None         # three eager ops


@pytest.mark.slow
def test_every_committed_kernel_is_correct(tmp_path, monkeypatch):
    """Case 0 of every covered task (the sample above checks that the files are current)."""
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path))
    files = sorted(DEFAULT_DIR.rglob("*.py"))
    assert len(files) >= 25
    for path in files:
        key = str(path.relative_to(DEFAULT_DIR).with_suffix(""))
        task = load_task(resolve_op(key))
        evaluation = evaluate_kernel(task, path.read_text(encoding="utf-8"), cases=[0])
        assert evaluation.correct, (key, [c.reason for c in evaluation.cases])
