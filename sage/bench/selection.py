"""Which task files a run covers, in which order, what each job is called and how long it may take.

Task files are found by their paths alone, never imported here: task code runs only in
the workers, where a broken or hanging file costs only its own job.
"""

from __future__ import annotations

import hashlib
import random
import re
from pathlib import Path
from typing import TYPE_CHECKING

from sage.bench.tasks import TaskLoadError, level_of, load_tasks, suite_files, task_files

if TYPE_CHECKING:
    from sage.bench.tasks import Skipped, Task

# The per-task deadline unless the run sets one. It is there to stop hangs, not slow
# kernels, so it is generous and grows with the work (cases x attempts): a case takes
# seconds in the simulator, and the sandbox stops one kernel run after 180 s wall time.
TIMEOUT_BASE_S = 300.0
TIMEOUT_PER_CASE_S = 60.0
ASSUMED_CASES = 8          # without --cases (the suite's tasks have 3-4 cases)
JOB_KEY_CHARS = 200        # a job key fits the memory's episode key column (300)


def select_task_files(target: str, levels: list[int] | None = None,
                      ops: list[str] | None = None) -> list[Path]:
    """The task files of the suite ("npukernelbench") or of a path, filtered by level and name."""
    if target == "npukernelbench":
        files = suite_files()
    else:
        path = Path(target)
        if path.is_file():
            files = [path]
        elif path.is_dir():
            files = task_files(path)
        else:
            raise TaskLoadError(path, "no such file or folder (use 'npukernelbench' for the suite)")
    files = [f.resolve() for f in files]
    if levels is not None:
        files = [f for f in files if level_of(f) in levels]
    if ops:
        wanted = set(ops)
        files = [f for f in files if wanted & {f.stem, task_key(f), re.sub(r"^\d+_", "", f.stem)}]
    return sorted(files, key=lambda f: (_level_or_minus_one(f), str(f)))


def collect_tasks(target: str, levels: list[int] | None = None,
                  ops: list[str] | None = None) -> tuple[list[Task], list[Skipped]]:
    """The selected tasks, imported in this process (a run never does this: see runner.run_job)."""
    tasks: list[Task] = []
    skipped: list[Skipped] = []
    for f in select_task_files(target, levels, ops):
        t, s = load_tasks(f, check_inputs=False)
        tasks += t
        skipped += s
    return tasks, skipped


def task_order(paths: list[str], seed: int) -> list[str]:
    """The order a run submits its tasks in, the same in every epoch: shuffled by `seed` so a
    learning solver does not always meet a level's easy tasks first, and fixed by it so
    runs that differ only in the solver (the memory ablation) see the tasks alike."""
    ordered = sorted(paths)
    random.Random(seed).shuffle(ordered)
    return ordered


def task_key(path: Path) -> str:
    """A task's key from its path, as `Task.key` gives it: "level1/10_layer_norm"."""
    level = level_of(path)
    return f"level{level}/{path.stem}" if level is not None else path.stem


def job_key(run_id: str, epoch: int, task: str) -> str:
    """The name of one job of one run, the same when the run resumes."""
    key = f"{run_id}:{epoch}:{task}"
    return key if len(key) <= JOB_KEY_CHARS else f"{run_id}:{epoch}:sha256:{hashlib.sha256(task.encode()).hexdigest()}"


def default_task_timeout(cases: int | None, attempts: int) -> float:
    """Seconds one job may take: `attempts` kernels judged on `cases` cases (None: not limited)."""
    return TIMEOUT_BASE_S + TIMEOUT_PER_CASE_S * (cases or ASSUMED_CASES) * attempts


def _level_or_minus_one(path: Path) -> int:
    level = level_of(path)
    return -1 if level is None else level
