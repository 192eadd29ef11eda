"""Which tasks the offline synthesizer has a plan for, as `sage ops list` shows it.

Deciding traces and compiles a task on every case (0.1 to 15 s a task, about a minute for
the whole suite with 2 workers), so it is done only when asked (`sage ops list --plans`),
and the answers are kept in the cache folder (~/.sage/cache, or SAGE_CACHE_DIR), keyed by
the task file and its case file's content and by the code of the synthesizer and the op
layer: a changed task or a changed synthesizer is asked again. A plain `sage ops list`
shows what the cache knows (`cached_plans`) and never waits for the compiler. The
uncached ones are decided in worker processes, so a task whose reference hangs or crashes
costs only its own answer.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

PLANS_FILE = "offline_plans.json"
DECIDE_TIMEOUT_S = 120.0
_CODE_DIRS = ("agent/offline", "agent/compiler", "kernels")


def decide(path: str) -> str | None:
    """None (a plan for every case) or why not; runs in a worker process."""
    from sage.agent.offline import plan_problem
    from sage.bench.tasks import ReferenceUnavailable, TaskLoadError, load_task

    try:
        task = load_task(Path(path), check_inputs=False)
    except (TaskLoadError, ReferenceUnavailable) as exc:
        return f"the task does not load: {exc}"
    return plan_problem(task)


def code_fingerprint() -> str:
    import sage

    root = Path(sage.__file__).parent
    digest = hashlib.sha256(sage.__version__.encode())
    for folder in _CODE_DIRS:
        for f in sorted((root / folder).rglob("*.py")):
            digest.update(f.relative_to(root).as_posix().encode() + f.read_bytes())
    return digest.hexdigest()[:16]


def task_fingerprint(path: Path, code: str) -> str:
    digest = hashlib.sha256(code.encode() + str(path.resolve()).encode() + path.read_bytes())
    case_file = path.with_suffix(".json")
    if case_file.is_file():
        digest.update(case_file.read_bytes())
    return digest.hexdigest()


def cached_plans(paths: list[Path], cache: Path) -> dict[Path, str | None | Undecided]:
    """Per task file: what the cache knows (None: a plan; a str: why not), else `UNDECIDED`."""
    code = code_fingerprint()
    known = _read(cache)
    answers: dict[Path, str | None | Undecided] = {}
    for p in paths:
        entry = known.get(task_fingerprint(p, code))
        answers[p] = entry["reason"] if isinstance(entry, dict) and "reason" in entry else UNDECIDED
    return answers


class Undecided:
    """Not decided yet (nothing in the cache for this task and this code)."""

    def __repr__(self) -> str:
        return "UNDECIDED"


UNDECIDED = Undecided()


def offline_plans(paths: list[Path], cache: Path, *, workers: int = 2,
                  on_progress: Callable[[int, int], None] | None = None) -> dict[Path, str | None]:
    """Per task file: None (the offline synthesizer has a plan) or the reason it has none."""
    from sage.bench.executors import TaskCrash, make_executor

    code = code_fingerprint()
    keys = {p: task_fingerprint(p, code) for p in paths}
    known = _read(cache)
    missing = [p for p in paths if keys[p] not in known]
    if missing:
        executor = make_executor("local", workers)
        try:
            for done, (path, outcome) in enumerate(
                    executor.map(decide, [str(p) for p in missing], timeout_s=DECIDE_TIMEOUT_S), start=1):
                reason = f"deciding failed: {outcome.reason}" if isinstance(outcome, TaskCrash) else outcome
                known[keys[Path(path)]] = {"plan": reason is None, "reason": reason}
                if on_progress:
                    on_progress(done, len(missing))
        finally:
            executor.close()
        _write(cache, known)
    return {p: known[keys[p]]["reason"] for p in paths}


def _read(cache: Path) -> dict:
    try:
        data = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}   # no cache yet, or a corrupt one: only lost work
    return data if isinstance(data, dict) else {}


def _write(cache: Path, entries: dict) -> None:
    tmp = cache.with_name(f".{cache.name}.{os.getpid()}")
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(entries), encoding="utf-8")
        os.replace(tmp, cache)
    except OSError:
        tmp.unlink(missing_ok=True)   # an unwritable cache costs the next run the time again, nothing else
