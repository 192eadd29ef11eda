"""The compiler traces the cases the kernel is judged on, and never one no 910B kernel takes."""

import pytest

TASK = '''
import torch
DESCRIPTION = "relu"
TAGS = ["test"]
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_input_groups():
    return [[torch.randn(4)], [torch.randn(4, dtype=torch.float64)], [torch.randn(8)], [torch.randn(3, 5)]]
def get_inputs():
    return get_input_groups()[0]
def get_init_inputs():
    return []
'''


@pytest.fixture
def task(tmp_path):
    from sage.bench.tasks import load_task

    path = tmp_path / "relu_cases.py"
    path.write_text(TASK)
    return load_task(path)


def _shapes(cases):
    return [tuple(c.case[0].shape) for c in cases]


def test_only_the_evaluated_cases_are_traced_and_fp64_is_left_out(task):
    from sage.agent.compiler.compiler import trace_cases

    assert _shapes(trace_cases(task)) == [(4,), (8,), (3, 5)]           # case 1 is float64
    assert _shapes(trace_cases(task, 1)) == [(4,)]
    assert _shapes(trace_cases(task, [3, 2])) == [(3, 5), (8,)]


def test_a_selection_of_fp64_cases_only_is_unsupported_with_the_reason(task):
    from sage.agent.compiler.build import Unsupported
    from sage.agent.compiler.compiler import trace_cases

    with pytest.raises(Unsupported, match="no case a 910B kernel can take: .*float64"):
        trace_cases(task, [1])


def test_the_offline_agent_compiles_what_the_episode_evaluates(task):
    from sage.agent.backends.offline import OfflineBackend
    from sage.agent.loop import AgentConfig, synthesize

    backend = OfflineBackend(task, budget=0)
    result = synthesize(task, backend, None, AgentConfig(iterations=0, memory_mode="none", cases=[2]))
    assert result.status == "correct"
    assert "# 1 case class(es)" in result.turns[0].source       # the kernel file holds case 2 only


VALUE_DEPENDENT = '''
import torch
DESCRIPTION = "the first `cut` elements doubled, the rest zero; cut read on the host"
TAGS = ["test"]
class Model(torch.nn.Module):
    def forward(self, x, cut):
        y = torch.zeros_like(x)
        end = int(cut.item())
        y[:end] = x[:end] * 2
        return y
def get_input_groups():
    return [[torch.randn(64), torch.randint(1, 64, (1,))]]
def get_init_inputs():
    return []
'''


def test_a_trace_that_changes_with_the_input_values_is_refused_even_at_a_fixed_seed(tmp_path):
    """cases() gives the same inputs for the same seed, so the second trace must be drawn
    under another: else the program would bake this seed's `cut` and pass its evaluation."""
    from dataclasses import replace

    from sage.agent.compiler.build import Unsupported
    from sage.agent.compiler.compiler import REDRAW_SEED_OFFSET, trace_cases
    from sage.bench.tasks import load_task

    path = tmp_path / "cut.py"
    path.write_text(VALUE_DEPENDENT)
    task = load_task(path)
    cut = task.cases()[0][1].item()
    assert task.cases()[0][1].item() == cut                              # one seed, one draw
    assert replace(task, seed=REDRAW_SEED_OFFSET).cases()[0][1].item() != cut
    with pytest.raises(Unsupported, match="depend on tensor values it reads on the host"):
        trace_cases(task)
