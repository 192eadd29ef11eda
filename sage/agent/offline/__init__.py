"""The offline synthesizer: library kernel templates over schedule knobs, no LLM needed."""

from __future__ import annotations

from typing import Any


def plan_problem(task: Any) -> str | None:
    """None when the offline synthesizer has a kernel plan for every case of `task`
    (a sage.bench.tasks.Task), else why not, in one line. It traces the reference on every
    case, about half a second a task (`sage ops list` caches the answers per task file)."""
    from sage.agent.offline.analysis import NoTemplate
    from sage.agent.offline.synthesizer import analyse

    try:
        analyse(task)
    except NoTemplate as exc:
        return str(exc)
    return None
