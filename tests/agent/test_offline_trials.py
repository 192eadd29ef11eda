"""Advice on trial: the offline agent times an unproven item's start against the start
without it, keeps the faster, says why it dropped the item, and the memory credits the
item by the measured effect under ATU (and by the episode reward under uniform credit)."""

import math

from tests.agent.compiler.kernel_text import constants
from tests.agent.conftest import seed_experiences

from sage.agent.backends.offline import OfflineBackend
from sage.agent.loop import AgentConfig, synthesize

ONE_BLOCK = dict(title="Launch one block", advice="One block avoids launch fan-out for elementwise work.",
                 tags=["elementwise", "activation"], hints={"block_dim": 1})


def _episode(task, memory, mode: str, seed: int = 0):
    backend = OfflineBackend(task, seed=seed)
    result = synthesize(task, backend, memory, AgentConfig(iterations=0, memory_mode=mode, seed=seed))
    return result, backend


def test_a_harmful_unproven_item_loses_its_duel_and_falls_under_atu(tiny_task, memory):
    (item,) = seed_experiences(memory, [ONE_BLOCK])
    # the coin flip for an untried item is 1/2: find a seed that tries it
    for seed in range(16):
        result, backend = _episode(tiny_task, memory, "atu", seed)
        if item in result.turns[0].trials:
            break
    else:
        raise AssertionError("no seed put the untried item on trial")
    turn = result.turns[0]
    # one vector core against all of them on megabytes: at least twice as slow, launch costs and all
    assert turn.trials[item] < 0.5
    assert item not in result.adopted, "the search kept the faster start without it"
    assert f"{item} (timed {turn.trials[item]:.2f}x" in turn.plan
    compiled = backend._agent._compile(backend._agent.state.chosen)
    assert compiled.source == turn.source
    assert all(constants(compiled, case)["BLOCK_DIM"] != 1 for case in range(len(compiled.cases)))
    # ATU credits the measured effect, not the good episode's reward
    before, after = result.utilities[item]
    assert before == 0.0
    assert math.isclose(after, 0.3 * math.tanh(math.log2(turn.trials[item])), rel_tol=1e-3)
    assert result.reward > 0
    detail = memory.show(item)
    assert detail.experience.adopted == 0 and [round(t.effect, 4) for t in detail.trials] == [turn.trials[item]]


def test_uniform_credit_raises_the_same_harmful_item(tiny_task, memory):
    (item,) = seed_experiences(memory, [ONE_BLOCK])
    result, _ = _episode(tiny_task, memory, "uniform")
    assert result.utilities[item][1] > 0        # the episode was good, so every retrieved item gains


def test_a_proven_item_is_applied_without_a_duel(tiny_task, memory):
    (item,) = seed_experiences(memory, [dict(ONE_BLOCK, hints={"buffer_num": 1})])
    result, backend = _episode(tiny_task, memory, "uniform")      # uniform: the good episode proves it
    assert memory.show(item).experience.utility > 0.05
    for seed in range(8):
        result, backend = _episode(tiny_task, memory, "atu", seed)
        if item in result.adopted:
            assert result.turns[0].trials == {}
            assert backend._agent.state.duels == {}
            return
    raise AssertionError("a proven item was never applied")


def test_advice_on_trial_stays_only_on_groups_where_it_was_timed_faster(tiny_task, memory):
    """A budget of 2 runs pays for one duel: the other case's group is never timed, so the
    advice is not carried there, whatever the duel said."""
    (item,) = seed_experiences(memory, [dict(ONE_BLOCK, hints={"buffer_num": 1})])
    for seed in range(16):
        backend = OfflineBackend(tiny_task, seed=seed, budget=2)
        result = synthesize(tiny_task, backend, memory, AgentConfig(iterations=0, memory_mode="atu", seed=seed))
        state = backend._agent.state
        if item not in backend._agent.on_trial:
            continue
        timed = set(state.duel_times)
        assert len(timed) == 1 and state.stats.runs == 2
        untimed = set(state.chosen) - timed          # the other dtype's class of groups
        assert len(untimed) == 1
        # the file judged is the chosen schedules compiled; the untimed class's launch keeps 2 buffers
        compiled = backend._agent._compile(state.chosen)
        assert compiled.source == result.turns[0].source
        for gid in untimed:
            assert state.chosen[gid].buffer_num == 2
            (case,) = [i for i, c in enumerate(compiled.cases) if c.keys[0].id == gid]
            assert constants(compiled, case)["BUFFER_NUM"] == 2
        (gid,) = timed
        t_without, t_with = state.duel_times[gid]
        kept = t_with < t_without
        assert (state.chosen[gid].buffer_num == 1) == kept
        assert (item in result.adopted) == kept
        return
    raise AssertionError("no seed put the item on trial")
