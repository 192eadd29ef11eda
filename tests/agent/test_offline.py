"""The offline compiler-agent through the loop: adoption is exactly what the kernel applies,
credit moves exactly the adopted items, refinement moves one knob, the schedule search
spends a counted simulator budget, and an op without a lowering fails naming it."""

import re
from pathlib import Path

from tests.agent.conftest import seed_experiences

from sage.agent.backends.offline import OfflineBackend
from sage.agent.loop import AgentConfig, synthesize

NO_LOWERING_TASK = '''
import torch
DESCRIPTION = "Sample an image at grid points."
TAGS = ["index"]
class Model(torch.nn.Module):
    def forward(self, x, g):
        return torch.nn.functional.grid_sample(x, g, align_corners=False)
def get_inputs():
    return [torch.randn(1, 2, 8, 8), torch.rand(1, 4, 4, 2) * 2 - 1]
def get_init_inputs():
    return []
'''


def test_adoption_is_what_the_kernel_applies_and_credit_follows_it(tiny_task, memory):
    ids = seed_experiences(memory, [
        dict(title="Single-buffer the copy queues", advice="BUFFER_NUM = 1 leaves UB room for larger tiles.",
             tags=["elementwise", "activation"], hints={"buffer_num": 1}),
        dict(title="Launch eight blocks", advice="Eight blocks suffice for small elementwise work.",
             tags=["elementwise", "activation"], hints={"block_dim": 8}),
        dict(title="Use large cube base tiles", advice="Use 256-row base tiles of C on the cube for matmul.",
             tags=["elementwise", "matmul"], hints={"base_m": 256}),
    ])
    adopted_somewhere = set()
    for seed in range(8):
        config = AgentConfig(iterations=0, memory_mode="atu", seed=seed)
        result = synthesize(tiny_task, OfflineBackend(tiny_task, seed=seed), memory, config)
        assert result.status == "correct"
        source = result.turns[0].source
        applied = {
            ids[0]: re.search(r"^BUFFER_NUM_v\dg\d = 1$", source, re.M) is not None,
            ids[1]: re.search(r"^BLOCK_DIM_v\dg\d = 8$", source, re.M) is not None,
            ids[2]: False,  # a cube hint cannot apply to a vector kernel
        }
        assert set(result.adopted) & set(ids) == {i for i, used in applied.items() if used}
        # an experience distilled from an earlier seed's search is adopted only as the kernel applies it
        learned = {e.id: e.hints for e in memory.experiences() if e.id not in ids}
        for extra in set(result.adopted) - set(ids):
            hints = learned[extra]
            if "block_dim" in hints:
                assert re.search(rf"^BLOCK_DIM_v\dg\d = {hints['block_dim']}$", source, re.M)
        assert result.rejected == []
        # ATU credits exactly the adopted ids and the ones the search measured on trial
        assert set(result.utilities) == set(result.adopted) | set(result.turns[0].trials)
        adopted_somewhere |= set(result.adopted) | set(result.turns[0].trials)
    assert adopted_somewhere & set(ids) == set(ids[:2]), \
        "each applicable hint is adopted or tried under some seed, the cube hint never"
    after = {e.id: e for e in memory.experiences()}
    assert after[ids[2]].utility == 0.0 and after[ids[2]].adopted == 0


def test_refinement_moves_one_knob_and_keeps_the_best(tiny_task, memory):
    result = synthesize(tiny_task, OfflineBackend(tiny_task, seed=0), memory,
                        AgentConfig(iterations=2, memory_mode="sage", seed=0))
    assert [t.status for t in result.turns] == ["correct"] * 3
    for turn in result.turns[1:]:
        move = re.search(r"refinement: (\w+) (\S+) on ([a-z]+ [a-z0-9]+(?: #\d+)?|every group)", turn.plan)
        assert move and move.group(1) in ("tile_len", "buffer_num", "copy_mode", "fp32_compute", "row_axis",
                                          "block_dim")
    assert len({t.source for t in result.turns}) == 3, "every refinement answers a different kernel"
    assert result.best == max(range(3), key=lambda i: result.turns[i].speedup)


def _synthesized(tmp_path: Path, memory, source: str):
    from sage.bench.tasks import load_task

    path = tmp_path / "task.py"
    path.write_text(source)
    task = load_task(path)
    return synthesize(task, OfflineBackend(task), memory, AgentConfig(memory_mode="sage"))


def test_operator_without_a_lowering_fails_naming_it(tmp_path: Path, memory):
    result = _synthesized(tmp_path, memory, NO_LOWERING_TASK)
    assert result.status == "no_kernel"
    assert result.reason.startswith("cannot compile: aten.grid_sampler_2d") and "no lowering" in result.reason
    assert result.turns == [] and result.best_source is None


def test_the_search_spends_a_counted_budget(tiny_task):
    for budget, most in ((0, 0), (2, 2)):
        backend = OfflineBackend(tiny_task, budget=budget)
        result = synthesize(tiny_task, backend, None, AgentConfig(iterations=0, memory_mode="none"))
        stats = backend.compiler_stats()
        assert result.status == "correct"
        assert stats["simulator_runs"] <= most
        # one recorded decision per group class: the float32 and the half cases' programs differ
        assert sorted(d["key"]["dtype"] for d in stats["decisions"]) == ["float16", "float32"]


def test_the_note_names_groups_by_what_they_compute_not_by_their_hash():
    from types import SimpleNamespace

    from sage.agent.compiler.schedule import GroupKey
    from sage.agent.offline.agent import group_labels

    def decision(gid: str, op_class: str, dtype: str) -> SimpleNamespace:
        return SimpleNamespace(key=GroupKey(id=gid, op_class=op_class, dtype=dtype, regime="22/10"))

    labels = group_labels({"tile-aa": decision("tile-aa", "reduction", "float32"),
                           "tile-bb": decision("tile-bb", "pointwise", "float16"),
                           "tile-cc": decision("tile-cc", "reduction", "float32")})
    assert labels == {"tile-aa": "reduction float32 #1", "tile-bb": "pointwise float16",
                      "tile-cc": "reduction float32 #2"}


MUTATING_OP_TASK = '''
import torch
from torch.library import custom_op

@custom_op("sage_test::bump_", mutates_args=("x",))
def bump_(x: torch.Tensor) -> None:
    x.add_(1.0)

class Model(torch.nn.Module):
    def forward(self, x):
        y = x.clone()
        bump_(y)
        return y
def get_inputs():
    return [torch.randn(8, 40)]
def get_init_inputs():
    return []
'''


def test_an_op_that_writes_its_argument_and_returns_nothing_is_not_dropped(tmp_path: Path, memory):
    # (a torch_npu stand-in such as npu_apply_adam updates out=(var, m, v) in place: compiled
    # as if it were dead, the kernel copied the old state and was judged incorrect)
    result = _synthesized(tmp_path, memory, MUTATING_OP_TASK)
    assert result.status == "no_kernel"
    assert result.reason.startswith("cannot compile: aten.bump_.default") and "no lowering" in result.reason
