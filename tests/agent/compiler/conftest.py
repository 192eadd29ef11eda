"""Small graphs for the compiler: a task file per forward, its kernel file compiled with the
default schedules and run in the sandbox on inputs whose results are worked out by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

TASK = '''
import numpy as np
import torch
DESCRIPTION = "a small graph"
TAGS = ["test"]
class Model(torch.nn.Module):
    def forward(self, {args}):
        return {body}
def get_input_groups():
    return [{groups}]
def get_inputs():
    return get_input_groups()[0]
def get_init_inputs():
    return []
'''


def write_task(path: Path, args: str, body: str, cases: list[str]) -> Path:
    """A task file at `path` whose forward(args) returns `body`, with one input group per
    entry of `cases` (each the Python text of the group's arguments)."""
    path.write_text(TASK.format(args=args, body=body, groups=", ".join(f"[{c}]" for c in cases)))
    return path


@pytest.fixture
def task_file(tmp_path: Path):
    """task_file(args, body, cases) -> the loaded task (see write_task)."""
    from sage.bench.tasks import load_task

    def make(args: str, body: str, cases: list[str]):
        return load_task(write_task(tmp_path / f"t{len(list(tmp_path.glob('t*.py')))}.py", args, body, cases))

    return make


@pytest.fixture
def compile_graph(tmp_path: Path):
    """compile_graph(args, body, inputs) -> (compiled task, run(arrays) -> outputs)."""
    from sage.agent.compiler.compiler import compile_cases, trace_cases
    from sage.bench.tasks import load_task
    from sage.kernels import target_for
    from sage.npu.sandbox import run_sandboxed

    def make(args: str, body: str, inputs: str):
        path = tmp_path / f"g{len(list(tmp_path.glob('g*.py')))}.py"
        task = load_task(write_task(path, args, body, [inputs]))
        compiled = compile_cases(trace_cases(task), None, target_for("ascend910b2"), "test")

        def run(*arrays: np.ndarray) -> list[np.ndarray]:
            result = run_sandboxed(compiled.source, list(arrays))
            assert result.error is None, f"{result.error.type}: {result.error.message}"
            assert result.outputs is not None
            return result.outputs

        return compiled, run

    return make
