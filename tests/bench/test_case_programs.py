"""benchmarks/case_programs.py: one hash per task of what its cases launch, so that a change
meant to leave the kernels alone can be checked on the whole suite."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _module():
    spec = importlib.util.spec_from_file_location("case_programs", ROOT / "benchmarks" / "case_programs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_hash_follows_the_launches_and_only_them(tmp_path, monkeypatch):
    from sage.agent.compiler.generic import casecode
    from tests.agent.compiler.conftest import write_task

    cp = _module()
    path = write_task(tmp_path / "t.py", "x", "torch.relu(x) * 2", ["torch.randn(64, 256)", "torch.randn(3, 5)"])
    first = cp.task_hash(path)
    assert first == cp.task_hash(path) and len(first) == 16
    # another kernel text for the same cases is another hash
    real = casecode.case_code

    def renamed(*args, **kwargs):
        code = real(*args, **kwargs)
        for launch in code.launches:
            launch.kernel = launch.kernel + "\n# changed"
        return code

    import sage.agent.compiler.compiler as compiler

    monkeypatch.setattr(compiler, "case_code", renamed)      # task_hash imports it when called
    assert cp.task_hash(path) != first


def test_a_task_the_compiler_cannot_take_is_its_reason(tmp_path):
    from tests.agent.compiler.conftest import write_task

    path = write_task(tmp_path / "t.py", "x", "torch.nonzero(x)", ["torch.randn(8)"])
    assert _module().task_hash(path).startswith("unsupported: ")


def test_compare_lists_tasks_that_differ_or_are_missing():
    cp = _module()
    assert cp.compare({"a": "1", "b": "2"}, {"a": "1", "b": "3", "c": "4"}) == ["b", "c"]
    assert cp.compare({"a": "1"}, {"a": "1"}) == []
