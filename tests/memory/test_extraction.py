"""Extraction: near-copies merge, distinct advice is inserted."""

from __future__ import annotations

from .helpers import WIN, seed_experiences


def test_near_copy_merges_and_distinct_advice_is_new(open_memory) -> None:
    memory = open_memory()
    e1, *_ = seed_experiences(memory)
    episode = memory.start_episode(task="log_softmax", op_tags=["softmax"], model="test", mode="atu", seed=0)
    # Same hints, nearly the same words: merged into e1, which gains the new tag.
    episode.add_experience(title="Double-buffer the softmax rows",
                           advice="Set BUFFER_NUM to 2 so the copy of row i+1 overlaps compute of row i.",
                           tags=["softmax", "log-softmax"], hints={"buffer_num": 2})
    # Same words, different hints: a different experience.
    episode.add_experience(title="Double-buffer the softmax rows",
                           advice="Set BUFFER_NUM to 2 so the copy of row i+1 overlaps the compute of row i.",
                           tags=["softmax"], hints={"buffer_num": 3})
    report = episode.finish(WIN)
    assert report.merged_experiences == [e1]
    assert len(report.new_experiences) == 1
    merged = memory.show(e1).experience
    assert merged.tags == ["softmax", "reduction", "double-buffering", "log-softmax"]
    assert merged.utility == 0.0 and merged.origin_operator == "seed"
    new = memory.show(report.new_experiences[0]).experience
    assert new.origin_operator == "log_softmax" and new.hints == {"buffer_num": 3}
