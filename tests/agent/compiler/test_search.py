"""The schedule search: it spends its budget of simulator runs, slowest groups first, keeps
the faster measured schedule and records both measurements."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agent.compiler.conftest import write_task


@pytest.fixture
def two_group_task(tmp_path: Path):
    from sage.bench.tasks import load_task

    # a big row softmax (the slow group) and a small independent elementwise output
    path = tmp_path / "t.py"
    write_task(path, "x, y", "(torch.softmax(x, dim=-1), y * 2.0)", ["torch.randn(256, 1024), torch.randn(64)"])
    return load_task(path)


def _search(task, budget: int):
    from sage.agent.compiler.compiler import trace_cases
    from sage.agent.compiler.search import SearchState, measure, rank
    from sage.bench.tasks import kernel_args, parameter_kwargs
    from sage.kernels import target_for

    cases = trace_cases(task)
    state = SearchState(cases, target_for("ascend910b2"), budget=budget)
    rank(state, {})
    measure(state, [kernel_args(c.case) for c in cases], parameter_kwargs(task.make_model()), "ascend910b2")
    return state


def test_the_search_spends_its_budget_on_the_slowest_group_and_keeps_the_faster(two_group_task):
    state = _search(two_group_task, budget=2)
    assert state.stats.runs == 2                       # counted, and never more than the budget
    slow = max(state.decisions.values(), key=lambda d: d.estimated_us or 0)
    assert slow.start_measured_us is not None and slow.measured_us is not None
    # the kept schedule is the faster of the two measured ones
    assert slow.measured_us <= slow.start_measured_us
    if slow.move is not None:
        assert state.chosen[slow.key.id] != type(state.chosen[slow.key.id])()
    others = [d for d in state.decisions.values() if d is not slow]
    assert all(d.start_measured_us is None for d in others)   # no run left for them


def test_a_zero_budget_runs_nothing(two_group_task):
    state = _search(two_group_task, budget=0)
    assert state.stats.runs == 0
    assert all(d.measured_us is None for d in state.decisions.values())


def test_moves_the_model_cannot_tell_apart_are_measured(tmp_path: Path):
    from sage.bench.tasks import load_task

    # an elementwise op the per-pipe model prices the same at every tile size
    path = tmp_path / "relu.py"
    write_task(path, "x", "torch.relu(x)", ["torch.randn(512, 1024)"])
    state = _search(load_task(path), budget=4)
    (dec,) = state.decisions.values()
    ests = [t for t, _, _ in state.ranked[dec.key.id]]
    assert max(ests) - min(ests) < 0.05 * min(ests)   # the model's ranking is a tie
    assert state.stats.runs == 2 and dec.start_measured_us is not None and dec.measured_us is not None


def test_a_timing_run_never_trades_precision(tmp_path: Path):
    from sage.bench.tasks import load_task

    # fp16 tanh: computing in fp16 is estimated (and measured) faster, and is 2-3 ulp off
    path = tmp_path / "tanh.py"
    write_task(path, "x", "torch.tanh(x)", ["torch.randn(1024, 1024).half()"])
    state = _search(load_task(path), budget=4)
    (dec,) = state.decisions.values()
    ranked = state.ranked[dec.key.id]
    favourites = [m for t, _, m in ranked if t == ranked[0][0]]
    assert "fp32_compute False" in favourites                          # a favourite move of the model
    assert state.chosen[dec.key.id].fp32_compute and dec.move != "fp32_compute False"


def test_search_budget_reaches_the_offline_agent(two_group_task, monkeypatch):
    from sage.agent.bench_solver import AgentSolver
    from sage.agent.factory import make_backend
    from sage.bench.runner import BenchConfig
    from sage.config import load_settings

    monkeypatch.setenv("SAGE_SEARCH_BUDGET", "3")
    assert make_backend(load_settings(), two_group_task).budget == 3
    solver = AgentSolver.from_bench_config(BenchConfig(out="/tmp/unused"), memory_url="sqlite://")
    assert solver.search_budget == 3


def test_a_reduction_over_rows_can_toggle_the_row_split(tmp_path: Path):
    from sage.bench.tasks import load_task

    # a column sum: the search may split its rows across blocks or narrow its columns; an
    # elementwise group has no such move
    path = tmp_path / "colsum.py"
    write_task(path, "x, y", "(x.sum(dim=0), y + 1.0)", ["torch.randn(2048, 512), torch.randn(64, 64)"])
    state = _search(load_task(path), budget=0)
    names = {gid: {m for _, _, m in ranked} for gid, ranked in state.ranked.items()}
    assert sorted("row_split False" in n for n in names.values()) == [False, True]
    split = next(r for r in state.ranked.values() if any(m == "row_split False" for _, _, m in r))
    narrow = next(s for _, s, m in split if m == "row_split False")
    assert not narrow.row_split and narrow.knobs().row_split is False


def test_the_blocks_a_group_runs_on_are_a_move():
    from sage.agent.compiler.schedule import Schedule
    from sage.agent.compiler.search import moves

    names = dict(moves(Schedule(), 1, False, cores=48))
    assert names["block_dim 24"].block_dim == 24                        # half the vector cores
    back = dict(moves(Schedule(block_dim=24), 1, False, cores=48))
    assert back["block_dim all"].block_dim is None
    assert not any(n.startswith("block_dim") for n in dict(moves(Schedule(), 1, False)))
