"""The honest kernels the integrity figures are measured on, each on its task's cases.

- `examples`: the kernels of examples/kernels/ on their tasks' cases;
- `library`: the library's ready kernel file (`sage.bench.reference.kernel_files`) of every
  suite task and plain op that has one;
- `agent`: the offline agent's first kernel for every suite task (what the bench evaluates
  first), made for the cases it runs on. Making them takes minutes (the agent times its
  candidates), so they are kept in a folder (default runs/lockstep_kernels, shared with
  benchmarks/lockstep_equivalence.py) and reused.

Used by benchmarks/trace_caps.py (records, bytes, blocks of honest runs) and
benchmarks/tripwire_margin.py (their physical floor against their device time).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "kernels"
KEEP = ROOT / "runs" / "lockstep_kernels"
SOURCES = ("examples", "library", "agent")
# example kernel -> its task file
EXAMPLE_TASKS = {"add.py": "add_task.py", "softmax.py": "softmax_task.py", "layernorm.py": "layernorm_task.py",
                 "matmul.py": "matmul_task.py", "matmul_vector.py": "matmul_task.py",
                 "matmul_bias_gelu_mix.py": "matmul_bias_gelu_task.py"}


@dataclass
class HonestRun:
    source: str               # examples | library | agent
    label: str                # "level1/21_scatter case 0", "examples/add.py case 2"
    kernel: str               # the kernel file's text
    task: Any                 # sage.bench.tasks.Task
    model: Any                # the task's reference Model
    index: int                # the case's index
    case: list                # its torch inputs
    args: list                # the kernel's arguments (numpy)
    kwargs: dict              # the Model's parameters (numpy)


def honest_runs(sources: tuple[str, ...] = SOURCES, cases: int | None = None, level: int | None = None,
                keep: Path = KEEP) -> Iterator[HonestRun]:
    """Every honest run of `sources`, one case at a time (`cases`: the first that many of each
    task, None for all); `level`: only suite tasks of that level (the examples have none)."""
    from sage.bench.tasks import load_task, plain_op_files, suite_files

    if "examples" in sources and level is None:
        for kernel, task_file in EXAMPLE_TASKS.items():
            yield from _task_runs("examples", f"examples/{kernel}", (EXAMPLES / kernel).read_text(),
                                  load_task(EXAMPLES / task_file), cases)
    suite = [p for p in suite_files() if level is None or _level(p) == level]
    for source in ("library", "agent"):
        if source not in sources:
            continue
        paths = suite + (plain_op_files() if source == "library" and level is None else [])
        for path in paths:
            task = load_task(path)
            print(f"\r{source}: {task.key[:60]:60}", end="", file=sys.stderr, flush=True)
            kernel = _kernel(source, task, cases, keep)
            if kernel is not None:
                yield from _task_runs(source, task.key, kernel, task, cases)
    print(file=sys.stderr)


def _level(path: Path) -> int | None:
    from sage.bench.tasks import level_of

    return level_of(path)


def _task_runs(source: str, name: str, kernel: str, task, cases: int | None) -> Iterator[HonestRun]:
    from sage.bench.evaluate import select_cases
    from sage.bench.tasks import kernel_args, parameter_kwargs

    model, selected = select_cases(task, cases)
    kwargs = parameter_kwargs(model)
    for index, case in selected:
        yield HonestRun(source, f"{name} case {index}", kernel, task, model, index, case, kernel_args(case), kwargs)


def _kernel(source: str, task, cases: int | None, keep: Path) -> str | None:
    """The library's or the agent's kernel for `task` (None where there is none), kept in `keep`."""
    from sage.bench.reference.kernel_files import library_kernel_file

    kept = keep / f"{source}_{cases}_{task.key.replace('/', '__')}.py"
    if kept.exists():
        return kept.read_text() or None
    text = library_kernel_file(task) if source == "library" else _agent_kernel(task, cases)
    keep.mkdir(parents=True, exist_ok=True)
    kept.write_text(text or "")  # (empty: no kernel for this task)
    return text


def _agent_kernel(task, cases: int | None) -> str | None:
    from sage.agent.compiler.build import Unsupported
    from sage.agent.offline.agent import CompilerAgent
    from sage.kernels import target_for

    try:
        return CompilerAgent(task, target_for("ascend910b2"), "ascend910b2", evaluated=cases).first([], [])[0]
    except Unsupported:
        return None
