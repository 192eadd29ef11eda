"""The Ray executor runs the same jobs as the local pool (on a local one-CPU Ray instance)."""

from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="ray is an optional extra: pip install 'sage-npu[ray]'")

from sage.bench.executors import RayExecutor  # noqa: E402
from sage.bench.runner import BenchConfig, Job, KernelDirSolver, read_rows, run_bench, run_job  # noqa: E402

THIRDPARTY = Path(__file__).parents[1] / "fixtures" / "thirdparty"

pytestmark = [pytest.mark.ray, pytest.mark.slow]


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_executor_runs_jobs(local_ray, tmp_path):
    solver = KernelDirSolver(kernels=tmp_path)      # no kernels: measures Ray, not the simulator
    jobs = [Job(path=str(THIRDPARTY / "kernelbench/level1/19_ReLU.py"), solver=solver),
            Job(path=str(THIRDPARTY / "multikernelbench/npu_fused/rotary_mul.py"), solver=solver)]
    rows = [r[0] for _, r in RayExecutor().map(run_job, jobs)]
    assert sorted((r.task, r.status) for r in rows) == [
        ("level1/19_ReLU", "no_kernel"), ("rotary_mul", "reference_unavailable")]


def test_bench_run_on_ray(local_ray, tmp_path):
    config = BenchConfig(target=str(THIRDPARTY), executor="ray", out=tmp_path / "run", ops=["sigmoid", "ReLU"])
    run = run_bench(config, KernelDirSolver(kernels=tmp_path))
    assert run.ran == 2
    assert [r.status for r in read_rows(tmp_path / "run" / "results.jsonl")] == ["no_kernel", "no_kernel"]


def test_a_crashing_or_hanging_ray_job_costs_only_itself(local_ray):
    # Each job runs in its own process inside the Ray worker: a segfault or a hang ends
    # that process, not the Ray worker, and Ray does not retry it. (`eval` of code, because
    # the job function must be importable in Ray's workers, which a test module is not.)
    jobs = {"segfault": "__import__('ctypes').string_at(0)", "hang": "__import__('time').sleep(3600)",
            "fine": "'fine'"}
    # The deadline covers starting the job's process too: 5 s was too short on a loaded
    # 2-core machine (the segfaulting job was reported as a timeout); the hang still ends at it.
    outcomes = {code: out for code, out in RayExecutor().map(eval, jobs.values(), timeout_s=20)}
    assert outcomes[jobs["fine"]] == "fine"
    assert (outcomes[jobs["segfault"]].kind, outcomes[jobs["hang"]].kind) == ("crashed", "timeout")
    assert "SIGSEGV" in outcomes[jobs["segfault"]].reason
