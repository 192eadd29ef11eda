"""An episode finished twice under one key is stored once (a resumed bench run never learns a task twice)."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from sage.memory import Memory, Outcome

from .helpers import SOFTMAX_TAGS, WIN, seed_experiences

WIN_REWARD = 0.7615941559557649                                   # tanh(log2 2) = tanh(1)


def _keyed_episode(memory: Memory, key: str | None, *, adopt: str, speedup: float = 2.0):
    episode = memory.start_episode(task="softmax", op_tags=SOFTMAX_TAGS, model="m", mode="atu", seed=0, key=key)
    episode.retrieve("softmax rows", SOFTMAX_TAGS)
    episode.record_attempt(source="k1", status="incorrect", error_message="3 of 64 elements off")
    episode.record_attempt(source="k2", status="correct", cycles=900, speedup=speedup, roofline_fraction=0.4)
    episode.declare_adopted([adopt], attempt=2)
    return episode.finish(Outcome(executed=True, correct=True, speedup=speedup, iterations=2))


def test_a_second_finish_under_the_same_key_writes_nothing(open_memory) -> None:
    memory = open_memory()
    e1 = seed_experiences(memory)[0]
    first = _keyed_episode(memory, "run1:0:softmax", adopt=e1)
    utility = memory.show(e1).experience.utility
    assert utility == pytest.approx(0.3 * WIN_REWARD)            # one ATU step from 0: alpha * r
    again = _keyed_episode(memory, "run1:0:softmax", adopt=e1, speedup=4.0)
    assert again.already_finished and not first.already_finished
    assert (again.episode_id, again.reward) == (first.episode_id, first.reward) and again.credited == {}
    assert memory.show(e1).experience.utility == utility          # not credited twice
    assert memory.stats().episodes == 2                           # the seeding episode and this one
    other = _keyed_episode(memory, "run1:1:softmax", adopt=e1)    # another epoch: a new episode
    assert other.episode_id == first.episode_id + 1 and not other.already_finished


def test_the_stored_episode_is_read_back_by_key(open_memory) -> None:
    memory = open_memory()
    e1 = seed_experiences(memory)[0]
    report = _keyed_episode(memory, "run1:0:softmax", adopt=e1)
    record = memory.finished_episode("run1:0:softmax")
    assert record.episode_id == report.episode_id and record.key == "run1:0:softmax"
    assert (record.correct, record.speedup, record.iterations, record.adopted) == (True, 2.0, 2, [e1])
    assert [(a.number, a.source, a.status, a.speedup) for a in record.attempts] == [
        (1, "k1", "incorrect", None), (2, "k2", "correct", 2.0)]
    assert record.attempts[0].error_message == "3 of 64 elements off"
    assert memory.finished_episode("run1:1:softmax") is None


def test_a_memory_opened_for_one_job_keys_its_episodes(memory_url) -> None:
    with Memory(memory_url, episode_key="job-7") as memory:
        episode = memory.start_episode(task="t", op_tags=[], model="m", mode="none", seed=0)
        assert episode.key == "job-7"
        episode.finish(WIN)
        assert memory.finished_episode("job-7") is not None
    with pytest.raises(ValueError, match="1 to 300 characters"):
        Memory(memory_url).start_episode(task="t", op_tags=[], model="m", mode="none", seed=0, key="k" * 301)


def test_the_key_is_unique_in_the_database(open_memory) -> None:
    memory = open_memory()
    _keyed_episode(memory, "dup", adopt=seed_experiences(memory)[0])
    with pytest.raises(IntegrityError), memory.engine.begin() as conn:
        conn.execute(text("UPDATE episode SET episode_key = 'dup' WHERE episode_key IS NULL"))
    with memory.engine.begin() as conn:                            # unkeyed episodes are many
        conn.execute(text("INSERT INTO episode (task, op_tags, model, mode, seed, executed, correct, reward, "
                          "iterations, tokens, time_s, started_at, finished_at) SELECT task, op_tags, model, mode, "
                          "seed, executed, correct, reward, iterations, tokens, time_s, started_at, finished_at "
                          "FROM episode WHERE episode_key IS NULL"))

