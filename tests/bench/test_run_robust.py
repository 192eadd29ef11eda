"""A run never falls over: broken, hanging and crashing task files cost only their own row;
a killed run leaves no process behind and its resume learns no task twice."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from sage.bench.executors import LocalExecutor, TaskCrash, in_worker, isolation_notes, run_in_subprocess
from sage.bench.runner import BenchConfig, KernelDirSolver, read_rows, run_bench
from sage.bench.tasks import level_of
from sage.bench.workers import die_with_parent

FIXTURES = Path(__file__).parents[1] / "fixtures"
ROBUST = FIXTURES / "robust_tasks"
# The hang costs this much; the other tasks must each finish within it on a loaded 2-core
# machine (at 8 s, a worker's start under a load of 4-6 made good_relu time out).
HANG_LIMIT_S = 20.0

# What each fixture file must become in a reference-only run: (row status, words of the reason).
EXPECTED_REFERENCE = {
    "good_relu": ("reference_ok", None),
    "prints_to_stdout": ("reference_ok", None),
    "syntax_error": ("reference_error", "syntax error at line 7"),
    "inputs_raise": ("reference_error", "ValueError: this fixture has no inputs"),
    "model_raises": ("reference_error", "RuntimeError: this fixture's model cannot be built"),
    "exits_on_import": ("error", "SystemExit: 5"),
    "hangs": ("timeout", f"no result within the {HANG_LIMIT_S:g} s limit per task"),
    "exits_in_forward": ("crashed", "exited with code 3"),
    "segfaults": ("crashed", "died from SIGSEGV"),
    "cases_not_a_list": ("reference_error", "get_input_groups() returned a Tensor, not a list of cases"),
}
HELPERS = {"shared_helpers"}      # modules the tasks could import: no job, no row


@pytest.fixture(autouse=True)
def _private_reference_cache(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "reference-cache"))


def _reason(row) -> str | None:
    if row.reference is not None:
        return row.reference.reason
    return row.evaluation.reason if row.evaluation is not None else None


def test_a_mixed_folder_gives_a_row_for_every_file(tmp_path):
    began = time.perf_counter()
    run = run_bench(BenchConfig(target=str(ROBUST), workers=2, out=tmp_path, task_timeout_s=HANG_LIMIT_S),
                    solver=None)
    wall = time.perf_counter() - began
    rows = {r.task: r for r in read_rows(tmp_path / "results.jsonl")}
    assert run.ran == len(rows) == len(EXPECTED_REFERENCE) == len(list(ROBUST.glob("*.py"))) - len(HELPERS)
    assert not HELPERS & set(rows)
    for task, (status, words) in EXPECTED_REFERENCE.items():
        row = rows[task]
        assert row.status == status, (task, row.status, _reason(row))
        if words is not None:
            assert words in _reason(row), (task, _reason(row))
            assert "\n" not in _reason(row)
    assert rows["good_relu"].reference.cases[0].inputs == ["float32[8, 64]"]
    # The hang costs its deadline, not the run: the other jobs ran beside it on the second worker.
    assert HANG_LIMIT_S <= wall < HANG_LIMIT_S + 45
    # Task code ran only in the workers: this process imported none of the files.
    assert not [m for m in sys.modules.values() if str(getattr(m, "__file__", "")).startswith(str(ROBUST))]


def test_kernel_run_over_broken_tasks_counts_them_as_failures(tmp_path):
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    for path in ROBUST.glob("*.py"):
        shutil.copy(FIXTURES / "kernels/relu_correct.py", kernels / path.name)
    ops = ["good_relu", "model_raises", "exits_in_forward", "segfaults"]
    run = run_bench(BenchConfig(target=str(ROBUST), workers=2, out=tmp_path / "run", ops=ops, cases=1,
                                task_timeout_s=120),
                    KernelDirSolver(kernels=kernels, cases=1))
    rows = {r.task: r for r in run.rows}
    assert {t: (r.status, r.evaluation.status) for t, r in rows.items()} == {
        "good_relu": ("correct", "correct"), "model_raises": ("reference_error", "reference_error"),
        "exits_in_forward": ("crashed", "error"), "segfaults": ("crashed", "error")}
    assert "SIGSEGV" in rows["segfaults"].evaluation.reason


def test_a_task_that_prints_leaves_json_stdout_clean(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAGE_")}
    env.update(HOME=str(tmp_path / "home"), SAGE_CACHE_DIR=str(tmp_path / "cache"))
    result = subprocess.run([str(Path(sys.executable).with_name("sage")), "bench", str(ROBUST), "--reference-only",
                             "--ops", "prints_to_stdout,good_relu", "--json", "--out", str(tmp_path / "run")],
                            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["ran"] == 2                 # exactly one JSON document
    assert "debug output from the reference forward" in result.stderr


def _processes() -> dict[int, int]:
    """Live (non-zombie) processes: pid -> parent pid."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z":
            table[int(entry.name)] = int(fields[1])
    return table


