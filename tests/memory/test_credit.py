"""ATU and its baselines, with exact numbers (α = 0.3, reward tanh(log2 2) = tanh 1)."""

from __future__ import annotations

import math

import pytest

from sage.memory import Outcome

from .helpers import CRASH, WIN, run_episode, seed_experiences

R_WIN = math.tanh(1.0)
ALPHA = 0.3


def _utility(memory, item_id: str) -> float:
    return memory.show(item_id).experience.utility


def test_adopted_item_moves_by_alpha_r_minus_u_and_shown_item_does_not(open_memory) -> None:
    memory = open_memory()
    e1, e2, _ = seed_experiences(memory)
    shown, _, report = run_episode(memory, task="softmax", mode="atu", adopt=[e1])
    assert set(shown) == {e1, e2}  # the matmul experience shares no word or tag with the query
    assert report.reward == pytest.approx(R_WIN)
    assert report.credited == {e1: (0.0, pytest.approx(ALPHA * R_WIN))}
    assert _utility(memory, e2) == 0.0

    _, _, report = run_episode(memory, task="layer_norm", mode="atu", adopt=[e1], outcome=CRASH)
    before = ALPHA * R_WIN
    assert report.credited[e1] == (pytest.approx(before), pytest.approx(before + ALPHA * (-1.0 - before)))

    detail1, detail2 = memory.show(e1).experience, memory.show(e2).experience
    assert (detail1.retrieved, detail1.adopted, detail1.adopted_succeeded) == (2, 2, 1)
    assert (detail2.retrieved, detail2.adopted, detail2.utility) == (2, 0, 0.0)


def test_uniform_credits_every_retrieved_item_ignoring_declarations(open_memory) -> None:
    memory = open_memory()
    e1, e2, e3 = seed_experiences(memory)
    _, _, report = run_episode(memory, task="softmax", mode="uniform", adopt=[e1])
    assert report.credited == {e1: (0.0, pytest.approx(ALPHA * R_WIN)), e2: (0.0, pytest.approx(ALPHA * R_WIN))}
    assert _utility(memory, e2) == pytest.approx(ALPHA * R_WIN)
    assert _utility(memory, e3) == 0.0
    assert memory.show(e2).experience.adopted == 0  # credit, but no adoption recorded


def test_ids_never_shown_are_rejected_and_not_credited(open_memory) -> None:
    memory = open_memory()
    e1, _, e3 = seed_experiences(memory)
    episode = memory.start_episode(task="softmax", op_tags=["softmax"], model="test", mode="atu", seed=0)
    episode.retrieve("softmax rows", ["softmax"])
    result = episode.declare_adopted([e1, e3, "R1", "bogus", e1], attempt=1)
    assert result.accepted == [e1]
    assert result.rejected == [e3, "R1", "bogus"]
    report = episode.finish(WIN)
    assert set(report.credited) == {e1}
    assert report.rejected == [e3, "R1", "bogus"]
    assert _utility(memory, e3) == 0.0 and memory.show(e3).history == []


def test_mode_none_never_retrieves_credits_or_learns(open_memory) -> None:
    memory = open_memory()
    e1, _, _ = seed_experiences(memory)
    episode = memory.start_episode(task="softmax", op_tags=["softmax"], model="test", mode="none", seed=0)
    assert episode.retrieve("softmax rows", ["softmax"]) == []
    assert episode.rules == []
    assert episode.declare_adopted([e1], attempt=1).rejected == [e1]
    episode.add_experience(title="ignored", advice="mode none does not learn", tags=[], hints={})
    report = episode.finish(WIN)
    assert (report.credited, report.new_experiences) == ({}, [])
    assert memory.show(e1).experience.retrieved == 0
    assert memory.stats().episodes_by_mode["none"] == 1


def test_a_finished_episode_cannot_be_reused(open_memory) -> None:
    from sage.memory import EpisodeClosedError

    memory = open_memory()
    episode = memory.start_episode(task="softmax", op_tags=[], model="test", mode="atu", seed=0)
    episode.finish(Outcome(executed=True, correct=False))
    with pytest.raises(EpisodeClosedError):
        episode.finish(WIN)
