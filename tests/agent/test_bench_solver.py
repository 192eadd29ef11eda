"""The agent as a bench Solver: the runner records every attempt and the best one as final."""

import pickle

from tests.agent.conftest import TINY_RELU

from sage.agent.bench_solver import AgentSolver
from sage.bench.runner import BenchConfig, run_bench


def test_agent_solver_in_the_runner(tmp_path):
    task = tmp_path / "tiny_relu.py"
    task.write_text(TINY_RELU)
    solver = AgentSolver(memory_url=f"sqlite:///{tmp_path / 'memory.db'}", iterations=1, memory_mode="sage")
    assert pickle.loads(pickle.dumps(solver)) == solver  # travels to worker processes
    run = run_bench(BenchConfig(target=str(task), out=tmp_path / "run", workers=1), solver)
    rows = run.rows
    assert [r.attempt for r in rows] == [0, 1]
    final = [r for r in rows if r.final]
    assert len(final) == 1 and final[0].status == "correct"
    assert final[0].solver == "agent:offline:sage"
    assert final[0].evaluation.speedup == max(r.evaluation.speedup for r in rows)
    assert final[0].extra["backend"] == "offline" and final[0].extra["episode_id"] == 1
    assert "refinement: " in rows[1].extra["plan"]  # the second attempt moves one schedule knob


def test_solver_from_a_bench_config_and_flags(tmp_path, monkeypatch):
    monkeypatch.delenv("SAGE_MODEL", raising=False)
    config = BenchConfig(target="npukernelbench", out=tmp_path, cases=2, preset="ascend910b4")
    solver = AgentSolver.from_bench_config(config, memory_url="sqlite:///x.db", memory_mode="uniform",
                                           iterations=None, model="qwen-coder")
    assert (solver.preset, solver.cases, solver.memory_mode, solver.model) == ("ascend910b4", 2, "uniform", "qwen-coder")
    assert solver.iterations == 4  # flag not given: the settings' default
    assert solver.name == "agent:qwen-coder:uniform"