def _descendants(root: int) -> set[int]:
    table, found, frontier = _processes(), set(), {root}
    while frontier:
        frontier = {pid for pid, parent in table.items() if parent in frontier} - found
        found |= frontier
    return found


def _tagged(tag: str) -> set[int]:
    """Processes whose environment carries `tag`: descendants that were reparented away."""
    needle = f"SAGE_KILL_TEST={tag}".encode()
    found = set()
    for pid in _processes():
        try:
            if needle in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                found.add(pid)
        except OSError:
            continue
    return found


def _episodes(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT task, episode_key FROM episode ORDER BY id").fetchall()


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; PR_SET_PDEATHSIG is Linux-only")
def test_kill_9_leaves_no_process_and_resume_learns_each_task_once(tmp_path):
    tag = uuid.uuid4().hex
    out = tmp_path / "run"
    ops = "relu,sigmoid,swish,elu"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAGE_")}
    env.update(HOME=str(tmp_path / "home"), SAGE_KILL_TEST=tag, SAGE_CACHE_DIR=str(tmp_path / "cache"))
    command = [str(Path(sys.executable).with_name("sage")), "bench", "npukernelbench", "--level", "0",
               "--ops", ops, "--cases", "1", "--iterations", "1", "--workers", "2", "--out", str(out)]
    run = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    results = out / "results.jsonl"
    deadline = time.monotonic() + 180
    while not (results.exists() and results.read_text().strip()):
        assert run.poll() is None, run.stderr.read().decode()
        assert time.monotonic() < deadline, "no row within 180 s"
        time.sleep(0.05)
    tree = _descendants(run.pid)                    # the fork server, its workers, what they started
    workers = tree - {pid for pid, parent in _processes().items() if parent == run.pid}
    assert len(tree) >= 3 and workers, tree
    run.send_signal(signal.SIGKILL)
    run.wait()
    killed = time.monotonic()
    gone: dict[str, float] = {}
    while time.monotonic() - killed < 10:
        live = set(_processes())
        if not workers & live:
            gone.setdefault("workers", time.monotonic() - killed)
        if not (tree & live or _tagged(tag)):
            gone["all"] = time.monotonic() - killed
            break
        time.sleep(0.02)
    # Workers die at once; the idle fork server last, once its interpreter has torn down
    # (about 1 s on an idle machine, a few under load).
    assert "all" in gone, f"still running 10 s after kill -9: {(tree & set(_processes())) | _tagged(tag)}"
    print(f"\nkill -9: workers gone after {gone['workers']:.2f} s, every process after {gone['all']:.2f} s")

    rows_before = len(read_rows(results))
    resumed = subprocess.run(command + ["--resume"], env=env, cwd=tmp_path, capture_output=True, text=True,
                             timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    finals = [r for r in read_rows(results) if r.final]
    assert sorted(r.task for r in finals) == sorted(f"level0/{n}" for n in
                                                    ("10_relu", "11_sigmoid", "12_swish", "13_elu"))
    episodes = _episodes(out / "memory.db")
    assert len(episodes) == len(finals) == 4, (rows_before, episodes)
    assert len({key for _, key in episodes}) == 4
    run_id = json.loads((out / "run.json").read_text())["run_id"]
    assert all(key == f"{run_id}:0:{task}" for task, key in episodes)


def test_a_stored_episode_whose_row_was_lost_is_not_learned_again(tmp_path):
    from sage.agent.bench_solver import AgentSolver

    out = tmp_path / "run"
    db = tmp_path / "memory.db"
    solver = AgentSolver(memory_url=f"sqlite:///{db}", memory_mode="atu", iterations=1, cases=1)
    config = BenchConfig(target="npukernelbench", levels=[0], ops=["relu", "sigmoid"], cases=1, workers=2, out=out)
    first = run_bench(config, solver)
    assert len(_episodes(db)) == 2      # both workers open the new database at once (journal-mode race)
    lost = next(r for r in first.rows if r.final and r.task == "level0/11_sigmoid")
    # A kill after sigmoid's episode was stored but before its rows were written.
    results = out / "results.jsonl"
    kept = [line for line in results.read_text().splitlines() if '"level0/11_sigmoid"' not in line]
    results.write_text("\n".join(kept) + "\n")

    second = run_bench(config.model_copy(update={"resume": True}), solver)
    assert (second.ran, second.resumed) == (1, 1)
    assert len(_episodes(db)) == 2                      # nothing learned twice
    restored = next(r for r in second.rows if r.final and r.task == "level0/11_sigmoid")
    assert restored.extra["restored"] is True and restored.extra["episode_id"] == lost.extra["episode_id"]
    assert (restored.status, restored.evaluation.executed, restored.evaluation.correct) == \
        (lost.status, lost.evaluation.executed, lost.evaluation.correct)
    assert restored.evaluation.speedup == pytest.approx(lost.evaluation.speedup)
    assert restored.source == lost.source


# -- the executors and worker processes themselves ---------------------------------------------

def _job(item: tuple[int, str]) -> int:
    """Module-level, so a worker can import it by name."""
    kind = item[1]
    if kind == "segfault":
        ctypes.string_at(0)
    if kind == "exit":
        os._exit(3)
    if kind == "oom-killed":
        os.kill(os.getpid(), signal.SIGKILL)             # what the kernel's OOM killer sends
    if kind == "hang":
        time.sleep(3600)
    if kind == "raise":
        raise KeyError("no such thing")
    return os.getpid()


def test_a_dead_worker_is_replaced_and_the_other_jobs_go_on():
    kinds = ["ok", "segfault", "ok", "exit", "raise", "hang", "oom-killed", "ok", "ok"]
    pool = LocalExecutor(2)
    try:
        began = time.monotonic()
        outcomes = dict(pool.map(_job, list(enumerate(kinds)), timeout_s=3))
        wall = time.monotonic() - began
        assert len(pool._idle) <= 2 and not pool._busy
    finally:
        pool.close()
    assert sorted(outcomes) == list(enumerate(kinds))
    crashes = {item[1]: (o.kind, o.reason) for item, o in outcomes.items() if isinstance(o, TaskCrash)}
    assert crashes == {
        "segfault": ("crashed", "the worker process died from SIGSEGV (segmentation fault)"),
        "exit": ("crashed", "the worker process exited with code 3 in the middle of the job"),
        "oom-killed": ("crashed", "the worker process died from SIGKILL (killed from outside, e.g. out of memory)"),
        "raise": ("raised", "KeyError: 'no such thing'"),
        "hang": ("timeout", "no result within the 3 s limit per task: the worker was stopped")}
    ok_pids = [o for item, o in outcomes.items() if item[1] == "ok"]
    assert all(isinstance(p, int) and p != os.getpid() for p in ok_pids)
    assert 3 <= wall < 20


def test_a_worker_killed_between_jobs_is_not_reused():
    pool = LocalExecutor(1)
    try:
        first = dict(pool.map(_job, [(0, "ok")]))[(0, "ok")]
        os.kill(first, signal.SIGKILL)                     # the OOM killer, while the worker is idle
        time.sleep(0.2)
        second = dict(pool.map(_job, [(1, "ok")]))[(1, "ok")]
    finally:
        pool.close()
    assert isinstance(second, int) and second != first


def _death_signals(_: object) -> tuple[int, int]:
    """PR_GET_PDEATHSIG of this process and of a child it forks."""
    libc = ctypes.CDLL(None)
    mine = ctypes.c_int()
    libc.prctl(2, ctypes.byref(mine))                    # PR_GET_PDEATHSIG
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        child = ctypes.c_int()
        libc.prctl(2, ctypes.byref(child))
        os.write(write, str(child.value).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    return mine.value, int(os.read(read, 16))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
def test_workers_and_the_processes_they_fork_die_with_their_parent():
    assert run_in_subprocess(_death_signals, None, timeout_s=60) == (signal.SIGKILL, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
@pytest.mark.parametrize("middle_waits", [True, False])
def test_a_process_whose_parent_died_before_arming_exits_at_once(middle_waits):
    read, write = os.pipe()
    release_r, release_w = os.pipe()
    middle = os.fork()
    if middle == 0:
        # Taken before the fork: a grandchild asking getppid() may run only after the middle
        # exited (under load), and would then see its new reaper as its owner.
        owner = os.getpid()                                # the middle process
        if os.fork() == 0:
            os.read(release_r, 1)                          # armed only once told to
            die_with_parent(owner)
            os.write(write, b"alive")
            os._exit(0)
        if middle_waits:
            time.sleep(3)                                  # alive while the grandchild arms
        os._exit(0)
    os.close(write)
    if not middle_waits:
        os.waitpid(middle, 0)                              # the middle is gone before the grandchild arms
    os.write(release_w, b"x")
    said = os.read(read, 16)
    if middle_waits:
        os.waitpid(middle, 0)
    assert said == (b"alive" if middle_waits else b"")


def test_run_in_subprocess_returns_the_result_or_the_crash():
    assert run_in_subprocess(_job, (0, "ok"), timeout_s=60) != os.getpid()
    assert run_in_subprocess(_job, (0, "segfault"), timeout_s=60).reason.endswith("SIGSEGV (segmentation fault)")
    assert run_in_subprocess(_job, (0, "raise"), timeout_s=60) == TaskCrash(kind="raised",
                                                                           reason="KeyError: 'no such thing'")
    began = time.monotonic()
    assert run_in_subprocess(_job, (0, "hang"), timeout_s=1).kind == "timeout"
    assert time.monotonic() - began < 10
    # The cost of the isolation itself: a function the fork server has imported already
    # (a test module's function is imported again in every new worker).
    calls = 20
    began = time.perf_counter()
    for _ in range(calls):
        assert run_in_subprocess(level_of, Path("suite/level3/x.py"), timeout_s=60) == 3
    per_call = (time.perf_counter() - began) / calls
    print(f"\nrun_in_subprocess, warm fork server: {1000 * per_call:.1f} ms per call")
    assert per_call < 1.0


def _nested(_: object) -> tuple[bool, int]:
    return in_worker(), run_in_subprocess(level_of, Path("suite/level2/x.py"), timeout_s=120)


def test_a_worker_knows_it_is_one_and_can_still_isolate_a_call():
    assert not in_worker()
    assert run_in_subprocess(_nested, None, timeout_s=180) == (True, 2)


def test_pool_overhead_per_job_is_small():
    pool = LocalExecutor(1)
    try:
        list(pool.map(_job, [(0, "ok")]))                  # the worker starts
        jobs = 200
        began = time.perf_counter()
        list(pool.map(_job, [(i, "ok") for i in range(jobs)], timeout_s=60))
        per_job = (time.perf_counter() - began) / jobs
    finally:
        pool.close()
    print(f"\nworker pool: {1000 * per_job:.2f} ms per job (send, run, answer)")
    assert per_job < 0.1


def test_ray_gets_a_note_and_local_runs_do_not():
    assert any("PR_SET_PDEATHSIG" in n for n in isolation_notes("ray"))
    assert isolation_notes("local") == []


def test_a_pool_worker_runs_numpy_blas_on_one_thread():
    from sage.npu.sim.blas import blas_threads

    if blas_threads() is None:
        pytest.skip("numpy's BLAS is not OpenBLAS here")
    pool = LocalExecutor(1)
    try:
        [(_, threads)] = list(pool.map(_blas_threads, [None], timeout_s=60))
    finally:
        pool.close()
    assert threads == 1


def _blas_threads(_: object) -> int | None:
    from sage.npu.sim.blas import blas_threads

    return blas_threads()
