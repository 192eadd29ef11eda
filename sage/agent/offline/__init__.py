"""The offline agent: the compiler (sage.agent.compiler) with a schedule search, memory's
knob hints as search starts, and refinement from the evaluation's feedback; no LLM needed."""

from __future__ import annotations

from typing import Any


def plan_problem(task: Any) -> str | None:
    """None when the compiler lowers every case of `task` (a sage.bench.tasks.Task) to
    kernels, else which op cannot lower and why, in one line. It traces the reference on
    every case (`sage ops list` caches the answers per task file)."""
    from sage.agent.compiler.build import Unsupported
    from sage.agent.compiler.compiler import compile_task
    from sage.kernels import target_for

    try:
        compile_task(task, target_for())
    except Unsupported as exc:
        return f"cannot compile: {exc}"
    return None
