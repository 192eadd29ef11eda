"""The offline synthesizer through the loop: adoption is exactly what it applied, credit
moves exactly the adopted items, operators outside its templates fail honestly."""

import re
from pathlib import Path

from tests.agent.conftest import seed_experiences

from sage.agent.backends.offline import OfflineBackend
from sage.agent.loop import AgentConfig, synthesize

SORT_TASK = '''
import torch
DESCRIPTION = "Sort each row."
TAGS = ["sort"]
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.sort(x, dim=-1).values
def get_inputs():
    return [torch.randn(8, 64)]
def get_init_inputs():
    return []
'''


def test_adoption_is_what_the_kernel_applies_and_credit_follows_it(tiny_task, memory):
    ids = seed_experiences(memory, [
        dict(title="Double-buffer the copy queues", advice="BUFFER_NUM = 2 overlaps MTE2 copies with vector work.",
             tags=["elementwise", "activation"], hints={"buffer_num": 2}),
        dict(title="Launch a block on every core", advice="A few blocks leave most AI cores idle on elementwise work.",
             tags=["elementwise", "activation"], hints={"block_dim": "all"}),
        dict(title="Use large tiles", advice="Fill UB with the largest elementwise tile that fits its buffers.",
             tags=["elementwise", "activation"], hints={"tile_len": 8192}),
        dict(title="Use large cube base tiles", advice="Use 128x256 base tiles of C on the cube for matmul.",
             tags=["elementwise", "matmul"], hints={"base_m": 128}),
    ])
    config = AgentConfig(iterations=0, memory_mode="atu", seed=1)
    result = synthesize(tiny_task, OfflineBackend(tiny_task, seed=1), memory, config)

    assert result.status == "correct"
    source = result.turns[0].source
    applied = {
        ids[0]: re.search(r"^BUFFER_NUM_v0 = 2$", source, re.M) is not None,
        ids[1]: re.search(r"^BLOCK_DIM_v0 = None$", source, re.M) is not None,
        ids[2]: re.search(r"^TILE_LEN_v0 = 8192$", source, re.M) is not None,
        ids[3]: False,  # a cube hint cannot apply to a vector kernel
    }
    assert set(result.adopted) == {i for i, used in applied.items() if used}
    assert 0 < len(result.adopted) < 3, "seed 1 adopts some hints and not others (seeded, so stable)"
    assert result.rejected == []
    # ATU credited exactly the adopted ids; the shown-but-unused ones kept U = 0.
    assert set(result.utilities) == set(result.adopted)
    after = {e.id: e for e in memory.experiences()}
    for i in ids:
        if i in result.adopted:
            assert after[i].utility == result.utilities[i][1] != 0.0 and after[i].adopted == 1
        else:
            assert after[i].utility == 0.0 and after[i].adopted == 0


def test_refinement_changes_one_knob_and_distils_what_helped(tiny_task, memory):
    result = synthesize(tiny_task, OfflineBackend(tiny_task, seed=0), memory,
                        AgentConfig(iterations=2, memory_mode="sage", seed=0))
    assert [t.status for t in result.turns][:2] == ["correct", "correct"]
    assert "Changed block_dim to all" in result.turns[1].plan
    assert result.turns[1].speedup > result.turns[0].speedup
    assert result.best == max((i for i, t in enumerate(result.turns) if t.speedup), key=lambda i: result.turns[i].speedup)
    # The lesson is the change that paid, with its knob hint, stored in the memory.
    titles = {e.title: e for e in memory.experiences()}
    assert "Launch a block on every core" in titles
    assert titles["Launch a block on every core"].hints == {"block_dim": "all"}


def test_operator_without_template_fails_honestly(tmp_path: Path, memory):
    from sage.bench.tasks import load_task

    path = tmp_path / "sort_rows.py"
    path.write_text(SORT_TASK)
    task = load_task(path)
    result = synthesize(task, OfflineBackend(task), memory, AgentConfig(memory_mode="sage"))
    assert result.status == "no_kernel"
    assert result.reason.startswith("no template: aten.sort")
    assert result.turns == [] and result.best_source is None


def test_the_winning_schedule_is_stored_whole_and_adopted_whole(tiny_task, memory):
    from sage.agent.offline import schedule
    from sage.agent.offline.synthesizer import Synthesizer, analyse
    from sage.kernels import target_for

    result = synthesize(tiny_task, OfflineBackend(tiny_task, seed=0), memory,
                        AgentConfig(iterations=3, memory_mode="sage", seed=0))
    best_source = result.turns[result.best].source
    whole = [e for e in memory.experiences() if e.title.startswith("Whole schedule for elementwise")]
    assert len(whole) == 1
    hints = whole[0].hints
    assert set(hints) == {"tile_len", "buffer_num", "block_dim", "copy_mode", "fp32_compute", "op_class"}
    assert f"BUFFER_NUM_v0 = {hints['buffer_num']}" in best_source
    assert f"TILE_LEN_v0 = {hints['tile_len']}" in best_source

    item = {"id": whole[0].id, "hints": hints, "utility": 0.0}
    partial = {"id": "E_other", "hints": {"tile_len": 8192}, "utility": 0.0}
    adopted_runs = 0
    for seed in range(6):
        synth = Synthesizer(analysis=analyse(tiny_task), target=target_for(), seed=seed, task_key="t")
        source, adopted, _ = synth.first([item], [partial])
        if whole[0].id in adopted:
            adopted_runs += 1
            # the whole set decides every knob; the conflicting single hint is not applied
            assert "E_other" not in adopted
            expected = schedule.full_hints(synth.steps[0].knobs, cube=False)
            assert {k: v for k, v in hints.items() if k != "op_class"} == expected
            assert source.split("# ---- variant 0")[1].split("class ")[0] == \
                best_source.split("# ---- variant 0")[1].split("class ")[0]
    assert adopted_runs > 0
