"""Counterfactual credit: ATU credits a measured item by what it changed, not by how the episode ended.

Numbers by hand: α = 0.3; an effect e is rewarded tanh(log2 e); the episode WIN (2.0x)
is rewarded tanh(1).
"""

from __future__ import annotations

import math

import pytest

from sage.memory import Outcome
from sage.memory.effects import attempt_effects
from sage.memory.reward import effect_reward

from .helpers import SOFTMAX_TAGS, WIN, seed_experiences

ALPHA = 0.3


def test_effect_reward_is_the_log_ratio_squashed_and_averaged_geometrically() -> None:
    assert effect_reward([2.0]) == pytest.approx(math.tanh(1.0))
    assert effect_reward([0.5]) == pytest.approx(-math.tanh(1.0))
    assert effect_reward([2.0, 0.5]) == pytest.approx(0.0)
    assert effect_reward([1.0]) == 0.0
    for bad in ([], [0.0], [-1.0], [math.inf], [math.nan]):
        with pytest.raises(ValueError):
            effect_reward(bad)


def test_effects_read_off_attempts_compare_the_best_with_and_without_the_item() -> None:
    attempts = [dict(number=1, status="correct", speedup=2.0), dict(number=2, status="correct", speedup=4.0),
                dict(number=3, status="incorrect", speedup=None), dict(number=4, status="correct", speedup=3.0)]
    got = attempt_effects(attempts, [("experience", 7, 1), ("experience", 7, 4), ("rule", 2, 2)])
    by = {(m.kind, m.number): m for m in got}
    assert by[("experience", 7)].effect == pytest.approx(3.0 / 4.0)   # best with: attempt 4; without: attempt 2
    assert by[("experience", 7)].attempt == 4
    assert by[("rule", 2)].effect == pytest.approx(4.0 / 3.0)         # attempt 2 against attempt 4
    # declared in every correct attempt: nothing to compare with
    assert attempt_effects(attempts[:1], [("experience", 7, 1)]) == []


def _episode(memory, mode: str):
    episode = memory.start_episode(task="softmax", op_tags=SOFTMAX_TAGS, model="test", mode=mode, seed=0)
    shown = [e.id for e in episode.retrieve("softmax rows", SOFTMAX_TAGS)]
    return episode, shown


def test_a_harmful_item_in_a_good_episode_falls_under_atu_and_rises_under_uniform(open_memory) -> None:
    memory = open_memory()
    e1, e2, _ = seed_experiences(memory)
    good = Outcome(executed=True, correct=True, speedup=2.72)
    # ATU: the agent timed the work with e1's schedule at 1/0.63 of the default's speed and left it out
    episode, shown = _episode(memory, "atu")
    assert e1 in shown
    assert episode.record_effect(e1, effect=0.63, attempt=1, note="search: g0 start against default")
    report = episode.finish(good)
    assert report.reward == pytest.approx(math.tanh(math.log2(2.72)))
    assert report.credited == {e1: (0.0, pytest.approx(ALPHA * math.tanh(math.log2(0.63))))}
    assert memory.show(e1).experience.adopted == 0          # measured, not adopted
    # uniform credits every retrieved item with the episode reward, measurements or not
    memory2 = open_memory()
    memory2.reset()
    f1, f2, _ = seed_experiences(memory2)
    episode, _ = _episode(memory2, "uniform")
    episode.record_effect(f1, effect=0.63, attempt=1)
    report = episode.finish(good)
    assert report.credited[f1][1] == pytest.approx(ALPHA * math.tanh(math.log2(2.72)))


def test_declared_items_without_a_measurement_keep_the_episode_reward(open_memory) -> None:
    memory = open_memory()
    e1, e2, _ = seed_experiences(memory)
    episode, _ = _episode(memory, "sage")
    episode.declare_adopted([e1, e2], attempt=1)
    episode.record_attempt(source="k", status="correct", speedup=2.0)
    episode.record_effect(e2, effect=2.0, attempt=1)
    episode.record_effect(e2, effect=1.0, attempt=1)
    report = episode.finish(WIN)
    assert report.credited[e1][1] == pytest.approx(ALPHA * math.tanh(1.0))
    assert report.credited[e2][1] == pytest.approx(ALPHA * math.tanh(0.5))    # geometric mean of 2 and 1: sqrt 2


def test_two_attempts_with_and_without_an_item_are_a_measurement(open_memory) -> None:
    memory = open_memory()
    e1, _, _ = seed_experiences(memory)
    episode, _ = _episode(memory, "atu")
    episode.declare_adopted([e1], attempt=1)
    episode.record_attempt(source="with", status="correct", speedup=1.5)
    episode.record_attempt(source="without", status="correct", speedup=3.0)
    report = episode.finish(Outcome(executed=True, correct=True, speedup=3.0))
    assert report.credited[e1][1] == pytest.approx(ALPHA * -math.tanh(1.0))


def test_trials_are_stored_exported_and_only_for_shown_items(open_memory) -> None:
    memory = open_memory()
    e1, _, e3 = seed_experiences(memory)
    episode, shown = _episode(memory, "atu")
    assert e3 not in shown
    assert not episode.record_effect(e3, effect=2.0, attempt=1)
    assert not episode.record_effect("R9", effect=2.0, attempt=1)
    assert not episode.record_effect("nonsense", effect=2.0, attempt=1)
    with pytest.raises(ValueError):
        episode.record_effect(e1, effect=0.0, attempt=1)
    with pytest.raises(ValueError):
        episode.record_effect(e1, effect=2.0, attempt=0)
    episode.record_effect(e1, effect=1.25, attempt=1, note="g1")
    report = episode.finish(WIN)
    assert set(report.credited) == {e1}
    trials = memory.export_data()["tables"]["trial"]
    assert [(t["experience_id"], t["effect"], t["note"]) for t in trials] == [(int(e1[1:]), 1.25, "g1")]
    data = memory.export_data()
    memory.reset()
    assert memory.import_data(data)["trial"] == 1
    assert memory.export_data()["tables"]["trial"] == trials


def test_retrieval_tells_a_measured_item_from_an_untried_one(open_memory) -> None:
    """Both tie at utility 0 after a 1.00x trial; only the trial count says which was measured."""
    memory = open_memory()
    e1, e2, _ = seed_experiences(memory)
    episode, shown = _episode(memory, "atu")
    assert {e1, e2} <= set(shown)
    episode.record_effect(e1, effect=1.0, attempt=1)
    episode.record_effect(e1, effect=1.0, attempt=1)
    episode.finish(Outcome(executed=True, correct=True, speedup=1.0))
    episode, _ = _episode(memory, "atu")
    views = {e.id: e for e in episode.retrieve("softmax rows", SOFTMAX_TAGS)}
    assert views[e1].utility == views[e2].utility == 0.0
    assert (views[e1].trials, views[e2].trials) == (2, 0)
    # what the CLI lists and shows says the same
    listed = {e.id: e.trials for e in memory.experiences()}
    assert (listed[e1], listed[e2]) == (2, 0)
    assert memory.show(e1).experience.trials == 2
