"""Experiences are keyed by op class, dtype, shape regime and bottleneck: advice learned on
groups bound by one pipe is not applied to a group bound by another, and what the offline
agent distils names the bottleneck of the group it learned on."""

from tests.agent.conftest import seed_experiences

from sage.agent.backends.offline import OfflineBackend
from sage.agent.compiler.schedule import GroupKey
from sage.agent.loop import AgentConfig, synthesize
from sage.agent.offline import hints as H

KEY = GroupKey(id="c0g0", op_class="pointwise", dtype="float32", regime="19/10")


def test_a_hint_scoped_to_a_bottleneck_applies_only_to_groups_bound_by_it():
    scoped = {"op_class": "pointwise", "dtype": "float32", "regime": "19/10", "bottleneck": "MTE2", "tile_len": 8192}
    assert H.applies(scoped, KEY, "MTE2")
    assert not H.applies(scoped, KEY, "HBM")
    assert not H.applies(scoped, KEY, None)           # a group the cost model does not estimate
    older = {k: v for k, v in scoped.items() if k != "bottleneck"}
    assert H.applies(older, KEY, "HBM") and H.applies(older, KEY, None)   # experiences from before the key
    assert H.knobs_of(scoped) == {"tile_len": 8192}   # the bottleneck is scope, not a knob


def _episode(task, memory, iterations: int = 0, seed: int = 0):
    backend = OfflineBackend(task, seed=seed)
    result = synthesize(task, backend, memory, AgentConfig(iterations=iterations, memory_mode="atu", seed=seed))
    return result, backend


def test_advice_for_another_bottleneck_is_not_applied(tiny_task, memory):
    _, probe = _episode(tiny_task, memory)
    key = probe._agent.cases[0].keys[0]
    bound = probe._agent.state.bottleneck_of(key)
    # relu on 2 MB of float32: per tile, a copy in and a copy out against one vector
    # instruction, so the vector unit is never what bounds it
    assert key.dtype == "float32" and bound in ("MTE2", "MTE3", "HBM")
    scope = {"op_class": "pointwise", "dtype": "float32"}
    wrong, right = seed_experiences(memory, [
        dict(title="Single buffers for vector-bound relu", advice="One buffer frees UB.", tags=["activation"],
             hints={**scope, "bottleneck": "V", "buffer_num": 1}),
        dict(title=f"Single buffers for {bound}-bound relu", advice="One buffer frees UB.", tags=["activation"],
             hints={**scope, "bottleneck": bound, "buffer_num": 1})])
    for seed in range(8):
        _, backend = _episode(tiny_task, memory, seed=seed)
        why = backend._agent.rejections
        assert why[wrong].startswith("no group of this task is in its scope")
        assert wrong not in backend._agent.knobs_of
        if right in backend._agent.knobs_of:        # drawn: applied or put on trial, in scope
            return
        assert why[right].startswith("not drawn")
    raise AssertionError("the advice scoped to the group's own bottleneck was never drawn")


def test_what_the_agent_learns_names_the_bottleneck_of_its_group(tiny_task, memory):
    result, backend = _episode(tiny_task, memory, iterations=1)
    state = backend._agent.state
    bounds = {k.id: state.bottleneck_of(k) for c in backend._agent.cases for k in c.keys}
    learned = [memory.show(i).experience for i in result.new_experiences]
    scoped = [e for e in learned if "regime" in e.hints]
    assert scoped, "a refined episode leaves at least its whole schedule"
    for e in scoped:
        assert e.hints["bottleneck"] in set(bounds.values()) - {None}
        assert f"{e.hints['bottleneck']}-bound" in e.title


def test_the_longest_scoped_title_fits_the_reflection_contract():
    """A title over 120 characters is refused by the reflection contract, so the lesson
    would be lost: the widest scope and knob set must fit."""
    from sage.agent.offline.distill import _scoped
    from sage.agent.reflection import MAX_TITLE

    key = GroupKey(id="c0g0", op_class="reduction", dtype="bfloat16", regime="24/12")
    lesson = _scoped(key, "MTE2", {"base_m": 256, "base_n": 128, "base_k": 64, "l1_k": 512},
                     "measured 1.25x faster than the start", ["reduction"])
    assert len(lesson["title"]) <= MAX_TITLE and "MTE2-bound" in lesson["title"]


def test_measured_neutral_advice_is_drawn_as_rarely_as_harmful_advice(tiny_task):
    """Utility 0 means two things: never measured (worth a duel at even odds) or measured
    and no faster (not worth another duel's two runs). The agent tells them apart by the
    item's trial count. Drawn out of 40 seeds: about 20 of an untried item, about 6 (p 0.15)
    of a measured one; a binomial(40, 0.15) reaches 14 with probability under 0.1 %."""
    from sage.agent.offline.agent import CompilerAgent
    from sage.kernels import target_for

    item = {"id": "E1", "title": "Single buffers", "hints": {"buffer_num": 1}, "utility": 0.0}
    drawn = {}
    for trials in (0, 2):
        count = 0
        for seed in range(40):
            agent = CompilerAgent(tiny_task, target_for("ascend910b2"), "ascend910b2", seed=seed, budget=0)
            agent.first([], [{**item, "trials": trials}])
            count += "E1" in agent.knobs_of
            if "E1" not in agent.knobs_of and trials:
                assert agent.rejections["E1"] == "not drawn this time, utility +0.00, measured 2x"
        drawn[trials] = count
    assert drawn[0] > 12 and drawn[2] < 14 and drawn[2] < drawn[0]


def test_the_prompt_says_how_often_an_item_was_measured(tiny_task):
    from sage.agent.prompt import ShownItem, task_brief, task_message

    items = [ShownItem(id="E1", title="Tiles", text="Longer tiles.", utility=0.0, trials=3),
             ShownItem(id="E2", title="Buffers", text="One buffer.", utility=0.0)]
    message = task_message(task_brief(tiny_task), [], items)
    assert "- E1 (utility +0.00, measured 3x) Tiles: Longer tiles." in message.content
    assert "- E2 (utility +0.00) Buffers: One buffer." in message.content    # never measured
    assert [e["trials"] for e in message.facts["experiences"]] == [3, 0]
